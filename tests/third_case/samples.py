"""The toy case's sample maker: ``tables`` .npy files of 16 rows x 4 floats and an index CSV."""

from pathlib import Path

import numpy as np


def make(out, *, seed: int = 0, force: bool = False, tables: int = 4) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    lines = ["table,row,target"]
    for t in range(tables):
        np.save(out / f"t{t}.npy", rng.standard_normal((16, 4)).astype(np.float32))
        lines += [f"t{t}.npy,{r},{(t * 16 + r) % 3}" for r in range(16)]
    (out / "index.csv").write_text("\n".join(lines) + "\n")
    return out / "index.csv"
