"""Tools for the openai-compatible generator (docs/architecture.md §7), driven by the scripted chat
server through the real HTTP API: a document opened through a tool is consulted whether
or not the answer links it, a title seen only in a listing can never be cited, what a
model says it read counts for nothing, tool results are recorded and replayed, and a
tool call returns nothing above the key's clearance or from another tenant."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from stichtag.domain.generation import LIST_DOCUMENTS, READ_DOCUMENT, READ_SECTION
from tests.chat_server import Received, Scripted, answer
from tests.conftest import make_tenant
from tests.integration import test_answer_openai as base
from tests.integration.test_answer_openai import Harness, evidence_of, reply

# The same harness (a server whose openai-compatible generator offers tools, the scripted
# chat server, the demo tenant), built once for this module.
harness = base.harness
http = base.http

REFUSED = {"error": "no such document in force at this as-of pair"}


def tool_calls(*calls: tuple[str, dict[str, str]]) -> Scripted:
    """A 200 completion that asks for tool calls instead of answering."""
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
        for i, (name, args) in enumerate(calls)]}
    body = {"id": "chatcmpl-tools", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]}
    return Scripted(body=json.dumps(body).encode())


def tool_results(received: Received) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in received.json()["messages"]
            if m["role"] == "tool"]


def two_rounds(calls: Sequence[tuple[str, dict[str, str]]],
               then: Callable[[Received], str]) -> Callable[[Received], Scripted]:
    """First the tool calls, then the answer ``then`` writes from what came back."""
    def respond(received: Received) -> Scripted:
        if received.json()["messages"][-1]["role"] != "tool":
            return tool_calls(*calls)
        return reply(then(received))
    return respond


def first_item(received: Received) -> dict[str, str]:
    return next(i for i in evidence_of(received) if i["document"] == "surplus-declaration")


def replayed(http: httpx.Client, body: dict[str, Any]) -> None:
    verdict = http.post(f"/v1/runs/{body['run_id']}/replay").json()
    assert verdict["reproduced"], verdict


def test_a_document_opened_and_not_linked_is_consulted(harness: Harness,
                                                       http: httpx.Client) -> None:
    def then(received: Received) -> str:
        (opened,) = tool_results(received)
        assert opened["document"] == "underwriting-guideline" and opened["evidence"]
        item = first_item(received)
        return answer([(item["text"], [item["id"]])],  # forgets to link what it read
                      consulted=[item["id"]])

    body, requests = harness.ask(http, two_rounds(
        [(READ_DOCUMENT, {"document": "underwriting-guideline"})], then))
    assert len(requests) == 2 and "tools" in requests[0].json()
    assert body["status"] == "answered", body
    assert body["source_line"] == ["surplus-declaration", "underwriting-guideline"]
    docs = {d["document"]: d for d in body["documents"]}
    assert (docs["underwriting-guideline"]["cited"], docs["underwriting-guideline"]["consulted"],
            docs["underwriting-guideline"]["opened"]) == (False, True, True)
    read = [s for s in body["sources"] if s["citation"]["document"] == "underwriting-guideline"]
    assert read and all(s["consulted"] and not s["cited"] for s in read)
    record = http.get(f"/v1/runs/{body['run_id']}").json()["record"]
    (tool,) = record["generator"]["tools"]
    assert (tool["name"], tool["arguments"], tool["refused"]) == (
        READ_DOCUMENT, {"document": "underwriting-guideline"}, None)
    assert len(tool["evidence"]) == len(tool_results(requests[1])[0]["evidence"])
    assert record["provenance"]["opened"] == ["underwriting-guideline"]
    replayed(http, body)


def test_a_section_read_through_a_tool_can_be_cited(harness: Harness,
                                                    http: httpx.Client) -> None:
    def then(received: Received) -> str:
        (section,) = tool_results(received)
        hit = next(e for e in section["evidence"] if "0,25 %" in e["text"])
        return answer([(hit["text"], [hit["id"]])])

    body, requests = harness.ask(http, two_rounds(
        [(READ_SECTION, {"document": "surplus-declaration", "heading": "Höchstrechnungszins"})],
        then))
    assert body["status"] == "answered", body
    section = tool_results(requests[1])[0]
    assert all("Höchstrechnungszins" in e["section"] for e in section["evidence"])
    assert body["source_line"] == ["surplus-declaration"]
    cited = [c for s in body["sentences"] for c in s["citations"]]
    assert cited and "0,25 %" in cited[0]["quote"]  # cut from the version, Harness checks
    replayed(http, body)


def test_an_answer_may_cite_what_a_tool_returned_beyond_retrieval(
        harness: Harness, http: httpx.Client) -> None:
    def then(received: Received) -> str:
        (handbook,) = tool_results(received)
        payment = next(e for e in handbook["evidence"] if "within 5 working days" in e["text"])
        item = first_item(received)
        return answer([(item["text"], [item["id"]]), (payment["text"], [payment["id"]])])

    body, requests = harness.ask(http, two_rounds(
        [(READ_DOCUMENT, {"document": "claims-handbook-en"})], then))
    retrieved = {i["document"] for i in evidence_of(requests[0])}
    assert "claims-handbook-en" not in retrieved  # found only through the tool
    assert body["status"] == "answered", body
    assert body["source_line"] == ["surplus-declaration", "claims-handbook-en"]
    cited = [c["document"] for s in body["sentences"] for c in s["citations"]]
    assert cited == ["surplus-declaration", "claims-handbook-en"]  # quotes: Harness.check
    replayed(http, body)


def test_a_link_to_a_document_seen_only_as_a_title_is_an_integrity_error(
        harness: Harness, http: httpx.Client) -> None:
    def then(received: Received) -> str:
        (listing,) = tool_results(received)
        titles = [d["document"] for d in listing["documents"]]
        assert "underwriting-guideline" in titles and "evidence" not in listing
        item = first_item(received)
        return answer([(item["text"], [item["id"]]),
                       ("Die Annahmerichtlinie regelt die Risikoprüfung.",
                        ["underwriting-guideline"])])

    body, _ = harness.ask(http, two_rounds(
        [(LIST_DOCUMENTS, {"topic": "Berufsunfähigkeit"})], then))
    assert (body["status"], body["reason"]) == ("abstained", "integrity_error")
    assert "'underwriting-guideline'" in body["gates"][-1]["detail"]
    assert body["source_line"] == [] and body["documents"] == []
    record = http.get(f"/v1/runs/{body['run_id']}").json()["record"]
    assert "underwriting-guideline" in record["provenance"]["titles_only"]
    assert record["provenance"]["consulted"] == []
    replayed(http, body)


def test_a_claim_to_have_read_counts_for_nothing(harness: Harness,
                                                 http: httpx.Client) -> None:
    def respond(received: Received) -> Scripted:
        items = evidence_of(received)
        item = first_item(received)
        return reply(answer([(item["text"], [item["id"]])],
                            consulted=[i["id"] for i in items]))  # "I read them all"

    body, _ = harness.ask(http, respond)
    assert body["status"] == "answered"
    assert body["source_line"] == ["surplus-declaration"]
    assert "underwriting-guideline" in {s["citation"]["document"] for s in body["sources"]}
    assert [s["id"] for s in body["sources"] if s["consulted"]] == [
        s["id"] for s in body["sources"] if s["cited"]]


def test_tools_return_nothing_above_the_clearance_or_of_another_tenant(
        harness: Harness, http: httpx.Client) -> None:
    note = "actuarial-note-confidential"
    guessed: list[str] = []

    def then(received: Received) -> str:
        result = tool_results(received)[0]
        item = first_item(received)
        if "evidence" in result:
            return answer([(item["text"], [item["id"]])])
        # nothing came back; cite an id the way a model guessing the next one would
        tag = item["id"].split("-")[1]
        guessed.append(f"E{len(evidence_of(received)) + 1}-{tag}")
        return answer([(item["text"], [item["id"]]), ("Die Notiz nennt 1,57 %.", guessed)])

    ask_note = two_rounds([(READ_DOCUMENT, {"document": note})], then)
    # with full clearance the note is read (2023: it is in force) ...
    secret, requests = harness.ask(http, ask_note, valid_at="2023-06-01")
    assert secret["status"] == "answered" and note in secret["source_line"]
    confidential_text = [e["text"] for e in tool_results(requests[1])[0]["evidence"]]
    # ... with an internal key the same call returns what an unknown document returns
    low = harness.live.key(harness.tenant, scopes="read,audit", clearance=1)
    with harness.live.client(low) as low_http:
        body, requests = harness.ask(low_http, ask_note, valid_at="2023-06-01")
        assert tool_results(requests[1]) == [REFUSED]
        assert (body["status"], body["reason"]) == ("abstained", "integrity_error")
        assert note not in json.dumps(body) and guessed[-1] not in {
            s["id"] for s in body["sources"]}
        _, requests = harness.ask(low_http, two_rounds(
            [(READ_DOCUMENT, {"document": "no-such-document"})], then), valid_at="2023-06-01")
        assert tool_results(requests[1]) == [REFUSED]
        sent = json.dumps([r.json() for r in requests], ensure_ascii=False)
        assert not any(t in sent for t in confidential_text)
        replayed(low_http, body)
    # another tenant with its own declaration cannot open this tenant's documents
    other = make_tenant(harness.live.services)
    key = harness.live.key(other)
    with harness.live.client(key) as other_http:
        made = other_http.post("/v1/documents/surplus-declaration/versions", json={
            "text": "# Überschussdeklaration\n\n## Höchstrechnungszins im Neugeschäft\n\n"
                    "(1) Der Höchstrechnungszins für Neugeschäft beträgt 0,50 %.\n",
            "valid_from": "2022-01-01", "doc_class": "declaration",
            "confidentiality": "public"})
        assert made.status_code == 201, made.text
        harness.live.services.indexer.catch_up(other.tenant_id)
        body, requests = harness.ask(other_http, two_rounds(
            [(READ_DOCUMENT, {"document": "underwriting-guideline"}),
             (LIST_DOCUMENTS, {"topic": "Berufsunfähigkeit"})], then))
        opened, listed = tool_results(requests[1])
        assert opened == REFUSED and listed["documents"] == []
        assert "underwriting-guideline" not in json.dumps(body)
