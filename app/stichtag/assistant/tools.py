"""The MCP server: tools and the ``grounded_answer`` prompt over the typed client
(docs/assistants.md, "Tools and the prompt"), built on the official ``mcp`` SDK.

Every tool is one API call made with the caller's key, so scopes, clearance, rate and the
tenant wall are the API's own: over stdio the key of ``stichtag mcp``, over HTTP the
Bearer key of the MCP request itself (``stichtag/assistant/http.py``). A refused call is
an MCP tool error with the problem's title and detail; an abstention is a regular result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, NotRequired, TypeVar

import msgspec
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from stichtag.api import schemas as s
from stichtag.assistant import render
from stichtag.client import AsyncClient
from stichtag.client.errors import ApiError

Connect = Callable[[Context[Any, Any]], AbstractAsyncContextManager[AsyncClient]]
"""An API client for the caller of one tool call (stdio: the configured one; HTTP: one
with the request's Bearer key), closed when the call ends."""

T = TypeVar("T")
Structured = Annotated[CallToolResult, dict[str, Any]]
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

ValidAt = Annotated[str | None, Field(description=(
    "The Stichtag: when the content must be in force (RFC 3339 or a plain date in the "
    "tenant's time zone); default now."))]
KnownAt = Annotated[str | None, Field(description=(
    "What the knowledge base knew then (transaction time); default now."))]
Question = Annotated[str, Field(description="The question, in the documents' language.")]
Key = Annotated[str, Field(description="The document key, e.g. 'deckrv'.")]

INSTRUCTIONS = (
    "stichtag answers questions about versioned documents as of a Stichtag (valid_at) and "
    "a state of knowledge (known_at). Every statement must rest on a Fundstelle the system "
    "cut: use ask for the server's own gated answer, or evidence + check_answer to write "
    "the answer yourself and have it checked. An abstention is a valid result; show it.")

GROUNDING = """Answer the question below only from stichtag's evidence, as of the given \
Stichtag.

1. Call the tool `evidence` with question={question!r}, valid_at={valid_at!r}, \
known_at={known_at!r}.
2. If its status is `abstained`, do not answer: say that the knowledge base holds no \
sufficient evidence, with the reason and the next step it gives. Abstaining is the \
defined exit, not a failure.
3. Otherwise write the answer using the evidence as the only source: no outside \
knowledge, no statement without a Fundstelle. Put exactly one marker [n] (the evidence \
number) on every statement; a sentence you cannot support is left out, not left uncited.
4. Call `check_answer` with the evidence's run_id and your answer.
5. Show the checked result, not your draft: every sentence with its Fundstelle \
(document, version, quote) as check_answer returns it, and its status. If the check \
abstained, show the reason; do not present the unchecked answer as an answer.

Question: {question}"""


class AsOfPair(TypedDict):
    """One side of a comparison; an omitted field means now."""

    valid_at: NotRequired[Annotated[str, Field(description=(
        "The Stichtag: when the content must be in force (RFC 3339 or a plain date)."))]]
    known_at: NotRequired[Annotated[str, Field(description=(
        "What the knowledge base knew then (transaction time)."))]]


# The API's "from" and "to": "from" is a Python keyword, and the SDK names a tool's
# arguments after its function's parameters.
FromPair = Annotated[AsOfPair, Field(description=(
    "The first as-of pair (the API's 'from'), usually the earlier one."))]
ToPair = Annotated[AsOfPair, Field(description="The second as-of pair (the API's 'to').")]


class QuoteCitation(TypedDict):
    """A citation by quote (check_answer without run_id)."""

    sentence: Annotated[int | str, Field(description=(
        "The answer sentence it supports: index from 0, or the sentence's text."))]
    document: str
    quote: Annotated[str, Field(description="Character for character from the source.")]
    version_id: NotRequired[str]
    start: NotRequired[int]
    end: NotRequired[int]


def _result(value: Any, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=msgspec.to_builtins(value))


async def _call(connect: Connect, ctx: Context[Any, Any],
                fn: Callable[[AsyncClient], Awaitable[T]]) -> T:
    """One API call for the caller; a problem becomes a tool error (title and detail,
    no stack trace)."""
    try:
        async with connect(ctx) as client:
            return await fn(client)
    except ApiError as exc:
        raise ToolError(f"{exc.problem.title}: {exc.problem.detail}") from None


def build_server(connect: Connect, *, version: str = "") -> MCPServer[Any]:
    """The stichtag MCP server; ``connect`` says whose API client a call uses."""
    server: MCPServer[Any] = MCPServer(name="stichtag", version=version,
                                       instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(annotations=READ_ONLY)
    async def ask(question: Question, ctx: Context[Any, Any], valid_at: ValidAt = None,
                  known_at: KnownAt = None) -> Structured:
        """The server's gated answer as of the Stichtag: every sentence with its
        Fundstelle, or an abstention with reason, values and next step."""
        r = await _call(connect, ctx, lambda c: c.answer(question, valid_at=valid_at,
                                                         known_at=known_at))
        return _result(r, render.answer(r))

    @server.tool(annotations=READ_ONLY)
    async def evidence(question: Question, ctx: Context[Any, Any], valid_at: ValidAt = None,
                       known_at: KnownAt = None) -> Structured:
        """Gated evidence numbered [n] to write an answer from (or a refusal); cite it
        as [n] and check the answer with check_answer(run_id=...)."""
        r = await _call(connect, ctx, lambda c: c.evidence(question, valid_at=valid_at,
                                                           known_at=known_at))
        return _result(r, render.evidence(r))

    @server.tool(annotations=READ_ONLY)
    async def check_answer(
            answer: Annotated[str, Field(description="The answer as written.")],
            ctx: Context[Any, Any], *,
            run_id: Annotated[str | None, Field(description=(
                "The evidence run whose [n] the answer cites."))] = None,
            citations: Annotated[list[QuoteCitation] | None, Field(description=(
                "Instead of run_id: quotes with their document."))] = None,
            valid_at: ValidAt = None, known_at: KnownAt = None) -> Structured:
        """Hold an answer to the gates: every reference resolved to a cut Fundstelle
        (one invented reference rejects it), coverage against τ."""
        quotes = None if citations is None else [
            s.QuoteCitationBody(sentence=q["sentence"], document=q["document"],
                                quote=q["quote"], version_id=q.get("version_id"),
                                start=q.get("start"), end=q.get("end")) for q in citations]
        r = await _call(connect, ctx, lambda c: c.check_answer(
            answer, run_id=run_id, citations=quotes, valid_at=valid_at, known_at=known_at))
        return _result(r, render.check(r))

    @server.tool(annotations=READ_ONLY)
    async def compare(question: Question, from_as_of: FromPair, to_as_of: ToPair,
                      ctx: Context[Any, Any]) -> Structured:
        """The question answered at two as-of pairs (both recorded) and, per cited
        document, what changed and why: the law (valid time), the knowledge (transaction
        time), both, or neither."""
        r = await _call(connect, ctx, lambda c: c.compare(
            question, from_valid_at=from_as_of.get("valid_at"),
            from_known_at=from_as_of.get("known_at"), to_valid_at=to_as_of.get("valid_at"),
            to_known_at=to_as_of.get("known_at")))
        return _result(r, render.compare(r))

    @server.tool(annotations=READ_ONLY)
    async def get_document(key: Key, ctx: Context[Any, Any], valid_at: ValidAt = None,
                           known_at: KnownAt = None) -> Structured:
        """The version of a document in force at the as-of pair, with its text."""
        r = await _call(connect, ctx, lambda c: c.document(key, valid_at=valid_at,
                                                           known_at=known_at))
        return _result(r, render.document(r))

    @server.tool(annotations=READ_ONLY)
    async def document_history(key: Key, ctx: Context[Any, Any]) -> Structured:
        """Every assertion of a document on both time axes (valid and known)."""
        r = await _call(connect, ctx, lambda c: c.history(key))
        return _result(r, render.history(r))

    @server.tool(annotations=READ_ONLY)
    async def search(query: Annotated[str, Field(description="Words to find.")],
                     ctx: Context[Any, Any], valid_at: ValidAt = None,
                     known_at: KnownAt = None,
                     k: Annotated[int, Field(ge=1, le=50)] = 10) -> Structured:
        """Passages of the versions in force at the as-of pair, best first."""
        r = await _call(connect, ctx, lambda c: c.search(query, valid_at=valid_at,
                                                         known_at=known_at, k=k))
        return _result(r, render.search(r))

    @server.prompt()
    def grounded_answer(question: str, valid_at: str = "", known_at: str = "") -> str:
        """Answer from stichtag's evidence only, one Fundstelle per statement, abstain
        when the evidence does not carry it, and show the checked result."""
        return GROUNDING.format(question=question, valid_at=valid_at or None,
                                known_at=known_at or None)

    return server


def fixed(client: AsyncClient) -> Connect:
    """Every call with one client (stdio: the key ``stichtag mcp`` was started with)."""

    class _Same(AbstractAsyncContextManager[AsyncClient]):
        async def __aenter__(self) -> AsyncClient:
            return client

        async def __aexit__(self, *_: object) -> None:
            return None

    def connect(_: Context[Any, Any]) -> AbstractAsyncContextManager[AsyncClient]:
        return _Same()

    return connect

