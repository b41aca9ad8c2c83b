"""kit.spectrogram.ladder: every rung delivers every frame once with its label, one change per rung."""

import ast

import numpy as np
import pandas as pd
import pytest

from kit.spectrogram import ladder


@pytest.fixture(scope="module")
def rungs(spec_index, tmp_path_factory):
    return ladder.ladder(spec_index, batch_size=10, seed=3, workdir=tmp_path_factory.mktemp("ladder"))


def test_the_rungs_come_in_their_order(rungs):
    assert tuple(rungs) == ladder.RUNGS == tuple(ladder.CHANGES)
    assert ladder.RUNGS[0] == "map" and ladder.RUNGS[-1] == "+in the graph"


@pytest.mark.parametrize("rung", ladder.RUNGS)
def test_every_rung_yields_every_frame_once_with_its_label(rung, rungs, spec_index):
    reference = {spec_index.read(i).tobytes(): i for i in range(len(spec_index))}
    orders = []
    for _ in range(2):
        xs, ys = zip(*((x.numpy(), y.numpy()) for x, y in rungs[rung]))
        assert [len(y) for y in ys] == [10] * 9 + [6]  # 96 frames: last batch partial
        x = np.concatenate(xs)
        assert x.dtype == np.float32 and x.shape[1:] == spec_index.frame_shape + (1,)
        rows = [reference[f[..., 0].tobytes()] for f in x]
        assert sorted(rows) == list(range(len(spec_index)))  # each frame exactly once
        assert np.array_equal(np.concatenate(ys), spec_index.labels[rows])  # with its label
        orders.append(rows)
    assert orders[0] != orders[1]  # reshuffled every epoch


def test_a_rung_turns_off_what_tensorflow_would_do_for_it_until_it_makes_that_change(rungs):
    """Since TF 2.x's defaults (inject_prefetch, map_parallelization) the lower rungs would get the
    prefetch and the parallel map without asking: they are off below the rungs that add them."""
    for rung, (prefetch, parallel) in {"map": (False, False), "+memory maps": (False, False), "+vectorise": (False, False),
                                       "+prefetch": (True, False), "+parallel map": (True, True)}.items():
        o = rungs[rung].options().experimental_optimization
        assert (o.inject_prefetch, o.map_parallelization) == (prefetch, parallel), rung


@pytest.mark.parametrize("rung", ladder.RUNGS)
def test_each_rung_shows_its_own_code(rung):
    code = ladder.source(rung)
    ast.parse(code)  # the kit's own source, whole functions
    assert f"def rung_{rung.strip('+').replace(' ', '_')}(" in code
    assert "changed" in code or rung == "map"  # the line that differs from the rung below says so


def _table(rates):
    """A compare table of the rungs at ``rates`` (examples/s), each round within 2% of its rate."""
    return pd.DataFrame([{"variant": r, "examples_per_s": v, "round_min": v * 0.98, "round_max": v * 1.02}
                         for r, v in zip(ladder.RUNGS, rates)])


def test_the_reading_beside_the_ladder_follows_its_numbers():
    """Notebook 02 once said every rung helps beside a +prefetch and a +parallel map slower than map."""
    slow_middle = ladder.steps(_table([100, 2000, 9000, 6750, 5400, 40000]))
    assert list(slow_middle["verdict"]) == ["gain", "gain", "loss", "loss", "gain"]
    said = ladder.reading(slow_middle, cpus=2)
    assert said[2].startswith("+prefetch") and " lost 0.75x" in said[2] and "nothing to overlap" in said[2]
    assert " lost " in said[3] and "GIL" in said[3] and "2 usable CPUs" in said[3]
    assert said[-1] == "The biggest rung in this run: +memory maps, 20.0x the rung below it."
    flat = ladder.steps(_table([100, 101, 102, 150, 300, 600]))
    assert list(flat["verdict"]) == ["unclear", "unclear", "gain", "gain", "gain"]
    assert "changed nothing clear" in ladder.reading(flat, cpus=2)[0]
    assert "why here" not in ladder.reading(flat, cpus=2)[2]  # a rung that gained gets no excuse
    with_generator = ladder.steps(pd.concat([_table([300]).assign(variant="generator"), _table(range(100, 700, 100))]))
    assert with_generator["rung"].iloc[0] == "map" and round(with_generator["x_below"].iloc[0], 2) == 0.33
