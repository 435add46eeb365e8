"""The auditor console: a single static page (plain ES modules, no build step).

The files live in ``static/`` beside this module; ``stichtag.api.console`` serves them.
"""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
"""Directory of ``index.html``, ``console.js`` and ``console.css``."""
