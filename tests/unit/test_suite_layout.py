"""The suite's own bookkeeping points at files that exist (docs/testing.md)."""

from __future__ import annotations

from tests.conftest import REPO, SLOW_MODULES


def test_every_slow_module_exists() -> None:
    # A renamed module would otherwise drop silently back into `make test-quick`.
    assert sorted(m for m in SLOW_MODULES if not (REPO / m).is_file()) == []


def test_the_quick_loop_leaves_out_the_slow_modules_only() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    quick = next(line for line in makefile.splitlines()
                 if line.startswith("\t") and '-m "not slow"' in line)
    assert "tests/" not in quick  # every other module runs, unit and integration
