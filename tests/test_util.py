"""kit.util: the small helpers, and the version floors against pyproject.toml."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from kit import util

ROOT = Path(__file__).resolve().parent.parent


def test_util_helpers(tmp_path, capsys):
    assert util.check_int("n", np.int64(3)) == 3
    with pytest.raises(ValueError, match=r"warmup must be a non-negative integer, got -1"):
        util.check_int("warmup", -1, 0)
    with pytest.raises(ValueError, match="n must be a positive integer, got 1.5"):
        util.check_int("n", 1.5)
    assert [util.format_duration(s) for s in (3.21, 600, 7200 * 3, float("inf"))] == ["3.2 s", "10.0 min",
                                                                                         "6.0 h", "inf"]
    assert util.size_arg("384x512") == (384, 512) and util.size_arg("64") == 64
    util.write_json(tmp_path / "sub" / "r.json", {"a": np.float32(1.5)})
    assert (tmp_path / "sub" / "r.json").read_text() == '{\n "a": 1.5\n}\n'
    util.write_json("-", [1])
    assert capsys.readouterr().out == "[\n 1\n]\n"



def test_version_floors_match_pyproject():
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {m[1]: m[2] for d in deps if (m := re.match(r"([a-z_-]+)>=([\d.]+)", d))}
    assert {k: floors[k] for k in util.VERSION_FLOORS} == util.VERSION_FLOORS
