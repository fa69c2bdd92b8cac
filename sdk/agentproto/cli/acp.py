"""``agentproto acp replay``: fold a recorded ACP log and print the final state.

The whole fold is the public :class:`~agentproto.acp.SessionStore` (sans I/O);
this module is the edge around it: reading the log, printing the result.

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
from collections.abc import Sized
from importlib import resources
from typing import Any, TextIO

from agentproto import acp
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import AgentProtoError
from agentproto._core.json.codec import dumps
from agentproto.acp import SessionStore
from agentproto.acp import _generated_v2 as v2
from agentproto.cli._text import clip, preview, write_utf8

__all__ = ["entity_lines", "example_log", "replay_bytes", "replay_json", "run_replay", "summary"]

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2


EXAMPLE = "acp_session.ndjson"
"""The bundled example log (package data of :mod:`agentproto.cli`, in ``data/``), used
when no file is given."""


def example_log() -> bytes:
    """The bundled example log (``agentproto/cli/data/acp_session.ndjson``)."""
    return resources.files("agentproto.cli").joinpath("data").joinpath(EXAMPLE).read_bytes()


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
    return {"line": diagnostic.line, "code": diagnostic.code, "message": message}


def replay_json(store: SessionStore) -> dict[str, Any]:
    """The ``--json`` object: every session's entities and the diagnostics."""
    return {
        "sessions": store.to_json()["sessions"],
        "diagnostics": [_diagnostic_json(diagnostic) for diagnostic in store.diagnostics],
    }


# ---- the readable summary -----------------------------------------------------------------


def _quote(value: Any, width: int = 60) -> str:
    """A bounded ``repr`` of a string (``'text'``, cut with ``…``); other values previewed."""
    if not isinstance(value, str):
        return preview(value, width)
    return repr(value if len(value) <= width else value[: width - 1] + "…")


def _meta_keys(meta: dict[str, Any] | None) -> str:
    if not meta:
        return ""
    keys = ((", " if number else "") + preview(key, 40) for number, key in enumerate(meta))
    return "; _meta: " + clip(keys, 80)


def _count(items: Sized, noun: str, plural: str | None = None) -> str:
    return f"{len(items)} {noun if len(items) == 1 else plural or noun + 's'}"


def _text(blocks: list[Any], width: int = 60) -> str:
    """The text of a message's blocks, read only as far as it is shown."""
    texts = (getattr(block, "text", "") for block in blocks)
    return clip((t[: width + 1] for t in texts if isinstance(t, str)), width, "...")


def _describe_call(value: acp.ToolCallState) -> str:
    title = _quote(value.title) if value.title is not None else "(no title)"
    parts = [f"{title} {preview(value.kind, 40)}, {preview(value.status, 40)}"]
    if value.content:
        parts.append(_count(value.content, "content item"))
    return ", ".join(parts) + _meta_keys(value.meta)


def _describe_terminal(value: acp.TerminalState) -> str:
    parts = [_quote(value.command) if value.command is not None else "(no command)"]
    if value.output is not None:
        parts.append(f"{len(value.output)} bytes of output")
    if value.exit_status is not None:
        code = value.exit_status.exit_code
        parts.append(f"exited {preview(code, 40)}" if code is not None else "exited")
    return ", ".join(parts) + _meta_keys(value.meta)


def _describe(value: Any) -> str:
    """One line about an entity, every value in it bounded."""
    if isinstance(value, acp.ToolCallState):
        return _describe_call(value)
    if isinstance(value, acp.TerminalState):
        return _describe_terminal(value)
    if isinstance(value, acp.MessageState | acp.SessionMessageState):
        shown = repr(_text(value.content))
        return f"{_count(value.content, 'block')} {shown}" + _meta_keys(value.meta)
    meta = _meta_keys(getattr(value, "meta", None))
    if isinstance(value, acp.SessionInfoState):
        return f"title {_quote(value.title)}, updated {preview(value.updated_at, 40)}" + meta
    if isinstance(value, acp.CompactionState):
        return f"{preview(value.status, 40)}, {_count(value.summary, 'summary block')}" + meta
    if isinstance(value, acp.SubagentState):
        return f"title {_quote(value.title)}" + meta
    if isinstance(value, acp.PlanState):
        entries = getattr(value.plan, "entries", None)
        if isinstance(entries, list):
            return _count(entries, "entry", "entries") + meta
        return f"{preview(value.plan.type, 40)} plan" + meta
    if isinstance(value, list):
        return _count(value, "notice")
    if isinstance(value, v2.UsageUpdateSessionUpdate):
        return f"{preview(value.used, 40)} of {preview(value.size, 40)} tokens"
    if isinstance(value, v2.AvailableCommandsUpdateSessionUpdate):
        return _count(value.available_commands, "command")
    if isinstance(value, v2.ConfigOptionUpdateSessionUpdate):
        return _count(value.config_options, "option")
    state = (getattr(value, "extra", None) or {}).get("state")
    return f"state {_quote(state)}" if state is not None else "latest value"


def summary(store: SessionStore) -> str:
    """The readable summary: per session one line per entity, then the diagnostics.

    Every id, text and value in it is cut to a bounded preview.
    """
    lines: list[str] = []
    for session_id, state in store.sessions.items():
        count = _count(state.keys(), "entity", "entities")
        lines.append(f"session {preview(session_id, 80)}: {count}")
        lines.extend(entity_lines(state))
        if state.unknown:
            kinds = (
                (", " if number else "") + _quote(update.session_update, 40)
                for number, update in enumerate(state.unknown)
            )
            noun = _count(state.unknown, "update")
            lines.append(f"  + {noun} of unknown kinds kept unapplied: {clip(kinds, 80)}")
    if not store.sessions:
        lines.append("no sessions")
    lines.append(_count(store.diagnostics, "diagnostic"))
    for diagnostic in store.diagnostics:
        where = f"line {diagnostic.line}: " if diagnostic.line is not None else ""
        lines.append(f"  {where}{preview(str(diagnostic), 300)}")
    return "\n".join(lines)


def entity_lines(state: acp.SessionState) -> list[str]:
    """One indented line per entity of ``state`` (key, then a bounded description)."""
    rows = [(preview(key, 60), _describe(value)) for key, value in state.entities()]
    width = max((len(key) for key, _ in rows), default=0)
    return [f"  {key.ljust(width)}  {description}" for key, description in rows]


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
    except AgentProtoError as error:
        err.write(f"agentproto acp replay: {name}: {preview(str(error), 2000)}\n")
        return EXIT_INPUT
    if as_json:
        write_utf8(out, dumps(replay_json(store)) + b"\n")
    else:
        write_utf8(out, (summary(store) + "\n").encode("utf-8"))
    return EXIT_OK
