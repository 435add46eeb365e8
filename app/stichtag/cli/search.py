"""``stichtag search`` and ``ask``: retrieval and gated answers as of a Stichtag.

An abstention is a regular result: ``ask`` prints it in full (reason, threshold, observed
value, next step) and exits with ``EXIT_ABSTAINED`` so that scripts see it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from stichtag.bootstrap import Services
from stichtag.cli.args import Subparsers, add_as_of, add_tenant, as_of, as_of_json, command
from stichtag.cli.assist import REMOTE_ONLY, remote_evidence
from stichtag.cli.compare import cmd_compare, remote_compare
from stichtag.cli.output import EXIT_ABSTAINED, EXIT_OK, CliError, Output
from stichtag.cli.remote import as_of as remote_as_of
from stichtag.cli.tenants import operator

if TYPE_CHECKING:
    from stichtag.client import Client


def cmd_search(svc: Services, args: argparse.Namespace, out: Output) -> None:
    """Hybrid search; every hit carries its scores."""
    who = operator(svc, args.tenant)
    at = as_of(svc, who, args)
    svc.indexer.catch_up(who.tenant_id)
    result = svc.search.search(who, args.query, valid_at=at.valid_at, known_at=at.known_at,
                               k=args.k)
    data = {"run_id": str(result.run_id), "as_of": as_of_json(at),
            "hits": [{"document": h.document, "version_id": h.version_id, "start": h.start,
                      "end": h.end, "heading_path": h.heading_path, "text": h.text,
                      "bm25": h.bm25, "vector": h.vector, "fused": h.fused}
                     for h in result.hits]}
    _found(out, data)


def remote_search(api: Client, args: argparse.Namespace, out: Output) -> None:
    """The same through the server."""
    r = api.search(args.query, valid_at=args.valid_at, known_at=args.known_at, k=args.k)
    _found(out, {"run_id": r.run_id, "as_of": remote_as_of(r.as_of),
                 "hits": [{"document": h.document, "version_id": h.version_id,
                           "start": h.start, "end": h.end, "heading_path": h.heading_path,
                           "text": h.text, "bm25": h.scores.bm25, "vector": h.scores.vector,
                           "fused": h.scores.fused} for h in r.hits]})


def _found(out: Output, data: dict[str, Any]) -> None:
    out.emit(data, lambda d: f"run {d['run_id']} as of valid {d['as_of']['valid_at']}, known "
             f"{d['as_of']['known_at']}\n" + "\n".join(
                 f"{i + 1:>2}. {h['document']} {h['version_id'][:15]}… [{h['start']},{h['end']}) "
                 f"{' › '.join(h['heading_path'])}\n    {h['text'][:160]}"
                 for i, h in enumerate(d["hits"])))


def _answer_text(d: dict[str, Any]) -> str:
    head = d["status"] + (f" ({d['reason']}: observed {d['observed']}, threshold "
                          f"{d['threshold']})\n  next step: {d['next_step']}"
                          if d["reason"] else "")
    lines = [head]
    for s in d["sentences"]:
        lines.append(f"- {s['text']}")
        lines.extend(f"    [{c['document']} {c['version_id'][:15]}… "
                     f"{' › '.join(c['heading_path'])} {c['start']}-{c['end']}]"
                     for c in s["citations"])
    lines.append(f"run {d['run_id']}")
    return "\n".join(lines)


def cmd_ask(svc: Services, args: argparse.Namespace, out: Output) -> int:
    """A gated answer with pinned citations; exit code 3 when it abstains."""
    if args.evidence:
        raise CliError(f"--evidence: {REMOTE_ONLY}")
    if getattr(args, "compare", None):
        return cmd_compare(svc, args, out)
    who = operator(svc, args.tenant)
    if svc.answers is None:
        raise CliError("answering needs the models: stichtag models build")
    at = as_of(svc, who, args)
    svc.indexer.catch_up(who.tenant_id)
    r = svc.answers.answer(who, args.question, valid_at=at.valid_at, known_at=at.known_at,
                           generator=args.generator)
    data = {"run_id": str(r.run_id), "status": r.status, "reason": r.reason,
            "next_step": r.next_step, "coverage": r.coverage, "gaps": r.gaps,
            "threshold": r.failed.threshold if r.failed else None,
            "observed": r.failed.observed if r.failed else None,
            "as_of": as_of_json(at),
            "sentences": [{"text": s.text, "citations": [
                {"document": c.document, "version_id": c.version_id, "start": c.start,
                 "end": c.end, "quote": c.quote, "heading_path": list(c.heading_path)}
                for c in s.citations]} for s in r.sentences]}
    out.emit(data, _answer_text)
    return EXIT_ABSTAINED if r.status == "abstained" else EXIT_OK


def remote_ask(api: Client, args: argparse.Namespace, out: Output) -> int:
    """The same through the server; exit code 3 when it abstains."""
    if args.evidence:  # evidence for your own model (docs/assistants.md)
        return remote_evidence(api, args, out)
    if getattr(args, "compare", None):
        return remote_compare(api, args, out)
    r = api.answer(args.question, valid_at=args.valid_at, known_at=args.known_at,
                   generator=args.generator)
    data = {"run_id": r.run_id, "status": r.status, "reason": r.reason,
            "next_step": r.next_step, "coverage": r.coverage, "gaps": r.gaps,
            "threshold": r.threshold, "observed": r.observed,
            "as_of": remote_as_of(r.as_of),
            "sentences": [{"text": s.text, "citations": [
                {"document": c.document, "version_id": c.version_id, "start": c.start,
                 "end": c.end, "quote": c.quote, "heading_path": c.heading_path}
                for c in s.citations]} for s in r.sentences]}
    out.emit(data, _answer_text)
    return EXIT_ABSTAINED if r.status == "abstained" else EXIT_OK


def register(sub: Subparsers) -> None:
    """``search``, ``ask``."""
    search = command(sub, "search", help="hybrid search as of a Stichtag",
                     example="stichtag search --tenant acme Höchstzinssatz "
                             "--valid-at 2022-01-01 -k 5")
    add_tenant(search, remote=True)
    search.add_argument("query", help="words to look for (German or English)")
    add_as_of(search)
    search.add_argument("-k", type=int, default=10, help="hits to return (default 10)")
    search.set_defaults(handler=cmd_search, needs_models=True, remote=remote_search)

    ask = command(sub, "ask", help="a gated answer with pinned citations, as of a Stichtag",
                  description="A gated answer with pinned citations, as of a Stichtag. An "
                              "abstention is printed in full and exits with code 3.",
                  example='stichtag ask --tenant acme "Welcher Höchstrechnungszins gilt für '
                          'Neugeschäft?" --valid-at 2022-06-01\n'
                          'stichtag ask --tenant acme "Wie backe ich einen Apfelstrudel?"; '
                          'echo "exit $?"   # exit 3: abstained')
    add_tenant(ask, remote=True)
    ask.add_argument("question")
    add_as_of(ask)
    ask.add_argument("--generator", default="extractive",
                     help="extractive (default) or openai-compatible when configured")
    ask.add_argument("--evidence", action="store_true",
                     help="only the gated evidence, numbered [n], for an answer your own "
                          "model writes (through --url; then: stichtag check)")
    ask.add_argument("--compare", nargs=2, metavar="VALID_AT[/KNOWN_AT]",
                     help="answer at both as-of pairs and name what changed and why (the "
                          "law, the knowledge, or both); --valid-at/--known-at are ignored")
    ask.set_defaults(handler=cmd_ask, needs_models=True, remote=remote_ask)
