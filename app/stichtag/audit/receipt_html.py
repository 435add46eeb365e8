"""A printable HTML rendering of an answer receipt, for a file or a working paper
(docs/audit.md, "Receipts"). It shows what the JSON receipt holds — question, as-of pair,
outcome, every sentence with its quotes and their places, the log position and the
checkpoint — and says how to check it; it proves nothing by itself: the JSON receipt and
``stichtag receipt verify`` do. Every value is escaped; the page loads nothing."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

_STYLE = """
body { font: 11pt/1.45 Georgia, serif; max-width: 48em; margin: 2em auto; color: #111; }
h1 { font-size: 15pt; } h2 { font-size: 12pt; margin-top: 1.6em; }
table { border-collapse: collapse; width: 100%; } td, th { text-align: left;
  vertical-align: top; padding: .2em .5em; border-bottom: 1px solid #ccc; }
blockquote { margin: .3em 0 .8em 1.5em; padding-left: .6em; border-left: 3px solid #999; }
code, pre { font: 9pt/1.3 monospace; word-break: break-all; white-space: pre-wrap; }
.meta { color: #444; font-size: 9.5pt; }
@media print { body { margin: 0; } }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def render_receipt(receipt: Mapping[str, Any]) -> str:
    """The receipt as one self-contained HTML page."""
    answer = receipt.get("answer") or {}
    log = receipt.get("log") or {}
    as_of = answer.get("as_of") or {}
    rows = [("Run", receipt.get("run_id")), ("Tenant", receipt.get("tenant")),
            ("Valid at (Stichtag)", as_of.get("valid_at")),
            ("Known at", as_of.get("known_at")),
            ("Outcome", str(answer.get("status")) + (f" ({answer.get('reason')})"
                                                     if answer.get("reason") else ""))]
    parts = ["<!doctype html>", '<html lang="de"><head><meta charset="utf-8">',
             f"<title>Receipt {_e(receipt.get('run_id'))}</title>",
             f"<style>{_STYLE}</style></head><body>",
             "<h1>Answer receipt</h1>",
             f"<p><strong>Question:</strong> {_e(answer.get('question'))}</p>",
             "<table>" + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>"
                                 for k, v in rows) + "</table>",
             "<h2>Answer</h2>"]
    sentences = answer.get("sentences") or []
    if not sentences:
        parts.append("<p>No sentences: the system abstained.</p>")
    for i, s in enumerate(sentences, 1):
        parts.append(f"<p>{i}. {_e(s.get('text'))}</p>")
        for c in s.get("citations") or []:
            parts.append(
                f"<blockquote>{_e(c.get('quote'))}<br><span class=\"meta\">"
                f"{_e(c.get('document'))}, version <code>{_e(c.get('version_id'))}</code>, "
                f"characters {_e(c.get('start'))}–{_e(c.get('end'))}</span></blockquote>")
    parts += [
        "<h2>Run log</h2>",
        "<table>"
        f"<tr><th>Leaf</th><td>{_e(log.get('seq'))} of {_e(log.get('tree_size'))}</td></tr>"
        f"<tr><th>Leaf hash</th><td><code>{_e(log.get('leaf_hash'))}</code></td></tr>"
        f"<tr><th>Signed by</th><td>{_e(log.get('key_name'))} "
        f"(<code>{_e(log.get('key_id'))}</code>)</td></tr></table>",
        f"<pre>{_e(log.get('checkpoint'))}</pre>",
        "<p class=\"meta\">This page shows a receipt; the JSON receipt proves it. Check it "
        "without the server: <code>stichtag receipt verify receipt.json --public-key "
        "log.pem --versions DIR</code> (docs/audit.md, \"Receipts\").</p>",
        "</body></html>"]
    return "\n".join(parts) + "\n"
