"""The MCP server (docs/assistants.md) through a client of the official SDK, over stdio
(``stichtag mcp`` as a subprocess) and over streamable HTTP (``/mcp`` of a real server on
loopback), on the DeckRV of the law corpus: tools, an as-of question, evidence and the
check, the tenant wall, scopes, and tool errors."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from tests.conftest import REPO, Cluster
from tests.integration.deckrv_server import (
    HIGH_NOTE,
    IN_2021,
    IN_2022,
    QUESTION,
    DeckrvServer,
    serve_deckrv,
)

TOOLS = {"ask", "evidence", "check_answer", "compare", "get_document", "document_history",
         "search"}
T = TypeVar("T")


@pytest.fixture(scope="module")
def server(cluster: Cluster, models_dir: Path, embedder: Any,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeckrvServer]:
    yield from serve_deckrv(cluster, models_dir, embedder, tmp_path_factory.mktemp("mcp"))


Opener = Callable[[], AbstractAsyncContextManager[McpClient]]


def _http(server: DeckrvServer, key: str) -> Opener:
    @asynccontextmanager
    async def opened() -> AsyncIterator[McpClient]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"},
                                      timeout=120) as http, McpClient(streamable_http_client(
                                          f"{server.base_url}/mcp", http_client=http)) as c:
            yield c

    return opened


def _stdio(server: DeckrvServer, key: str) -> Opener:
    env = {**os.environ, "STICHTAG_URL": server.base_url, "STICHTAG_KEY": key}
    params = StdioServerParameters(command=sys.executable, args=["-m", "stichtag.cli", "mcp"],
                                   env=env, cwd=str(REPO))

    @asynccontextmanager
    async def opened() -> AsyncIterator[McpClient]:
        async with McpClient(params) as c:
            yield c

    return opened


def _run(opener: Opener, body: Callable[[McpClient], Awaitable[T]]) -> T:
    async def main() -> T:
        async with opener() as c:
            return await body(c)

    return anyio.run(main)


def _text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def _as_of_question(server: DeckrvServer, client: Opener) -> None:
    """Tools listed; ``ask`` at a Stichtag cites the version then in force, verbatim."""
    async def body(c: McpClient) -> tuple[set[str], CallToolResult, CallToolResult]:
        tools = await c.list_tools()
        old = await c.call_tool("ask", {"question": QUESTION, "valid_at": IN_2021})
        new = await c.call_tool("ask", {"question": QUESTION, "valid_at": IN_2022})
        return {t.name for t in tools.tools}, old, new

    names, old, new = _run(client, body)
    assert names == TOOLS
    for result, valid_at, rate in ((old, IN_2021, "0,9 Prozent"), (new, IN_2022,
                                                                    "0,25 Prozent")):
        assert not result.is_error, _text(result)
        data = result.structured_content
        assert data is not None and data["status"] in ("answered", "partial"), data
        in_force = server.in_force("deckrv", valid_at)
        citations = [c for s in data["sentences"] for c in s["citations"]]
        assert citations and {c["version_id"] for c in citations} == {in_force}
        for c in citations:
            assert server.text(c["version_id"])[c["start"]:c["end"]] == c["quote"]
        assert any(rate in c["quote"] for c in citations), citations
        assert f"deckrv @ {in_force[:19]}" in _text(result)


def test_stdio_lists_tools_and_answers_as_of(server: DeckrvServer) -> None:
    _as_of_question(server, _stdio(server, server.key(server.law, scopes="read")))


def test_http_lists_tools_and_answers_as_of(server: DeckrvServer) -> None:
    _as_of_question(server, _http(server, server.key(server.law, scopes="read")))


def test_evidence_check_and_prompt_over_http(server: DeckrvServer) -> None:
    async def body(c: McpClient) -> tuple[Any, Any, Any, Any, Any]:
        ev = await c.call_tool("evidence", {"question": QUESTION, "valid_at": IN_2022})
        data = ev.structured_content
        assert data is not None and data["status"] == "ready", _text(ev)
        n = next(e["n"] for e in data["evidence"] if "0,25 Prozent" in e["quote"])
        good = await c.call_tool("check_answer", {
            "answer": f"Der Höchstzinssatz beträgt 0,25 Prozent [{n}].",
            "run_id": data["run_id"]})
        invented = await c.call_tool("check_answer", {
            "answer": f"Der Höchstzinssatz beträgt 0,25 Prozent [{n}]. Er gilt ewig [99].",
            "run_id": data["run_id"]})
        broken = await c.call_tool("check_answer", {"answer": "Ein Satz."})
        prompt = await c.get_prompt("grounded_answer", {"question": QUESTION,
                                                        "valid_at": IN_2022})
        return good, invented, broken, prompt, await c.list_prompts()

    good, invented, broken, prompt, prompts = _run(
        _http(server, server.key(server.law, scopes="read")), body)
    assert not good.is_error and good.structured_content["status"] == "answered"
    assert "0,25 Prozent" in _text(good) and "deckrv @" in _text(good)
    # an abstention is a result, not an error
    assert not invented.is_error
    assert invented.structured_content["reason"] == "invented_citation"
    assert "[99]" in _text(invented)
    # a refused call is a tool error with the problem's title and detail
    assert broken.is_error and "Unprocessable Content: run_id: give either" in _text(broken)
    assert "Traceback" not in _text(broken)
    assert [p.name for p in prompts.prompts] == ["grounded_answer"]
    instruction = "\n".join(m.content.text for m in prompt.messages
                            if isinstance(m.content, TextContent))
    assert "check_answer" in instruction and "only source" in instruction
    assert QUESTION in instruction


def test_compare_names_the_change_and_its_cause_over_http(server: DeckrvServer) -> None:
    async def body(c: McpClient) -> CallToolResult:
        return await c.call_tool("compare", {"question": QUESTION,
                                             "from_as_of": {"valid_at": IN_2021},
                                             "to_as_of": {"valid_at": IN_2022}})

    result = _run(_http(server, server.key(server.law, scopes="read")), body)
    assert not result.is_error, _text(result)
    data = result.structured_content
    assert data is not None
    # each side cites the version in force at its Stichtag, as the API's compare does
    for side, valid_at, rate in (("from", IN_2021, "0,9 Prozent"), ("to", IN_2022,
                                                                      "0,25 Prozent")):
        answer = data[side]
        assert answer["status"] in ("answered", "partial"), answer
        assert answer["as_of"]["valid_at"].startswith(valid_at)
        quotes = [c["quote"] for s in answer["sentences"] for c in s["citations"]]
        assert any(rate in q for q in quotes), quotes
    [change] = [c for c in data["changes"] if c["document"] == "deckrv"]
    assert (change["kind"], change["cause"]) == ("changed", "valid_time")
    assert change["from_version"] == server.in_force("deckrv", IN_2021)
    assert change["to_version"] == server.in_force("deckrv", IN_2022)
    text = _text(result)
    assert "- deckrv: changed, cause valid_time" in text and data["summary"] in text
    # the compare record and both answers are recorded runs of the caller's tenant
    with httpx.Client(base_url=server.base_url, headers={
            "Authorization": f"Bearer {server.key(server.law, scopes='audit')}"}) as http:
        for run_id in (data["run_id"], data["from"]["run_id"], data["to"]["run_id"]):
            assert http.get(f"/v1/runs/{run_id}").status_code == 200, run_id


def test_another_tenant_reaches_nothing_through_any_tool(server: DeckrvServer) -> None:
    law_run = server.svc.evidence
    assert law_run is not None
    run = law_run.evidence(server.law, QUESTION, valid_at=server.svc.clock.now(),
                           known_at=server.svc.clock.now())
    version = server.in_force("tarifnotiz", IN_2022)
    quote = next(line for line in HIGH_NOTE.splitlines() if "Prozent" in line)

    async def body(c: McpClient) -> dict[str, CallToolResult]:
        return {
            "check_run": await c.call_tool("check_answer", {
                "answer": "Der Satz gilt [1].", "run_id": str(run.run_id)}),
            "check_quote": await c.call_tool("check_answer", {
                "answer": "Der Zins beträgt 0,15 Prozent.", "valid_at": IN_2022,
                "citations": [{"sentence": 0, "document": "tarifnotiz", "quote": quote,
                               "version_id": version}]}),
            "document": await c.call_tool("get_document", {"key": "tarifnotiz"}),
            "history": await c.call_tool("document_history", {"key": "tarifnotiz"}),
            "search": await c.call_tool("search", {"query": "Tarif Morgenrot Rechnungszins"}),
            "ask": await c.call_tool("ask", {"question": "Wie hoch ist der interne "
                                             "Rechnungszins des Tarifs Morgenrot?"}),
            "compare": await c.call_tool("compare", {
                "question": "Wie hoch ist der interne Rechnungszins des Tarifs Morgenrot?",
                "from_as_of": {"valid_at": IN_2021}, "to_as_of": {"valid_at": IN_2022}}),
        }

    for who, clearance in ((server.other, 3), (server.law, 1)):
        got = _run(_http(server, server.key(who, scopes="read,audit", clearance=clearance)),
                   body)
        if who is server.other:
            assert got["check_run"].is_error and "Not Found" in _text(got["check_run"])
            # the other tenant's comparison is its own: nothing of the law tenant cited
            compared = got["compare"].structured_content
            assert not got["compare"].is_error and compared["changes"] == [], compared
        for name in ("document", "history"):
            assert got[name].is_error and "Not Found" in _text(got[name]), name
        check = got["check_quote"].structured_content
        assert check["reason"] == "quote_not_in_source", check
        for name, result in got.items():  # the note's value and version appear nowhere
            shown = str(result.structured_content or "") + _text(result)
            if name != "check_quote":  # whose answer text, the request's own, says 0,15
                assert "0,15" not in shown, name
            assert version not in shown, name


def test_keys_scopes_and_no_write_tool(server: DeckrvServer) -> None:
    async def body(c: McpClient) -> tuple[Any, CallToolResult]:
        return await c.list_tools(), await c.call_tool("ask", {"question": QUESTION})

    tools, ask = _run(_http(server, server.key(server.law, scopes="read")), body)
    assert all(t.annotations and t.annotations.read_only_hint for t in tools.tools)
    assert not ask.is_error
    # a key without the read scope lists the tools but every call is refused
    _, refused = _run(_http(server, server.key(server.law, scopes="write")), body)
    assert refused.is_error and "Forbidden: " in _text(refused)
    # no key, or a wrong one: the API's 401 before MCP sees the request
    with httpx.Client(base_url=server.base_url) as raw:
        for headers in ({}, {"Authorization": "Bearer stk_nope_" + "x" * 43}):
            r = raw.post("/mcp", headers={**headers, "Accept": "application/json, "
                                          "text/event-stream"},
                         json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert r.status_code == 401, (headers, r.text)
            assert r.headers["content-type"].startswith("application/problem+json")
