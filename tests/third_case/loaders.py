"""The toy case's two loader variants, and its declaration in the kit's case registry."""

import numpy as np
from third_case import samples  # tests/ is on the path: KIT_CASES=third_case.loaders
from third_case.index import RowIndex

from kit.cases.registry import Case, SampleOption, Scale, register

VARIANTS = {"python": "one np.load per row, in a Python generator", "in_memory": "all rows in RAM, tf.data"}


def make_loader(name: str, index: RowIndex, *, batch_size: int, seed: int = 0, **options):
    import tensorflow as tf  # here, not at import: `python -m kit samples` imports this module too

    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    width = int(np.load(index.tables[0], allow_pickle=False).shape[1])
    if name == "in_memory":
        ds = tf.data.Dataset.from_tensor_slices((index.load(), index.targets))
        return ds.shuffle(len(index), seed=seed, reshuffle_each_iteration=True).batch(batch_size)

    def rows():
        for i in np.random.default_rng(seed).permutation(len(index)):
            yield np.load(index.tables[i], allow_pickle=False)[index.rows[i]], index.targets[i]

    spec = (tf.TensorSpec((width,), tf.float32), tf.TensorSpec((), tf.int64))
    return tf.data.Dataset.from_generator(rows, output_signature=spec).batch(batch_size)


CASE = register(Case(
    name="tabular", unit="rows", description="a toy third case: rows of float tables in .npy files",
    loaders=__name__, index_columns=frozenset({"table", "row", "target"}), open_index=RowIndex.from_csv,
    make_loader=lambda variant, csv, index, *, batch_size, **kw: make_loader(variant, index,
                                                                               batch_size=batch_size, **kw),
    make_samples=samples.make, sample_options=(SampleOption("tables", int, "number of .npy tables", default=4),),
    embedded=None, default_variant="python", default_batch=8, scale=Scale(examples=10_000, replicas=1, global_batch=8),
    model_for=lambda variant: "mlp", store_kinds=("tabular",)))

