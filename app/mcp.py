"""An MCP server's tools behind the tool boundary, given to nodes by settings.

``HANDOFF_MCP_SERVERS`` names the servers (a stdio command, or a streamable-HTTP URL) and
``HANDOFF_MCP_TOOLS`` gives a node a server's tool with its bounds: whether it reads or
writes, its timeout, its calls per attempt, the output size kept inline. Each grant
becomes a :class:`graphs.tools.ToolSpec` on the node (:func:`with_mcp_tools`), so the
boundary treats it as the template's own tools: declared per node, its arguments checked
against the tool's input schema before the call, every call receipted and budgeted, a
large output trimmed to the artifact store, and a call to a tool the node was not given
refused (``permission_denied`` to a model, ``Omitted`` to code).

A write grant does not give a tool to an agent: its tool becomes the code of the export
step's write (``McpExport``), which a person confirms before each call and which runs at
most once per call id (``graphs.tools.writes``).

The ``mcp`` SDK's client talks to the server (langchain-mcp-adapters wraps the same client
in LangChain tools whose argument schema is a JSON Schema dict, which the boundary's input
contract cannot be). Each call opens its own session: a stdio server is started for the
call and ended after it, so a server that died, hung or answered garbage leaves nothing
behind for the next call. What goes wrong comes back to the node as a ``ToolError``: a
server that cannot be reached or stops mid-call is ``retryable``, arguments its schema
refuses or an error the tool answers are ``fix_arguments``. The tool's input schema is
listed on first use, never when the graph is built: opening a workflow starts no server.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contracts import ExportArticleInput, ExportArticleOutput, ToolText
from graphs import Wiring
from graphs.tools.declare import NAME, ToolEnv, ToolSpec

EXPORT_NODE = "export_article"
"""The node whose confirmed write an MCP write tool may be the code of."""
LIST_SECONDS = 20.0
"""How long listing a server's tools may take, the server's start included."""


class McpServer(BaseModel):
    """Where an MCP server is: a command to start (stdio), or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(default=None, min_length=1, description="Executable (stdio).")
    args: tuple[str, ...] = Field(default=(), description="Its arguments.")
    env: dict[str, str] | None = Field(default=None, description="Its environment (stdio).")
    url: str | None = Field(default=None, pattern=r"^https?://", description="Its URL (HTTP).")

    @model_validator(mode="after")
    def _one_way_there(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError('give "command" (a stdio server) or "url" (streamable HTTP), not both')
        return self


class McpGrant(BaseModel):
    """One server's tool given to one node, with the bounds the boundary enforces."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: str = Field(min_length=1, description="The node whose agent may call the tool.")
    server: str = Field(min_length=1, description="A server of HANDOFF_MCP_SERVERS.")
    tool: str = Field(min_length=1, description="The tool's name on that server.")
    name: str | None = Field(
        default=None, description="Its name for the node (default: <server>_<tool>)."
    )
    kind: Literal["read", "write"] = Field(
        default="read",
        description="read: the node's agent may call it. write: it is the code of the node's "
        "write tool, which runs once a person confirmed the call (the export step's).",
    )
    arguments: dict[str, Literal["markdown", "file_name", "sha256"]] | None = Field(
        default=None,
        description="For a write: the MCP tool's argument each part of the article goes to "
        '(default: {"markdown": "markdown", "file_name": "file_name"}).',
    )
    timeout_seconds: float = Field(default=30.0, gt=0, le=600, description="Per call.")
    max_calls: int | None = Field(default=None, ge=1, description="Calls per node attempt.")
    trim_bytes: int | None = Field(
        default=20_000, ge=1, description="A larger output goes to the artifact store."
    )

    @model_validator(mode="after")
    def _arguments_for_writes(self) -> McpGrant:
        if self.arguments is not None and self.kind != "write":
            raise ValueError('"arguments" maps the article to a write tool\'s; this grant reads')
        return self

    @property
    def declared_name(self) -> str:
        """The tool's name at the boundary: a lower_snake_case name of up to 64 characters."""
        return self.name or re.sub(r"[^a-z0-9_]", "_", f"{self.server}_{self.tool}".lower())[:64]


class McpUnavailable(ConnectionError):
    """The server could not be reached, stopped mid-call or did not answer: try later.

    An ``OSError``, as a write tool's unreachable destination is (``export_article``
    declares those retryable).
    """


class McpRefused(ValueError):
    """The arguments do not fit the tool's input schema, or the tool answered an error."""


@dataclass
class McpTool:
    """One tool of one server: its input schema, listed on first use, and its calls."""

    server_name: str
    server: McpServer
    tool: str
    timeout_seconds: float
    _schema: dict[str, Any] | None = field(default=None, repr=False)

    def schema(self) -> dict[str, Any]:
        """The tool's input schema as the server lists it (listed once, then kept)."""
        if self._schema is None:
            listed = self._run(self._list(), LIST_SECONDS)
            found = {tool.name: tool for tool in listed}
            if self.tool not in found:
                raise McpRefused(
                    f"MCP server {self.server_name!r} has no tool {self.tool!r}; it has "
                    f"{sorted(found)}"
                )
            self._schema = dict(found[self.tool].inputSchema or {"type": "object"})
        return self._schema

    def call(self, arguments: dict[str, Any]) -> ToolText:
        """Check ``arguments`` against the schema, then call the tool; its content as text."""
        check_arguments(self.schema(), arguments, self.tool)
        result = self._run(self._call(arguments), self.timeout_seconds + LIST_SECONDS)
        text = "\n".join(
            block.text
            if getattr(block, "type", None) == "text"
            else json.dumps(block.model_dump(mode="json", exclude_none=True))
            for block in result.content
        )
        if result.isError:
            raise McpRefused(f"MCP tool {self.tool!r} answered an error: {text[:1500]}")
        if not text and result.structuredContent is not None:
            text = json.dumps(result.structuredContent, ensure_ascii=False)
        return ToolText(content=text)

    def _run(self, work: Any, seconds: float) -> Any:
        """Run one session's work in a loop of its own, within ``seconds`` in all.

        The transport's task groups may wrap what went wrong in an exception group; what
        is inside it decides: a refusal stays one, a timeout is said as such, anything else
        is the server being unavailable.
        """
        try:
            return asyncio.run(asyncio.wait_for(work, seconds))
        except Exception as error:  # the transport's many ways of losing the server
            leaves = list(_leaves(error))
            refused = next((leaf for leaf in leaves if isinstance(leaf, McpRefused)), None)
            if refused is not None:
                raise refused from error
            if any(isinstance(leaf, TimeoutError) for leaf in leaves):
                raise McpUnavailable(
                    f"MCP server {self.server_name!r} did not answer within "
                    f"{self.timeout_seconds:g} s"
                ) from error
            reason = "; ".join(
                " ".join(str(leaf).split()) or type(leaf).__name__ for leaf in leaves
            )
            raise McpUnavailable(
                f"MCP server {self.server_name!r} is unavailable: {reason[:500]}"
            ) from error

    async def _list(self) -> Sequence[Any]:
        async with self._session() as session:
            listed: Sequence[Any] = (await session.list_tools()).tools
            return listed

    async def _call(self, arguments: dict[str, Any]) -> Any:
        """The call, within the tool's timeout once the server is up (starting it is not)."""
        async with self._session() as session:
            return await asyncio.wait_for(
                session.call_tool(self.tool, arguments), self.timeout_seconds
            )

    def _session(self) -> Any:
        return _Session(self.server)


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions an exception group holds, however deep; the error itself otherwise."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


class _Session:
    """An initialized ``mcp.ClientSession`` over the server's transport, closed on exit."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self._stack: Any = None

    async def __aenter__(self) -> Any:
        from contextlib import AsyncExitStack

        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        self._stack = AsyncExitStack()
        try:
            if self.server.command is not None:
                params = StdioServerParameters(
                    command=self.server.command, args=list(self.server.args), env=self.server.env
                )
                read, write = await self._stack.enter_async_context(stdio_client(params))
            else:
                assert self.server.url is not None
                read, write, _ = await self._stack.enter_async_context(
                    streamable_http_client(self.server.url)
                )
            session = await self._stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
        except BaseException:
            await self._stack.aclose()
            raise
        return session

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


def check_arguments(schema: Mapping[str, Any], arguments: dict[str, Any], tool: str) -> None:
    """Refuse arguments the tool's JSON Schema refuses, naming the field and the rule."""
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=lambda e: e.path)
    if errors:
        first = errors[0]
        where = ".".join(str(part) for part in first.absolute_path) or "(input)"
        raise McpRefused(f"arguments for MCP tool {tool!r}: {where}: {first.message[:500]}")


class McpArguments(BaseModel):
    """Arguments of an MCP tool, checked against its own input schema when it is called."""

    model_config = ConfigDict(extra="allow")
    mcp_tool: ClassVar[McpTool]

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The tool's own input schema, as a model binding the tool is shown it."""
        try:
            return cls.mcp_tool.schema()
        except (McpRefused, McpUnavailable):
            return {"type": "object", "description": "The server could not list its schema."}


def tool_spec(grant: McpGrant, server: McpServer) -> ToolSpec:
    """The declaration of ``grant``'s tool: the boundary's bounds, the MCP call as its code."""
    tool = McpTool(grant.server, server, grant.tool, grant.timeout_seconds)
    arguments: type[McpArguments] = type(
        f"{grant.declared_name.title().replace('_', '')}Arguments",
        (McpArguments,),
        {"__doc__": f"Arguments of the MCP tool {grant.tool!r} of server {grant.server!r}."},
    )
    arguments.mcp_tool = tool

    def run(args: BaseModel, env: ToolEnv) -> ToolText:
        return tool.call(args.model_dump())

    return ToolSpec(
        name=grant.declared_name,
        input=arguments,
        output=ToolText,
        kind=grant.kind,
        timeout_seconds=grant.timeout_seconds
        + 2 * LIST_SECONDS,  # list, start, call: ours end first
        max_calls=grant.max_calls,
        trim_bytes=grant.trim_bytes,
        errors={McpUnavailable: "retryable", McpRefused: "fix_arguments"},
        run=run,
    )


@dataclass(frozen=True)
class McpExport:
    """The export step's write sent to an MCP server's tool instead of the export folder.

    It is the code of the declared ``export_article`` write tool, so everything about the
    write is that tool's: a person confirms the call, it runs at most once per call id,
    its effect is recorded before the node goes on, and a call the server could not take
    is retryable. The tool gets the article's text and its file name (``arguments`` says
    under which of its argument names).
    """

    tool: McpTool
    arguments: Mapping[str, str]

    def target(self, args: ExportArticleInput) -> str:
        """What a person is asked to confirm: where the article goes."""
        return f"MCP tool {self.tool.tool!r} of server {self.tool.server_name!r} ({args.file_name})"

    def __call__(self, args: ExportArticleInput, env: ToolEnv) -> ExportArticleOutput:
        """Send the article to the tool; where it went, and the hash of what was sent."""
        data = env.store.get(args.article)
        parts = {
            "markdown": data.decode("utf-8"),
            "file_name": args.file_name,
            "sha256": args.article.sha256,
        }
        self.tool.call({name: parts[part] for name, part in self.arguments.items()})
        where = f"mcp://{self.tool.server_name}/{self.tool.tool}/{args.file_name}"
        return ExportArticleOutput(path=where, sha256=hashlib.sha256(data).hexdigest())


def mcp_export(servers: Mapping[str, McpServer], grants: Sequence[McpGrant]) -> McpExport | None:
    """The export's code from a write grant, or None when no grant writes."""
    writes = [grant for grant in grants if grant.kind == "write"]
    if not writes:
        return None
    if len(writes) > 1:
        raise ValueError("HANDOFF_MCP_TOOLS: one write grant at most (the export step's)")
    [grant] = writes
    if grant.node != EXPORT_NODE:
        raise ValueError(
            f"HANDOFF_MCP_TOOLS: an MCP write tool serves the export step's write (node "
            f"{EXPORT_NODE!r}), which a person confirms first; node {grant.node!r} writes "
            "nothing that could be confirmed"
        )
    server = servers.get(grant.server)
    if server is None:
        raise ValueError(f"HANDOFF_MCP_TOOLS: no server {grant.server!r} in HANDOFF_MCP_SERVERS")
    tool = McpTool(grant.server, server, grant.tool, grant.timeout_seconds)
    arguments = grant.arguments or {"markdown": "markdown", "file_name": "file_name"}
    return McpExport(tool, arguments)


def with_mcp_tools(
    wiring: Wiring, servers: Mapping[str, McpServer], grants: Sequence[McpGrant]
) -> Wiring:
    """``wiring`` with each granted MCP tool added to its node's declared tools.

    A grant naming a node or server that does not exist, or a name that is no tool name or
    that the node already has, is refused here, naming what exists.
    """
    if not grants:
        return wiring
    if importlib.util.find_spec("mcp") is None:
        raise ValueError(
            "HANDOFF_MCP_TOOLS gives nodes MCP tools, but the mcp package is not installed: "
            "pip install 'handoff-workflow[mcp]'"
        )
    nodes = {spec.name: spec for spec, _ in wiring}
    added: dict[str, list[ToolSpec]] = {}
    for grant in grants:
        if grant.kind == "write":  # the code of the export's write tool (``mcp_export``)
            continue
        if grant.node not in nodes:
            raise ValueError(f"HANDOFF_MCP_TOOLS: no node {grant.node!r}; nodes: {sorted(nodes)}")
        if grant.server not in servers:
            raise ValueError(
                f"HANDOFF_MCP_TOOLS: no server {grant.server!r} in HANDOFF_MCP_SERVERS "
                f"({sorted(servers)})"
            )
        name = grant.declared_name
        taken = [tool.name for tool in (*nodes[grant.node].tools, *added.get(grant.node, []))]
        if not NAME.match(name) or name in taken:
            raise ValueError(
                f"HANDOFF_MCP_TOOLS: tool name {name!r} for node {grant.node!r} is "
                + ("taken" if name in taken else "not lower_snake_case")
                + '; give the grant a "name"'
            )
        added.setdefault(grant.node, []).append(tool_spec(grant, servers[grant.server]))
    return tuple(
        (replace(spec, tools=(*spec.tools, *added[spec.name])) if spec.name in added else spec, r)
        for spec, r in wiring
    )
