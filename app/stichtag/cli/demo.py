"""``stichtag demo``: the demo tenant with an admin key and the bundled corpus (once)."""

from __future__ import annotations

import argparse
from pathlib import Path

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, command
from stichtag.cli.keys import create_key
from stichtag.cli.manifest import ingest_manifest
from stichtag.cli.output import Output
from stichtag.cli.tenants import operator
from stichtag.domain.errors import NotFound

DEMO_DIR = Path(__file__).resolve().parents[1] / "demo" / "corpus"
"""The bundled demo corpus: ``manifest.csv`` and the files it names."""


def _tenant_exists(svc: Services, name: str) -> bool:
    try:
        svc.access.operator(name)
    except NotFound:
        return False
    return True


OUT_OF_SCOPE_QUESTION = "Wie hoch ist die Kfz-Steuer für einen Diesel?"
"""Tax law is not in the demo corpus (an earlier demo answered it 'partial' with the surplus
declaration's Zinszusatzreserve figures)."""

ACROSS_QUESTION = "What is the maximum entry age?"
"""Asked in English of German documents, judged on the underwriting guideline's meaning
(docs/salience.md, "Scope across languages") and answered from it: "Das
Höchsteintrittsalter beträgt 55 Jahre." Checked to be answered on the demo (the test of
the printed calls): "the maximum technical interest rate for new business" stays below
the fitted cosine there and is refused."""


def demo_examples(base: str, key: str) -> list[str]:
    """Calls that show the bitemporal core on the demo corpus, an answer across languages,
    and a refusal."""
    auth = f'-H "Authorization: Bearer {key}"'
    return [
        "# the surplus declaration in force on 1 June 2022, as known on 1 June 2021 "
        "(the 2022 one was not declared yet):",
        f"curl -s {auth} '{base}/v1/documents/surplus-declaration"
        "?valid_at=2022-06-01&known_at=2021-06-01'",
        "# the underwriting guideline's history on both time axes "
        "(note the backdated 2023 version):",
        f"curl -s {auth} '{base}/v1/documents/underwriting-guideline/history'",
        "# a gated answer with pinned citations, as of 1 June 2022:",
        f"curl -s {auth} -H 'Content-Type: application/json' -X POST '{base}/v1/answer' "
        "-d '{\"question\": \"Welcher Höchstrechnungszins gilt für Neugeschäft?\", "
        "\"valid_at\": \"2022-06-01\"}'",
        "# a question in English, answered from the German underwriting guideline: judged on "
        "meaning (words are not compared across languages), cited in German:",
        f"curl -s {auth} -H 'Content-Type: application/json' -X POST '{base}/v1/answer' "
        f"-d '{{\"question\": \"{ACROSS_QUESTION}\", \"valid_at\": \"2022-06-01\"}}'",
        "# a question no document in force covers: abstains out_of_scope, naming the terms, "
        "with threshold, observed value and next step:",
        f"curl -s {auth} -H 'Content-Type: application/json' -X POST '{base}/v1/answer' "
        f"-d '{{\"question\": \"{OUT_OF_SCOPE_QUESTION}\"}}'",
    ]


def closing_block(svc: Services, tenant: str) -> dict[str, str]:
    """What ``make serve`` leaves running and how to stop it: printed last, so it is what
    the user sees above the server's log."""
    base = f"http://{svc.settings.host}:{svc.settings.port}"
    return {
        "url": base, "console": f"{base}/", "data_dir": str(svc.settings.data_dir),
        "new_key": f"stichtag keys create --tenant {tenant} --scopes read,write,audit,admin "
                   "--clearance secret",
        "stop": "Ctrl+C stops the server and, when nothing else uses it, the embedded "
                "PostgreSQL",
        "stop_db": "stichtag db stop"}


def _closing_text(c: dict[str, str]) -> str:
    return "\n".join((
        "", "Running next (stichtag serve):",
        f"  server      {c['url']}  (OpenAPI at {c['url']}/schema)",
        f"  console     {c['console']}  (sign in with the admin key)",
        f"  key         the admin key printed when the demo was loaded; a new one: "
        f"{c['new_key']}",
        f"  data        {c['data_dir']}  (embedded PostgreSQL, index, signing key)",
        f"Stop: {c['stop']}; a database left running after a crash: {c['stop_db']}"))


def cmd_demo(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Create the demo tenant with an admin key and load the bundled demo corpus (once)."""
    closing = closing_block(svc, args.tenant)
    if _tenant_exists(svc, args.tenant):
        out.emit({"tenant": args.tenant, "created": False, "running": closing},
                 lambda d: f"demo tenant {d['tenant']!r} exists (its data is kept)."
                           + _closing_text(d["running"]))
        return
    svc.access.create_tenant(args.tenant, "Europe/Berlin")
    key = create_key(svc, args.tenant, scopes="read,write,audit,admin", clearance="secret",
                     label="demo admin")
    who = operator(svc, args.tenant)
    stats = ingest_manifest(svc, who, DEMO_DIR / "manifest.csv", use_tx_time=True)
    svc.indexer.catch_up(who.tenant_id)  # lexical index and embeddings ready before serving
    base = closing["url"]
    data = {"tenant": args.tenant, "created": True, "key": key["key"], "stats": stats,
            "url": base, "examples": demo_examples(base, key["key"]), "running": closing}
    out.emit(data, lambda d: (
        f"demo tenant {d['tenant']!r} loaded ({d['stats']['rows']} manifest rows).\n"
        f"Admin key (shown once, keep it):\n  {d['key']}\n\nTry:\n"
        + "\n".join(f"  {e}" for e in d["examples"]) + "\n" + _closing_text(d["running"])))


def register(sub: Subparsers) -> None:
    """``demo``."""
    demo = command(sub, "demo", help="create the demo tenant and load the demo corpus once",
                   example="stichtag demo && stichtag serve")
    demo.add_argument("--tenant", default="demo", metavar="NAME",
                      help="the demo tenant's name (default demo)")
    demo.set_defaults(handler=cmd_demo, needs_models=True)
