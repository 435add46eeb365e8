"""``stichtag calibrate --leverage``: the leverage of τ on the tenant's own answers,
printed (docs/thresholds.md, "The leverage of τ")."""

from __future__ import annotations

from typing import Any

from stichtag.cli.output import Output
from stichtag.domain.leverage import LeverageReport, coverage_quantiles


def show_leverage(r: LeverageReport, out: Output) -> None:
    """The report as JSON or as a few lines and a table."""
    data: dict[str, Any] = {
        "runs": r.runs, "enough": r.enough, "note": r.note, "tau": r.tau,
        "sentences": r.sentences, "presence": r.presence, "rho": r.rho,
        "leverage_binomial": r.leverage_binomial, "leverage_measured": r.leverage_measured,
        "window_above_2": list(r.window) if r.window else None,
        "coverage_quantiles": coverage_quantiles(r.coverage),
        "delivery": [{"tau": d.tau, "observed": d.observed, "binomial": d.binomial,
                      "beta_binomial": d.beta_binomial} for d in r.delivery]}
    out.emit(data, _text)


def _text(d: dict[str, Any]) -> str:
    if not d["enough"]:
        return str(d["note"])
    lines = [
        f"{d['runs']} runs, typical length {d['sentences']} sentences, citation presence "
        f"{d['presence']:.3f}, coverage quantiles {d['coverage_quantiles']}",
        f"at tau {d['tau']}: measured leverage {d['leverage_measured']:.2f} points of "
        f"delivery per point of presence; independent binomial {d['leverage_binomial']:.2f}"
        + (f" (above 2 for p in [{d['window_above_2'][0]:.3f}, {d['window_above_2'][1]:.3f}]"
           f" at n = {d['sentences']})" if d["window_above_2"] else ""),
        d["note"], "tau   observed  binomial  beta-binomial"]
    lines.extend(f"{x['tau']:.2f}  {x['observed']:8.3f}  {x['binomial']:8.3f}  "
                 f"{x['beta_binomial']:13.3f}" for x in d["delivery"])
    return "\n".join(lines)
