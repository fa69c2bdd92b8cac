"""Run the runtime of a copied tree on the input an evolution test needs; print JSON.

``python evolution_probe.py NAME TREE``, with ``PYTHONPATH=TREE/sdk`` (see
``evolution.probe``): imports ``agentproto`` from the copy (whose sealed modules were
regenerated from an edited schema), feeds it the input of probe ``NAME`` and prints one
line of JSON saying what the runtime did: what it delivered, kept, reported and raised.
It never raises itself; the test decides what is right.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

THREAD = {"threadId": "t1", "runId": "r1"}


def _error(exc: BaseException) -> dict[str, Any]:
    """An exception as JSON, with the innermost runtime frame it came from."""
    frames = [
        f"{Path(f.filename).name}:{f.lineno}"
        for f in traceback.extract_tb(exc.__traceback__)
        if "/agentproto/" in f.filename.replace("\\", "/")
    ]
    return {
        "type": type(exc).__name__,
        "code": getattr(exc, "code", None),
        "message": str(exc),
        "site": frames[-1] if frames else None,
    }


def _diagnostics(found: list[Any]) -> list[dict[str, Any]]:
    return [
        {"code": d.code, "message": d.message, "path": d.path, "subject": d.subject} for d in found
    ]


def _attempt(action: Callable[..., Any], *args: Any) -> tuple[Any, dict[str, Any] | None]:
    """``action(*args)``, and the exception it raised (as JSON) instead of raising it."""
    try:
        return action(*args), None
    except Exception as exc:
        return None, _error(exc)


# ---- AG-UI ---------------------------------------------------------------------------------


def _text(message_id: str, text: str, **start: Any) -> list[dict[str, Any]]:
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, **start},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text},
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


def _run(*events: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "RUN_STARTED", **THREAD}, *events, {"type": "RUN_FINISHED", **THREAD}]


def _consume(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Feed a whole stream to a Consumer; what it delivered, reported, built and raised."""
    from agentproto.agui import Consumer

    consumer = Consumer()
    delivered: list[Any] = []

    def feed() -> None:
        delivered.extend(consumer.feed_all(events))
        delivered.extend(consumer.close())

    _, error = _attempt(feed)
    messages, read_error = _attempt(lambda: consumer.conversation.to_json()["messages"])
    typed, typed_error = _attempt(
        lambda: [type(m).__name__ for m in consumer.conversation.messages]
    )
    return {
        "error": error,
        "delivered": [e.type for e in delivered],
        "diagnostics": _diagnostics(consumer.diagnostics),
        "runs": [run.status for run in consumer.verifier.runs],
        "messages": messages,
        "messages_error": read_error,
        "typed_messages": typed,
        "typed_messages_error": typed_error,
    }


def _agui_new_event_type() -> dict[str, Any]:
    from agentproto.agui import Conversation, parse_event

    progress = {"type": "PROGRESS", "progress": 0.5}
    result = _consume(_run(progress, *_text("m1", "hi")))
    event, parse_error = _attempt(lambda: parse_event(dict(progress)))
    result["parsed_class"] = type(event).__name__ if parse_error is None else None
    result["parse_error"] = parse_error
    if parse_error is None:
        change, apply_error = _attempt(lambda: Conversation().apply(event))
        result["reducer_error"] = apply_error
        result["reducer_diagnostics"] = (
            _diagnostics(list(change.diagnostics)) if apply_error is None else []
        )
    return result


def _agui_new_field() -> dict[str, Any]:
    import attrs

    from agentproto.agui import dump_event, parse_event

    start = {"type": "TEXT_MESSAGE_START", "messageId": "m1", "priority": 7}
    result = _consume(_run(start, *_text("m1", "hi")[1:]))
    event, parse_error = _attempt(lambda: parse_event(dict(start)))
    result["parse_error"] = parse_error
    if parse_error is None:
        kept = {
            f.metadata.get("wire"): getattr(event, f.name)
            for f in attrs.fields(type(event))
            if f.metadata.get("wire") == "priority"
        }
        result["kept"] = kept
        result["dumped"], result["dump_error"] = _attempt(lambda: dump_event(event))
    return result


def _agui_new_role() -> dict[str, Any]:
    return _consume(_run(*_text("m1", "once", role="narrator")))


def _agui_renamed_generic_field() -> dict[str, Any]:
    from agentproto.agui import dump_event, parse_event

    renamed = {"type": "RAW", "event": {"k": 1}, "origin": "vendor"}
    retired = {"type": "RAW", "event": {"k": 2}, "source": "vendor"}
    result = _consume(_run(renamed, retired))
    event, result["parse_error"] = _attempt(parse_event, dict(renamed))
    if result["parse_error"] is None:
        result["dumped"], result["dump_error"] = _attempt(dump_event, event)
    return result


def _agui_renamed_field() -> dict[str, Any]:
    events = [
        {"type": "TEXT_MESSAGE_START", "msgId": "m1"},
        {"type": "TEXT_MESSAGE_CONTENT", "msgId": "m1", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "msgId": "m1"},
    ]
    return _consume(_run(*events))


def agui_additions() -> dict[str, Any]:
    return {
        "new_event_type": _agui_new_event_type(),
        "new_field": _agui_new_field(),
        "new_role": _agui_new_role(),
        "renamed_generic_field": _agui_renamed_generic_field(),
    }


def agui_rename() -> dict[str, Any]:
    return {"renamed_field": _agui_renamed_field()}


# ---- ACP -----------------------------------------------------------------------------------

REVIEW = {"sessionUpdate": "review_update", "reviewId": "rev-evolution-1", "verdict": "approved"}


def _kept(state: Any, payload: dict[str, Any]) -> bool:
    """Whether the session holds ``payload`` (among unknown updates, or in its JSON)."""
    from agentproto.acp import dump_session_update

    for update in getattr(state, "unknown", []):
        dumped, error = _attempt(dump_session_update, update)
        if error is None and dumped == payload:
            return True
    as_json, error = _attempt(state.to_json)
    return error is None and payload["reviewId"] in json.dumps(as_json, default=str)


def _acp_new_kind() -> dict[str, Any]:
    from agentproto.acp import SessionState, SessionStore, dump_session_update, parse_session_update

    result: dict[str, Any] = {}
    update, result["parse_error"] = _attempt(lambda: parse_session_update(dict(REVIEW)))
    if result["parse_error"] is None:
        result["parsed_class"] = type(update).__name__
        result["dumped"], result["dump_error"] = _attempt(lambda: dump_session_update(update))
        state = SessionState("s1")
        _, result["apply_error"] = _attempt(lambda: state.apply(update))
        result["apply_diagnostics"] = _diagnostics(state.diagnostics)
        result["apply_kept"] = _kept(state, REVIEW)
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s1", "update": REVIEW},
        }
    ).encode()
    for mode, strict in (("strict", True), ("tolerant", False)):
        store = SessionStore(strict=strict)

        def feed(store: Any = store) -> None:
            store.feed(line + b"\n")
            store.close()

        _, result[f"store_{mode}_error"] = _attempt(feed)
        result[f"store_{mode}_diagnostics"] = _diagnostics(store.diagnostics)
        session = store.sessions.get("s1")
        result[f"store_{mode}_kept"] = session is not None and _kept(session, REVIEW)
    return result


def _acp_open_enum() -> dict[str, Any]:
    from agentproto.acp import SessionState, dump_session_update, parse_session_update

    result: dict[str, Any] = {}
    for kind in ("review", "teleport"):
        payload = {"sessionUpdate": "tool_call_update", "toolCallId": f"c-{kind}", "kind": kind}
        update, error = _attempt(parse_session_update, dict(payload))
        entry: dict[str, Any] = {"parse_error": error}
        if error is None:
            state = SessionState("s1")
            _, entry["apply_error"] = _attempt(state.apply, update)
            call = state.tool_calls.get(f"c-{kind}")
            entry["kind"] = None if call is None else call.kind
            entry["display_kind"] = None if call is None else call.display_kind
            dumped, _ = _attempt(dump_session_update, update)
            entry["dumped_kind"] = None if dumped is None else dumped.get("kind")
        result[kind] = entry
    return result


def acp_additions() -> dict[str, Any]:
    return {"new_kind": _acp_new_kind(), "open_enum": _acp_open_enum()}


PROBES: dict[str, Callable[[], dict[str, Any]]] = {
    "agui_additions": agui_additions,
    "agui_rename": agui_rename,
    "acp_additions": acp_additions,
}


def main() -> None:
    name, tree = sys.argv[1], Path(sys.argv[2]).resolve()
    import agentproto

    origin = Path(agentproto.__file__).resolve()
    if tree not in origin.parents:
        raise SystemExit(f"agentproto imported from {origin}, not from the copied tree {tree}")
    try:
        # the runtime may check the generated modules when imported: a loud failure
        import agentproto.acp
        import agentproto.agui
    except Exception as exc:
        print(json.dumps({"import_error": _error(exc)}, default=repr))
        return
    print(json.dumps(PROBES[name](), default=repr))


if __name__ == "__main__":
    main()
