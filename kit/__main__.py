"""``python -m kit``: the command line (``kit.cli``)."""

from kit.cli import main

__all__: list[str] = []

raise SystemExit(main())
