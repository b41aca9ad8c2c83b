"""``python -m kit``: the command line (``kit.cli``).

TensorFlow prints some lines whatever ``TF_CPP_MIN_LOG_LEVEL`` says (the absl banner,
oneDNN's and the CUDA probes' lines): they are dropped from the terminal
(``kit.report.quiet_stderr``); every other line on stderr, errors included, shows.
"""

from kit.cli import main
from kit.report.noise import quiet_stderr

__all__: list[str] = []

with quiet_stderr():
    code = main()
raise SystemExit(code)
