"""The doctor's findings: the typed ``Finding``, the ranking, the cap, and the structure rules reading
only what they are given (no measuring numbers written back into the caller's rates)."""

import dataclasses
import math

import numpy as np
import pytest

from kit import doctor
from kit.doctor.findings import Cap, Finding, Measured, table
from kit.doctor.graph import pipeline_graph, structure_findings

B = 32
X = np.zeros((256, 16), np.float32)


def test_finding_takes_its_meaning_and_fix_from_the_codes():
    f = Finding("serial_map", "1 MapDataset", 3, "cores")
    assert (f.meaning, f.fix) == doctor.CODES["serial_map"]
    assert f.expected_gain == 3.0 and isinstance(f.expected_gain, float)
    assert math.isnan(Finding("serial_map", "", None, "").expected_gain)
    assert f.row() == {"code": "serial_map", "evidence": "1 MapDataset", "fix": doctor.CODES["serial_map"][1],
                       "expected_gain": 3.0, "basis": "cores"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.code = "no_prefetch"
    with pytest.raises(ValueError, match="code must be one of .* got 'slow'"):
        Finding("slow", "", 1.0, "")


def test_table_ranks_the_symptom_first_then_by_gain_not_measured_last():
    df = table([Finding("no_prefetch", "", 2.0, ""), Finding("frozen_backbone_recomputed", "", math.nan, ""),
                Finding("serial_map", "", 2.0, ""), Finding("read_amplification", "", 9.0, ""),
                Finding("input_bound", "", 1.5, "")])
    assert list(df.columns) == ["code", "evidence", "fix", "expected_gain", "basis"]
    # ties (2.0) in the order of CODES
    assert list(df["code"]) == ["input_bound", "read_amplification", "serial_map", "no_prefetch",
                                "frozen_backbone_recomputed"]
    assert list(table([]).columns) == list(df.columns) and table([]).empty


def test_cap():
    assert Cap()(50.0) == 50.0 and Cap().explain("x") == "x"
    cap = Cap(4.0, "capped at the compute ceiling, 4.0x the real fit")
    assert cap(50.0) == 4.0 and cap(2.0) == 2.0
    assert cap.explain("x") == "x; capped at the compute ceiling, 4.0x the real fit"


def _measured(**kw):
    return Measured(**{"batch_size": B, "loader_rate": 1000.0, "cores": 4, "cores_busy": 1.0,
                       "parallel_gain": 3.0, "parallel_basis": "3 cores free", **kw})


def test_structure_rules_return_their_numbers_instead_of_writing_them():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(X).map(lambda x: x + 1).batch(B)  # serial, per example, no prefetch
    graph = pipeline_graph(ds)
    found, rates = structure_findings(graph, ds, _measured(cap=Cap(2.0, "cap")))
    assert [f.code for f in found] == ["serial_map", "map_before_batch", "no_prefetch"]
    assert set(rates) == {"map_call_overhead_us"} and rates["map_call_overhead_us"] >= 0
    serial = found[0]
    assert serial.expected_gain == 2.0 and serial.basis == "3 cores free; cap"  # capped, and says so
    assert found[2].expected_gain == 1.0 and "no model given" in found[2].basis

    fixed = ds.prefetch(1)
    found, rates = structure_findings(pipeline_graph(fixed), fixed, _measured(fit_rate=100.0, ceiling_rate=400.0))
    assert "no_prefetch" not in [f.code for f in found]

    batched = tf.data.Dataset.from_tensor_slices(X).batch(B).map(lambda x: x + 1)
    found, rates = structure_findings(pipeline_graph(batched), batched, _measured(fit_rate=100.0, ceiling_rate=400.0))
    assert [f.code for f in found] == ["serial_map", "no_prefetch"] and rates == {}
    assert found[1].expected_gain == pytest.approx(4.0)  # min(loader, ceiling) / fit: 400 / 100
