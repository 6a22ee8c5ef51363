"""``python -m runtime.cli``: the ``vtaforge`` command line. The package is imported as
``runtime.cli`` (only this file runs as ``__main__``), so the plugins' :class:`Command` is the
one :func:`runtime.cli.commands` checks them against."""

import sys

from runtime.cli import main

__all__: list[str] = []

sys.exit(main())
