"""kit.spectrogram.layouts: the generator's epoch against frames per file, and the layout reaching 40 hours."""

import numpy as np
import pandas as pd
import pytest

from kit import plots
from kit.spectrogram import layouts
from kit.spectrogram.case import USER_REPORT


def _rows(per_frame_s, frames_per_file, frame_bytes=24_576):
    return pd.DataFrame([{"frames_per_file": n, "file_bytes": n * frame_bytes + 128, "frame_bytes": frame_bytes,
                          "s_per_frame": s, "examples_per_s": 1 / s, "amplification": float(n)}
                         for n, s in zip(frames_per_file, per_frame_s)])


def test_the_fit_recovers_a_line_and_names_the_layout_reaching_the_users_epoch():
    a, b = 3e-4, 2e-10  # seconds per frame: fixed cost, and per byte of the file read
    n = [10, 100, 1000, 4000]
    table = _rows([a + b * (k * 24_576 + 128) for k in n], n)
    f = layouts.fit(table)
    assert f.a == pytest.approx(a, rel=1e-3) and f.b == pytest.approx(b, rel=1e-3)
    reached = layouts.reaching(f)
    want = (USER_REPORT["epoch_s"] / USER_REPORT["frames"] - a) / (b * 24_576)
    assert reached == pytest.approx(want, rel=1e-3)
    assert f.epoch_s(reached) == pytest.approx(USER_REPORT["epoch_s"], rel=1e-3)
    assert f.measured == (10, 100, 1000, 4000) and "4 measured layouts" in f.basis
    epochs = layouts.epoch_table(table, f)
    assert np.allclose(epochs["epoch_s"], 1_000_000 * table["s_per_frame"])
    fig = plots.epoch_vs_layout(epochs, f, target_s=USER_REPORT["epoch_s"], reached=reached)
    assert any(t.name.startswith("reached at") for t in fig.data)
    assert any("the user's epoch" in t.name for t in fig.data)


def test_no_layout_is_named_where_the_line_does_not_rise_or_already_starts_above():
    flat = layouts.fit(_rows([1e-3, 0.9e-3, 0.8e-3], [10, 100, 1000]))
    assert layouts.reaching(flat) is None  # the cost does not grow with the file: noise, not a layout
    slow = layouts.fit(_rows([0.2, 0.3], [10, 100]))
    assert layouts.reaching(slow) is None  # already slower per frame than the user's epoch allows
    with pytest.raises(ValueError, match="two layouts at least"):
        layouts.fit(_rows([1e-3], [10]))


@pytest.mark.parametrize("frames_per_file", [3, 40])
def test_amplification_is_counted_as_the_generator_reads(frames_per_file, tmp_path):
    """Bytes read per frame over the frame's bytes: the file's frames, plus the header's read (a few kB)."""
    index = layouts.sample(frames_per_file, 2, workdir=tmp_path)
    got = layouts.amplification(index)
    if got is None:
        pytest.skip("no /proc/self/io on this system")
    assert frames_per_file <= got <= frames_per_file + 0.25


def test_measure_reports_the_layout_and_its_rate(tmp_path):
    index = layouts.sample(5, 2, workdir=tmp_path)
    r = layouts.measure(index, batch_size=2, max_seconds=0.2, rounds=2)
    assert (r["frames_per_file"], r["files"], r["frame_bytes"]) == (5, 2, 96 * 64 * 4)
    assert r["examples_per_s"] > 0 and r["s_per_frame"] == pytest.approx(1 / r["examples_per_s"])
    assert r["round_min"] <= r["examples_per_s"] <= r["round_max"] * 1.0001
