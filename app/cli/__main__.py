"""``python -m app.cli``: the same as the ``stichtag`` console script."""

from app.cli import main

raise SystemExit(main())
