"""``python -m stichtag.cli``: the same as the ``stichtag`` console script."""

from stichtag.cli import main

raise SystemExit(main())
