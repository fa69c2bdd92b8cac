"""``agentproto acp replay``: fold a recorded ACP log and print the final state.

The log is newline-delimited JSON-RPC 2.0, as exchanged over stdio:
``session/update`` notifications are applied to their session,
``session/request_permission`` requests patch the stored tool call of their
tool-call subject, and every other message is ignored with a diagnostic (see
:class:`~agentproto.acp.SessionStore`, used tolerantly).

Lines are read by the SDK's one line reader (the depth limit and exact big
integers of AG-UI input). Output: with ``--json`` one compact JSON object
(integers of any size written exactly),
``{"sessions": {"<sessionId>": {"entities": {...}}}, "diagnostics": [{"line",
"code", "message"}]}``; without it a readable summary. Exit status: 0 when the
log was read (diagnostics included), 1 on a fatal input error (a line that is
not a JSON-RPC message; its number is in the message), 2 on a usage or I/O
error.
"""

from __future__ import annotations

import sys
from importlib import resources
from typing import Any, TextIO

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import DecodeError
from agentproto._core.jsonutil import dumps
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._session import (
    CompactionState,
    MessageState,
    PlanState,
    SessionInfoState,
    SessionMessageState,
    SessionState,
    SubagentState,
    TerminalState,
    ToolCallState,
)
from agentproto.acp._store import SessionStore

__all__ = ["example_log", "replay_bytes", "replay_json", "run_replay", "summary"]

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2


def example_log() -> bytes:
    """The bundled example log (``agentproto/acp/examples/session.ndjson``)."""
    return resources.files("agentproto.acp").joinpath("examples/session.ndjson").read_bytes()


def replay_bytes(data: bytes) -> SessionStore:
    """Fold a whole NDJSON log into a tolerant :class:`SessionStore`.

    Raises:
        DecodeError: a line is not a JSON-RPC message (fatal).
    """
    store = SessionStore()
    store.feed(data)
    store.close()
    return store


def _diagnostic_json(diagnostic: Diagnostic) -> dict[str, Any]:
    message = diagnostic.message
    if diagnostic.path:
        message = f"{message} (at {diagnostic.path})"
    return {"line": diagnostic.index, "code": diagnostic.code, "message": message}


def replay_json(store: SessionStore) -> dict[str, Any]:
    """The ``--json`` object: every session's entities and the diagnostics."""
    return {
        "sessions": store.to_json()["sessions"],
        "diagnostics": [_diagnostic_json(diagnostic) for diagnostic in store.diagnostics],
    }


# ---- the readable summary -----------------------------------------------------------------


def _meta_keys(meta: dict[str, Any] | None) -> str:
    return f"; _meta: {', '.join(meta)}" if meta else ""


def _count(items: list[Any], noun: str, plural: str | None = None) -> str:
    return f"{len(items)} {noun if len(items) == 1 else plural or noun + 's'}"


def _describe(value: Any) -> str:
    """One line about an entity."""
    if isinstance(value, ToolCallState):
        title = repr(value.title) if value.title is not None else "(no title)"
        parts = [f"{title} {value.kind}, {value.status}"]
        if value.content:
            parts.append(_count(value.content, "content item"))
        return ", ".join(parts) + _meta_keys(value.meta)
    if isinstance(value, TerminalState):
        parts = [repr(value.command) if value.command is not None else "(no command)"]
        if value.output is not None:
            parts.append(f"{len(value.output)} bytes of output")
        if value.exit_status is not None:
            code = value.exit_status.exit_code
            parts.append(f"exited {code}" if code is not None else "exited")
        return ", ".join(parts) + _meta_keys(value.meta)
    if isinstance(value, MessageState | SessionMessageState):
        text = "".join(getattr(block, "text", "") for block in value.content)
        shown = text if len(text) <= 60 else text[:57] + "..."
        return f"{_count(value.content, 'block')} {shown!r}" + _meta_keys(value.meta)
    if isinstance(value, SessionInfoState):
        return f"title {value.title!r}, updated {value.updated_at}" + _meta_keys(value.meta)
    if isinstance(value, CompactionState):
        return f"{value.status}, {_count(value.summary, 'summary block')}" + _meta_keys(value.meta)
    if isinstance(value, SubagentState):
        return f"title {value.title!r}" + _meta_keys(value.meta)
    if isinstance(value, PlanState):
        entries = getattr(value.plan, "entries", None)
        if isinstance(entries, list):
            return _count(entries, "entry", "entries") + _meta_keys(value.meta)
        return f"{value.plan.type} plan" + _meta_keys(value.meta)
    if isinstance(value, list):
        return _count(value, "notice")
    if isinstance(value, v2.UsageUpdateSessionUpdate):
        return f"{value.used} of {value.size} tokens"
    if isinstance(value, v2.AvailableCommandsUpdateSessionUpdate):
        return _count(value.available_commands, "command")
    if isinstance(value, v2.ConfigOptionUpdateSessionUpdate):
        return _count(value.config_options, "option")
    state = (getattr(value, "extra", None) or {}).get("state")
    return f"state {state!r}" if state is not None else "latest value"


def summary(store: SessionStore) -> str:
    """The readable summary: per session one line per entity, then the diagnostics."""
    lines: list[str] = []
    for session_id, state in store.sessions.items():
        lines.append(f"session {session_id}: {_count(state.keys(), 'entity', 'entities')}")
        lines.extend(_entity_lines(state))
    if not store.sessions:
        lines.append("no sessions")
    lines.append(_count(store.diagnostics, "diagnostic"))
    for diagnostic in store.diagnostics:
        where = f"line {diagnostic.index}: " if diagnostic.index is not None else ""
        lines.append(f"  {where}{diagnostic}")
    return "\n".join(lines)


def _entity_lines(state: SessionState) -> list[str]:
    keys = state.keys()
    width = max((len(key) for key in keys), default=0)
    return [f"  {key.ljust(width)}  {_describe(value)}" for key, value in state.entities()]


# ---- the command --------------------------------------------------------------------------


def run_replay(
    path: str | None,
    *,
    as_json: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run ``agentproto acp replay [FILE] [--json]``.

    Args:
        path: the log to read; ``None`` for the bundled example, ``-`` for stdin.
        as_json: print the JSON object instead of the summary.
        stdout: where the result goes (default ``sys.stdout``).
        stderr: where errors go (default ``sys.stderr``).

    Returns:
        The exit status: 0, 1 (fatal input error) or 2 (I/O error).
    """
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    name = "<example>" if path is None else path
    try:
        if path is None:
            data = example_log()
        elif path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
    except OSError as error:
        err.write(f"agentproto acp replay: cannot read {name}: {error.strerror or error}\n")
        return EXIT_USAGE
    try:
        store = replay_bytes(data)
    except DecodeError as error:
        err.write(f"agentproto acp replay: {name}: {error}\n")
        return EXIT_INPUT
    if as_json:
        _write(out, dumps(replay_json(store)) + b"\n")
    else:
        _write(out, (summary(store) + "\n").encode("utf-8"))
    return EXIT_OK


def _write(out: TextIO, data: bytes) -> None:
    """Write UTF-8 bytes, to the underlying binary stream when there is one.

    The output is UTF-8 whatever the locale's encoding, so ids and text that are not
    ASCII never fail to print.
    """
    binary = getattr(out, "buffer", None)
    if binary is None:
        out.write(data.decode("utf-8"))
        return
    out.flush()
    binary.write(data)
    binary.flush()
