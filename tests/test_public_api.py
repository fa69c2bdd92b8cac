"""The public namespaces export exactly the curated names (as httpx pins its ``__all__``),
and every SDK type their signatures name."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import sys
import textwrap
import types
import typing
from collections.abc import Iterator
from typing import Any

import pytest

import agentproto
import agentproto.acp
import agentproto.agui
import agentproto.agui.asgi
from agentproto.agui import RunRecord
from agentproto.agui._consume.chunks import ChunkExpander

EXPECTED_ALL = {
    "agentproto": [
        "AgentProtoError",
        "CursorError",
        "CursorExpiredError",
        "DecodeError",
        "Diagnostic",
        "InternalError",
        "LimitError",
        "MissingDependencyError",
        "PatchError",
        "ProtocolError",
        "SchemaError",
        "StoreError",
        "UnknownStreamError",
        "UsageError",
        "WireConverter",
        "log_diagnostics",
    ],
    "agentproto.stores": [
        "Entry",
        "EventLog",
        "MemoryEventLog",
        "MemoryThreadStore",
        "Page",
        "RedisEventLog",
        "RedisThreadStore",
        "Retention",
        "SQLiteEventLog",
        "SQLiteThreadStore",
        "ThreadStore",
    ],
    "agentproto.agui": [
        "Attribution",  # the keyword-argument types of the producer's helpers
        "CAPABILITY_FLAGS",  # capabilities: declarations and their queries
        "Capabilities",
        "dump_capabilities",
        "parse_capabilities",
        "StateShapeError",  # the typed view of the state
        "StateView",
        "SubagentInvocation",  # each invocation's status
        "SubagentStatus",
        "RunFinish",
        "SubagentStart",
        "Change",
        "Compaction",
        "Consumer",
        "DecoderOptions",  # the keyword-argument type of the Consumer's decoder options
        "Conversation",
        "Event",
        "EventDecoder",
        "EventStreamResponse",
        "History",
        "InterruptLookup",
        "HttpAgent",  # the HTTP agent clients (httpx, imported on first use) and their errors
        "AsyncHttpAgent",
        "HttpError",
        "HttpStatusError",
        "HttpTimeoutError",
        "Message",
        "Middleware",
        "NextStage",
        "OpenInterrupts",
        "PROTOCOL_VERSION",
        "PatchLike",
        "Phase",
        "Reconnect",
        "WebSocketAgent",  # deprecated alias of RunPhase, for one release
        "RunPhase",
        "ReasoningMessageWriter",
        "ReasoningSpan",
        "RecordedRun",
        "RunOutcome",
        "RunProducer",
        "RunRecord",
        "RunResult",  # what HttpAgent.run_to_end returns
        "RunScope",
        "RunStatus",
        "Sink",
        "StepScope",
        "SubagentOutcome",
        "SubagentScope",
        "TextMessageWriter",
        "ToolCallWriter",
        "ToolFunction",
        "Transport",
        "Verifier",
        "aanswer_tool_calls",
        "answer_tool_calls",
        "unanswered_tool_calls",
        "aconsume",
        "agent_api_route",
        "agent_app",
        "agent_route",
        "agent_router",
        "aiter_events",
        "asgi",
        "compact_events",
        "consume",
        "dump_event",
        "dump_run_input",
        "encode_event_jsonl",
        "encode_event_sse",
        "encode_jsonl_stream",
        "encode_sse_stream",
        "iter_events",
        "make_converter",
        "next_run_input",
        "parse_event",
        "parse_message",
        "parse_run_input",
        "quirks",
        "run_events",
        "run_input_schema",
        "schema",
        "stream_headers",
    ],
    "agentproto.agui.quirks": [
        "DOTNET_MISSING_MESSAGE_ID",
        "KNOWN_QUIRKS",
        "QUIRK_REPAIRED",
        "DotnetEmptyParentMessageId",
        "LangGraphRunId",
        "StreamQuirk",
        "repair_dotnet_message_ids",
    ],
    "agentproto.acp.agent": ["Agent", "AgentSession"],
    "agentproto.acp.client": ["AcpClient", "ClientHandlers", "ClientSession"],
    "agentproto.acp.connection": [
        "AgentSideConnection",
        "BatchCall",
        "ByteReader",
        "ByteWriter",
        "ClientSideConnection",
        "Connection",
    ],
    "agentproto.agui.asgi": [
        "ASGIApp",
        "ASGIMessage",
        "AgentHandler",
        "DEFAULT_MAX_BODY_BYTES",
        "EventStreamResponse",
        "Events",
        "Receive",
        "Scope",
        "Send",
        "agent_app",
        "run_events",
    ],
    "agentproto.acp": [
        # writing an agent
        "Agent",
        "AgentSession",
        "SessionUpdates",
        "ToolCall",
        "Terminal",
        "Foreground",
        "Phase",  # deprecated alias of TurnPhase, for one release
        "TurnPhase",
        "Content",
        "PermissionDecision",
        "AgentRunner",
        "serve_agent",
        "run_agent",
        "acp_app",  # serving it over HTTP and WebSocket
        # writing a client
        "AcpClient",
        "ClientHandlers",
        "ClientSession",
        "Answer",
        "UnstableCalls",
        "Reconnect",  # how AcpClient.connect_url reopens a broken stream
        # connections and their errors
        "Connection",
        "AgentSideConnection",
        "ClientSideConnection",
        "BatchCall",
        "Side",
        "ByteReader",
        "ByteWriter",
        "MethodHandler",
        "ExtensionHandler",
        "MemoryPipe",
        "RpcError",
        "RpcErrorCode",
        "AuthRequiredError",
        "ConnectionClosedError",
        "RequestTimeoutError",
        "PeerProtocolError",  # deprecated alias of agentproto.ProtocolError, for one release
        "UnsupportedVersionError",
        # session updates and state
        "CompactionState",
        "Entity",
        "JsonRpcMessage",
        "MessageReader",
        "MessageState",
        "Meta",
        "Notification",
        "PlanState",
        "Request",
        "Response",
        "SessionInfoState",
        "SessionMessageState",
        "SessionState",
        "SessionStore",
        "SessionUpdate",
        "SubagentState",
        "TerminalState",
        "ToolCallState",
        "UNSET",
        "Unset",
        "V1ToV2Adapter",
        "V2ToV1Adapter",
        "apply_meta_update",
        "combine",
        "dump_session_update",
        "encode_message",
        "make_converter",
        "make_v1_converter",
        "parse_jsonrpc_message",
        "parse_permission_request",
        "parse_session_notification",
        "parse_session_update",
        "permission_request",
        "resync_update",
        "schema",
        "schema_v1",
        "session_notification",
    ],
}


def _module(name: str) -> types.ModuleType:
    return importlib.import_module(name)


@pytest.mark.parametrize("name", sorted(EXPECTED_ALL))
def test_all_is_pinned(name: str) -> None:
    """A public package's ``__all__`` is exactly the pinned list (adding a name is a decision)."""
    assert sorted(_module(name).__all__) == sorted(EXPECTED_ALL[name])
    assert len(set(_module(name).__all__)) == len(_module(name).__all__)


@pytest.mark.parametrize("name", sorted(EXPECTED_ALL))
def test_all_names_exist(name: str) -> None:
    """Every name a public package lists in ``__all__`` is an attribute of it."""
    module = _module(name)
    missing = [attr for attr in module.__all__ if not hasattr(module, attr)]
    assert missing == []


def test_schema_namespaces_reach_generated_classes() -> None:
    """The typed layers are reachable as ``agentproto.agui.schema`` / ``agentproto.acp.schema``."""
    from agentproto.acp._generated_v2 import ToolCallUpdateSessionUpdate
    from agentproto.agui._generated import TextMessageStartEvent

    assert agentproto.agui.schema.TextMessageStartEvent is TextMessageStartEvent
    assert agentproto.acp.schema.ToolCallUpdateSessionUpdate is ToolCallUpdateSessionUpdate


def test_exported_exceptions_share_the_root() -> None:
    """Every exception class ``agentproto`` exports subclasses ``agentproto.AgentProtoError``."""
    exported = [getattr(agentproto, name) for name in agentproto.__all__]
    exceptions = [obj for obj in exported if isinstance(obj, type) and issubclass(obj, Exception)]
    assert exceptions, "agentproto exports no exception class"
    for exc in exceptions:
        assert issubclass(exc, agentproto.AgentProtoError), exc


HAND_WRITTEN_NAMESPACES = (
    "agentproto",
    "agentproto.agui",
    "agentproto.agui.asgi",
    "agentproto.agui.quirks",
    "agentproto.acp",
    "agentproto.acp.agent",
    "agentproto.acp.client",
    "agentproto.acp.connection",
)
"""The namespaces of the hand-written API (the schema namespaces hold each schema's own names)."""
DEPRECATED_ALIASES = {
    "Phase": {"agentproto.agui": "RunPhase", "agentproto.acp": "TurnPhase"},
}
"""Names kept for one release, each an alias of another name of the same module."""
COUNTERPARTS = {"make_converter", "schema"}
"""Names each protocol package has for the same role in its own protocol (its converter
factory, its typed layer)."""


def test_a_name_exported_twice_is_one_object() -> None:
    """A name several public modules export is the same object in each, unless it is a
    deprecated alias (then it is its module's own name's object) or a protocol counterpart."""
    homes: dict[str, list[tuple[str, Any]]] = {}
    for module_name in HAND_WRITTEN_NAMESPACES:
        module = _module(module_name)
        for name in module.__all__:
            homes.setdefault(name, []).append((module_name, getattr(module, name)))
    for name, found in sorted(homes.items()):
        if len({id(value) for _, value in found}) == 1 or name in COUNTERPARTS:
            continue
        assert name in DEPRECATED_ALIASES, f"{name} means different things in {found}"
        for module_name, value in found:
            target = DEPRECATED_ALIASES[name][module_name]
            assert value is getattr(_module(module_name), target), (module_name, name)
            assert target in _module(module_name).__all__


def test_the_phase_aliases_keep_their_meaning() -> None:
    """``agentproto.agui.Phase`` is the producer's RunPhase and ``agentproto.acp.Phase`` the
    session turn's TurnPhase, for one release."""
    assert agentproto.agui.Phase is agentproto.agui.RunPhase
    assert agentproto.acp.Phase is agentproto.acp.TurnPhase
    assert typing.get_args(agentproto.agui.RunPhase) == ("idle", "running", "finished", "errored")
    assert typing.get_args(agentproto.acp.TurnPhase) == ("idle", "running", "requires_action")


def test_the_two_parse_messages_are_told_apart() -> None:
    """``agentproto.agui.parse_message`` parses an AG-UI conversation message, and the ACP
    JSON-RPC message parser is public as ``agentproto.acp.parse_jsonrpc_message``."""
    from agentproto.acp._protocol import jsonrpc as _jsonrpc

    message = agentproto.agui.parse_message({"id": "m", "role": "user", "content": "hi"})
    assert isinstance(message, agentproto.agui.schema.UserMessage)
    assert agentproto.acp.parse_jsonrpc_message is _jsonrpc.parse_message
    notification = agentproto.acp.parse_jsonrpc_message(
        {"jsonrpc": "2.0", "method": "session/update", "params": {}}
    )
    assert isinstance(notification, agentproto.acp.Notification)
    assert "AG-UI" in (agentproto.agui.parse_message.__doc__ or "")
    assert "JSON-RPC" in (agentproto.acp.parse_jsonrpc_message.__doc__ or "")


# ---- every SDK type a public signature names is exported ---------------------------------

PUBLIC_NAMESPACES = (
    "agentproto",
    "agentproto.stores",
    "agentproto.agui",
    "agentproto.agui.asgi",
    "agentproto.agui.quirks",
    "agentproto.acp",
    "agentproto.acp.agent",
    "agentproto.acp.client",
    "agentproto.acp.connection",
)
"""The namespaces whose ``__all__`` is the public API (and the roots of the walk)."""
SCHEMA_NAMESPACES = ("agentproto.agui.schema", "agentproto.acp.schema", "agentproto.acp.schema_v1")
"""Where the generated classes and aliases are exported."""
_WALKED_DUNDERS = frozenset({"__init__", "__call__", "__enter__", "__aenter__", "__iter__"})


def _exported() -> set[int]:
    """The identities of every exported object."""
    found: set[int] = set()
    for name in PUBLIC_NAMESPACES + SCHEMA_NAMESPACES:
        module = _module(name)
        found.update(id(getattr(module, attr)) for attr in getattr(module, "__all__", dir(module)))
    return found


def _sdk_aliases() -> set[int]:
    """The type aliases hand-written SDK modules define (``X: TypeAlias = ...`` or
    ``X = Literal[...]``-like), by identity of their value."""
    aliases: set[int] = set()
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("agentproto.") or "_generated" in name or module is None:
            continue
        try:
            tree = ast.parse(inspect.getsource(module))
        except (OSError, TypeError):
            continue
        for node in tree.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                target, is_alias = node.target.id, ast.unparse(node.annotation) == "TypeAlias"
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                first = node.targets[0]
                target = first.id if isinstance(first, ast.Name) else ""
                is_alias = isinstance(node.value, ast.Subscript | ast.BinOp)
            else:
                continue
            value = getattr(module, target, None)
            if is_alias and value is not None and not isinstance(value, typing.TypeVar):
                aliases.add(id(value))
    return aliases


def _resolve(expression: ast.expr, namespace: dict[str, Any]) -> Any:
    if isinstance(expression, ast.Name):
        return namespace.get(expression.id, getattr(builtins, expression.id, _MISSING))
    if isinstance(expression, ast.Attribute):
        base = _resolve(expression.value, namespace)
        return getattr(base, expression.attr, _MISSING)
    return _MISSING


_MISSING: Any = object()


def _names_in(annotation: Any, namespace: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Each name an annotation mentions, resolved (a string under postponed evaluation;
    an evaluated annotation is taken apart with ``typing.get_args``)."""
    if not isinstance(annotation, str):
        yield repr(annotation), annotation
        if typing.get_origin(annotation) is not typing.Literal:
            for argument in typing.get_args(annotation):
                yield from _names_in(argument, namespace)
        return
    for node in ast.walk(ast.parse(annotation, mode="eval")):
        if isinstance(node, ast.Name | ast.Attribute):
            yield ast.unparse(node), _resolve(node, namespace)


def _annotations_of(obj: Any) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """(where, annotation, namespace) for what a public function or class declares."""
    if inspect.isfunction(obj):
        functions = [obj, *typing.get_overloads(obj)]
        for function in functions:
            for key, annotation in function.__annotations__.items():
                yield f"{obj.__qualname__}:{key}", annotation, function.__globals__
        return
    if not inspect.isclass(obj):
        return
    for klass in obj.__mro__:
        if not klass.__module__.startswith("agentproto."):
            continue
        namespace = _written_in(klass)
        for key, annotation in vars(klass).get("__annotations__", {}).items():
            if not key.startswith("_"):
                yield f"{obj.__qualname__}.{key}", annotation, namespace
        for key, member in vars(klass).items():
            if key.startswith("_") and key not in _WALKED_DUNDERS:
                continue
            if isinstance(member, property) and member.fget is not None:
                member = member.fget
            if isinstance(member, staticmethod | classmethod):
                member = member.__func__
            if inspect.isfunction(member):
                yield from _annotations_of(member)
        yield from _instance_attributes(klass, namespace)


def _written_in(klass: type) -> dict[str, Any]:
    """The globals of the module that wrote ``klass`` (its ``__module__`` names the public
    module that exports it): those of a function written in its body, if any."""
    for member in vars(klass).values():
        function = getattr(member, "fget", None) or getattr(member, "__func__", member)
        code = getattr(function, "__code__", None)
        if inspect.isfunction(function) and code and not code.co_filename.startswith("<"):
            return function.__globals__
    return vars(sys.modules[klass.__module__])


def _instance_attributes(
    klass: type, namespace: dict[str, Any]
) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """The public attributes ``__init__`` sets: annotated ones, and ``self.x = Class(...)``."""
    init = vars(klass).get("__init__")
    if not inspect.isfunction(init) or init.__code__.co_filename.startswith("<"):
        return  # none, or written by attrs (its fields are the class annotations)
    tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            target, annotation = node.target, ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            target, annotation = node.targets[0], ast.unparse(node.value.func)
        else:
            continue
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and not target.attr.startswith("_")
        ):
            yield f"{klass.__qualname__}.{target.attr}", annotation, init.__globals__


def _is_sdk(obj: Any, aliases: set[int]) -> bool:
    if inspect.isclass(obj):
        return obj.__module__.startswith("agentproto.")
    return id(obj) in aliases


KNOWN_GAPS = {
    # the compiled-loader plumbing the runtime modules share (agentproto._core.wire.converter):
    # public methods of WireConverter naming its private per-call context; to be made
    # private there rather than exported
    "WireConverter.loader:return: Loader",
    "WireConverter.method_loader:return: _Context",
}


def _unexported(roots: list[Any]) -> set[str]:
    """What the signatures reachable from ``roots`` name that no public namespace exports."""
    exported, aliases = _exported(), _sdk_aliases()
    fallback = {
        attr: getattr(_module(name), attr)
        for name in PUBLIC_NAMESPACES
        for attr in _module(name).__all__
    }
    queue = list(roots)
    seen: set[int] = set()
    problems: set[str] = set()
    while queue:
        obj = queue.pop()
        if id(obj) in seen or isinstance(obj, types.ModuleType):
            continue
        seen.add(id(obj))
        if inspect.isclass(obj) and "_generated" in obj.__module__:
            continue  # the typed layer names only its own classes
        for where, annotation, namespace in _annotations_of(obj):
            for text, value in _names_in(annotation, {**fallback, **namespace}):
                if value is _MISSING:
                    if text in _third_party_for_typing(namespace):
                        continue  # an optional framework's class, e.g. starlette's Route
                    problems.add(f"{where}: {text} (not importable from a public namespace)")
                elif _is_sdk(value, aliases):
                    if id(value) not in exported:
                        problems.add(f"{where}: {text}")
                    queue.append(value)
    return problems


def _third_party_for_typing(namespace: dict[str, Any]) -> set[str]:
    """The names a module imports only for type checking (``if TYPE_CHECKING:``) from a
    package that is not agentproto: classes of optional dependencies, which a public
    signature may name without the SDK exporting (or importing) them."""
    module = sys.modules.get(namespace.get("__name__", ""))
    try:
        tree = ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError):
        tree = None
    names: set[str] = set()
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imported in node.body:
                if isinstance(imported, ast.ImportFrom) and not (
                    imported.module or "agentproto"
                ).startswith("agentproto"):
                    names.update(alias.asname or alias.name for alias in imported.names)
    return names


def test_public_signatures_name_only_exported_types() -> None:
    """Every SDK class or type alias a public function, method, property or attribute takes
    or returns is exported (followed transitively through the classes it reaches)."""
    roots = [
        getattr(_module(name), attr) for name in PUBLIC_NAMESPACES for attr in _module(name).__all__
    ]
    problems = _unexported(roots) - KNOWN_GAPS
    assert sorted(problems) == [], "\n".join(sorted(problems))


def _returns_unexported(record: RunRecord) -> ChunkExpander:
    raise NotImplementedError


def test_the_walk_catches_an_unexported_type() -> None:
    """The signature walk reports an SDK class that is not exported, and follows exported
    classes to what their own signatures name."""
    problems = _unexported([_returns_unexported])
    assert "_returns_unexported:return: ChunkExpander" in problems
    assert not any(p.startswith("_returns_unexported:record") for p in problems)
    assert _unexported([agentproto.agui.Consumer]) <= KNOWN_GAPS


def test_version_is_the_installed_distributions() -> None:
    """``agentproto.__version__`` is the installed metadata's version, whose one source is
    ``pyproject.toml``; reading it is not part of ``import agentproto``."""
    import importlib.metadata
    import subprocess
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
    assert agentproto.__version__ == importlib.metadata.version("agentproto") == declared
    lazy = "import sys, agentproto; print('importlib.metadata' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", lazy], capture_output=True, check=True)
    assert done.stdout.strip() == b"False"
