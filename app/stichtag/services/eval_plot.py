"""The plot of an evaluation's threshold sweep, as a hand-made SVG (no plotting dependency).

Separate from the metrics (:mod:`stichtag.services.eval_metrics`) because it only draws the
table ``sweep`` returns and computes no number of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def write_svg(table: Sequence[dict[str, Any]], path: Path, *,
              title: str = "Delivery vs wrong-answer rate") -> Path:
    """Plot delivery rate (x) against wrong-answer rate (y), one polyline per τ, points
    ordered by θ_rel. Hand-made SVG: no plotting dependency."""
    w, h, left, right, top, bottom = 560, 420, 60, 150, 40, 50
    pw, ph = w - left - right, h - top - bottom

    def x(v: float) -> float:
        return round(left + v * pw, 2)

    def y(v: float) -> float:
        return round(top + (1 - v) * ph, 2)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">',
             f'<title>{escape(title)}</title>',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>',
             f'<text x="{left + pw / 2}" y="{h - 12}" text-anchor="middle">delivery rate '
             f'(delivered / items)</text>',
             f'<text x="16" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 16 '
             f'{top + ph / 2})">wrong-answer rate (wrong / delivered)</text>',
             f'<text x="{left}" y="{top - 14}">{escape(title)}</text>']
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts += [f'<text x="{x(t)}" y="{top + ph + 16}" text-anchor="middle">{t:g}</text>',
                  f'<text x="{left - 6}" y="{y(t) + 4}" text-anchor="end">{t:g}</text>',
                  f'<line x1="{x(t)}" y1="{top}" x2="{x(t)}" y2="{top + ph}" stroke="#ddd"/>',
                  f'<line x1="{left}" y1="{y(t)}" x2="{left + pw}" y2="{y(t)}" stroke="#ddd"/>']
    taus = sorted({row["tau"] for row in table})
    for i, tau in enumerate(taus):
        colour = _COLOURS[i % len(_COLOURS)]
        rows = sorted((r for r in table if r["tau"] == tau), key=lambda r: r["theta_rel"])
        points = " ".join(f'{x(r["delivery_rate"])},{y(r["wrong_answer_rate"])}' for r in rows)
        parts.append(f'<polyline data-tau="{tau:g}" points="{points}" fill="none" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.extend(f'<circle cx="{x(r["delivery_rate"])}" cy="{y(r["wrong_answer_rate"])}" '
                     f'r="2.5" fill="{colour}"><title>θ_rel {r["theta_rel"]:g}, τ {tau:g}: '
                     f'delivery {r["delivery_rate"]:.2f}, wrong {r["wrong_answer_rate"]:.2f}'
                     f'</title></circle>' for r in rows)
        ly = top + 14 + 18 * i
        parts.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 32}" y2="{ly}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{left + pw + 38}" y="{ly + 4}">τ = {tau:g}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path
