"""The pipeline doctor: point the kit at any input pipeline (and model) and get measured findings.

``diagnose(source, model=None, *, max_seconds=20, trace_dir=None)`` measures, in one run:

* the loader alone: examples/s and batch latency (``kit.timing.measure``), the CPU cores it
  kept busy, and the bytes it read (``/proc/self/io``: ``rchar``, ``read_bytes``) against
  the bytes of the examples it delivered;
* with a compiled Keras model (trained as a copy; the user's weights are left alone):
  the compute ceiling, the model trained on one real batch replayed from memory so the
  step never waits, interleaved with the real fit timed by ``kit.timing.StepTimer``
  (the share of each step spent waiting for input);
* the structure of a ``tf.data`` pipeline, read from its serialized graph
  (``tf.data.experimental.to_variant`` and ``tf.raw_ops.DatasetToGraphV2``);
* a ``keras.utils.PyDataset``'s ``workers``; a model's frozen prefix (layers that
  never train in front of layers that do), timed against the rest trained alone.

It returns a ``Diagnosis``: a ``verdict`` with the measured rates and ``findings``, a
DataFrame ranked by expected gain (the symptom, ``input_bound`` or ``compute_bound``, first),
one row per finding with ``code``, ``evidence``
(the measured number that shows it), ``fix`` (the change, with the kit call or
notebook that teaches it), ``expected_gain`` (a factor) and ``basis`` (how that
factor was obtained). It shows as a table in a notebook and as text on a terminal.

Finding codes (the fixed vocabulary, ``CODES``):

============================  ==========================================================
``input_bound``               the training step waits for input (the symptom)
``compute_bound``             the loader keeps up; the model's step is the limit
``python_in_pipeline``        Python in the tf.data graph (from_generator, py_function,
                              numpy_function): one core at a time under the GIL
``serial_map``                ``Dataset.map`` without ``num_parallel_calls``
``map_before_batch``          a per-example map before ``batch`` (not vectorised)
``serial_interleave``         ``Dataset.interleave`` without ``num_parallel_calls``
``no_prefetch``               the pipeline does not end with ``prefetch``
``read_amplification``        far more bytes read than the examples hold (a whole file
                              read for each example)
``small_shuffle_buffer``      an example shuffle buffer much smaller than the dataset
                              (an order-quality finding, not a speed one)
``pydataset_single_worker``   a PyDataset with one worker
``frozen_backbone_recomputed`` frozen layers recomputed every step (a feature cache runs
                              them once)
============================  ==========================================================

On the command line: ``python -m kit doctor MODULE:FUNCTION [--model MODULE:FUNCTION]``
or ``python -m kit doctor --index CSV --variant NAME``.

The package: ``sources`` (what counts as a batch source), ``measure`` (the loader alone, the
fits, the frozen head, the trace, ``compare_fits``), ``graph`` (a tf.data pipeline's structure
and the rules on it), ``rules`` (the rules on measured numbers), ``findings`` (the codes and
``Finding``), ``report`` (``Diagnosis``), ``cli`` (the command); ``diagnose`` ties them together.
"""

from __future__ import annotations

from typing import Any

from kit.doctor import rules
from kit.doctor.cli import load_attr, register
from kit.doctor.findings import CODES, SYMPTOMS, Finding, Measured, table
from kit.doctor.graph import (
    SHUFFLE_SHARE,
    labels,
    pipeline_graph,
    pipeline_ops,
    structure_findings,
)
from kit.doctor.measure import (
    compare_fits,
    compiled_copy,
    cores,
    frozen_prefix,
    head_rate,
    load_average,
    measure_fits,
    measure_loader,
    record_trace,
)
from kit.doctor.report import Diagnosis
from kit.doctor.rules import (
    AMPLIFICATION_FACTOR,
    AMPLIFICATION_MIN_BYTES,
    COMPUTE_BOUND_SHARE,
    INPUT_BOUND_SHARE,
)
from kit.doctor.sources import check_source, first_batch, is_dataset, nbytes


def diagnose(source, model=None, *, max_seconds: float = 20.0, trace_dir=None,
             name: str = "source") -> Diagnosis:
    """Measures a batch source (and a model training on it) and ranks what to fix.

    Args:
        source: a ``tf.data.Dataset``, a ``keras.utils.PyDataset`` or a function
            returning a fresh generator of batches (read several times).
        model: a compiled Keras model (Functional or Sequential) taking these batches,
            or None to diagnose the loader alone. The doctor trains a copy.
        max_seconds: the measuring budget, split between the loader alone, the compute
            ceiling, the real fit and the frozen-prefix timing (model building and the
            first compile come on top).
        trace_dir: record a TensorFlow profiler trace of a few training steps there
            (open with TensorBoard's profile plugin, ``pip install 'kit[profile]'``).
        name: how error messages name the source.

    Returns:
        A ``Diagnosis``.

    Raises:
        ValueError: the source is not a re-readable batch source, or the model does not
            take its batches (the message names which).
    """
    if not (isinstance(max_seconds, (int, float)) and max_seconds > 0):
        raise ValueError(f"max_seconds must be positive, got {max_seconds!r}")
    check_source(source, name)
    batch, batch_size = first_batch(source, name)
    example_bytes = nbytes(batch) / batch_size
    n_cores, load = cores(), load_average()  # the load before this call's own work (compiles) adds to it
    graph = pipeline_graph(source) if is_dataset(source) else None
    copy = compiled_copy(model, batch, name) if model is not None else None

    # The budget: a quarter to the loader alone with a model, 60% to the fits, 15% to the frozen head.
    loader = measure_loader(source, max_seconds=max_seconds if copy is None else 0.25 * max_seconds)
    rates: dict[str, Any] = {"batch_size": batch_size, "example_bytes": example_bytes, **loader}
    free, parallel_gain, parallel_basis = rules.parallel(n_cores, loader["cores_busy"], load)
    rates["cores_available"] = free
    verdict, summary, fits = "loader only", rules.loader_summary(loader), {}
    found: list[Finding] = []
    if copy is not None:
        fits = measure_fits(copy, source, batch, max_seconds=0.6 * max_seconds)
        rates.update(fits)
        verdict, summary, found = rules.verdict(fits, loader["loader_examples_per_s"])
        prefix, rest = frozen_prefix(copy)
        if prefix:
            rate, why = head_rate(copy, prefix, rest, batch, max_seconds=0.15 * max_seconds)
            found.append(rules.frozen_backbone(prefix, fits, head_rate=rate, why=why))

    measured = Measured(batch_size=batch_size, loader_rate=loader["loader_examples_per_s"], cores=n_cores,
                        cores_busy=loader["cores_busy"], parallel_gain=parallel_gain,
                        parallel_basis=parallel_basis, fit_rate=fits.get("fit_examples_per_s"),
                        ceiling_rate=fits.get("ceiling_examples_per_s"), cap=rules.cap(fits))
    amplification, more = rules.read_amplification(loader, example_bytes, capped=measured.cap)
    if amplification is not None:
        rates["read_amplification"] = amplification
    found += more + rules.pydataset_workers(source, measured)
    if graph is not None:
        more, extra = structure_findings(graph, source, measured)
        found += more
        rates.update(extra)

    if trace_dir is not None:
        trace_dir = str(record_trace(copy, source, trace_dir))
    return Diagnosis(verdict=verdict, summary=summary, rates=rates, findings=table(found),
                     pipeline=labels(graph) if graph is not None else [], trace_dir=trace_dir)


__all__ = [
    "AMPLIFICATION_FACTOR",
    "AMPLIFICATION_MIN_BYTES",
    "CODES",
    "COMPUTE_BOUND_SHARE",
    "INPUT_BOUND_SHARE",
    "SHUFFLE_SHARE",
    "SYMPTOMS",
    "Diagnosis",
    "Finding",
    "check_source",
    "compare_fits",
    "diagnose",
    "load_attr",
    "measure_loader",
    "pipeline_graph",
    "pipeline_ops",
    "record_trace",
    "register",
]
