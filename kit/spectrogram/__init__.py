"""Spectrogram case (seed 000): a million one-second frames in many ``.npy`` files.

Public face:
    FrameIndex: the validated index (``FrameIndex.from_csv``).
    make_loader, VARIANTS: every loader variant, built by one function; pipeline_source(name): the
        code a taught variant runs (tfrecord, tfrecord_guide).
    convert: frames into a memmap, TFRecord or (the peers extra) ArrayRecord store (atomic,
        resumable, verified).
    order (module): the order a loader delivers, read back from the frames.
    ladder (module): the tf.data guide's ladder, one change per rung (notebook 02).
    layouts (module): the generator's epoch against frames per file, and the layout that reaches
        the user's 40 hours (notebook 01).
    grain (module): the Grain peer (``grain.available()`` says why not where the extra is missing).
"""

from kit.spectrogram.convert import convert
from kit.spectrogram.index import FrameIndex
from kit.spectrogram.variants import GRAPH_ONLY, VARIANTS, make_loader, pipeline_source

__all__ = ["FrameIndex", "make_loader", "VARIANTS", "GRAPH_ONLY", "convert", "pipeline_source", "order", "ladder", "layouts", "grain"]
