"""``python -m kit``: the command line (``kit.cli``).

TensorFlow prints some lines whatever ``TF_CPP_MIN_LOG_LEVEL`` says (the absl banner,
oneDNN's and the CUDA probes' lines): they are dropped from the terminal
(``kit.report.noise.quiet_stderr``); every other line on stderr, errors included, shows.
"""

import os
import sys
import threading

from kit.cli import main
from kit.report.noise import quiet_stderr

__all__: list[str] = []

with quiet_stderr():
    code = main()
if any(t.name == "kit-doctor" and t.is_alive() for t in threading.enumerate()):
    # A diagnosis stuck on a batch that never arrives (python -m kit doctor said so): its thread
    # cannot be stopped, and TensorFlow would wait for it at exit.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
raise SystemExit(code)
