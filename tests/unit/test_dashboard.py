"""The shipped Grafana dashboard only queries metrics the server exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from stichtag.metrics import Metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "ops" / "grafana-dashboard.json"


def test_dashboard_queries_exported_metrics() -> None:
    exported = Metrics().render().decode()
    names = set(re.findall(r"^# TYPE (\S+)", exported, re.MULTILINE))
    series = {n + suffix for n in names for suffix in ("", "_total", "_bucket", "_count", "_sum")}
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    used = {m for p in panels for t in p["targets"] for m in re.findall(r"stichtag_\w+", t["expr"])}
    assert used and used <= series, used - series
    assert len(panels) >= 8
