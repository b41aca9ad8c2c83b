"""The team's instruments: measurements behind the kit's choices, not part of the product.

Not installed with ``kit`` and never imported by it; each instrument imports ``kit`` and runs from
the repository root as ``python -m lab.NAME --help`` (README.md lists them).
"""

import os

# Before any instrument imports TensorFlow: its C++ INFO and WARNING lines off, as python -m kit
# sets them (a memmap loader logs a line per batch at WARNING), unless the caller set the level.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
