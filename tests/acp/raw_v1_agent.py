"""An ACP v1 agent written by hand: newline-delimited JSON-RPC on stdio, no SDK at all.

Only the standard library: it reads each line with ``json.loads``, checks the v1
shape of what the client sent, and writes its answers as literal v1 JSON. It
plays two turns: ``go`` (message chunks, a tool call behind a permission request,
a v1 ``diff``, a v1 ``plan``, stop reason ``end_turn``) and ``cancel me`` (a
permission request the client cancels with ``session/cancel``, stop reason
``cancelled``); ``session/load`` replays every update sent so far.

When stdin ends it writes what it received (the log) and the problems it found
as JSON to the file named by its first argument.

usage: python raw_v1_agent.py LOG_PATH
"""

from __future__ import annotations

import json
import sys
from typing import Any

OPTIONS = [
    {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]
log: list[dict[str, Any]] = []
problems: list[str] = []
history: list[dict[str, Any]] = []


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    if not line:
        return None
    message: dict[str, Any] = json.loads(line)
    log.append(message)
    if message.get("jsonrpc") != "2.0":
        problems.append(f"not JSON-RPC 2.0: {line!r}")
    return message


def update(session_id: str, body: dict[str, Any]) -> None:
    history.append(body)
    write({"method": "session/update", "params": {"sessionId": session_id, "update": body}})


def ask(session_id: str, ident: int, tool_call_id: str) -> dict[str, Any]:
    """Ask permission; read until its response (notifications meanwhile are logged)."""
    params = {"sessionId": session_id, "toolCall": {"toolCallId": tool_call_id}}
    write(
        {
            "id": ident,
            "method": "session/request_permission",
            "params": params | {"options": OPTIONS},
        }
    )
    while (message := read()) is not None:
        if message.get("id") == ident and "method" not in message:
            outcome: dict[str, Any] = message.get("result", {}).get("outcome", {})
            return outcome
    return {}


def turn_go(session_id: str) -> str:
    update(
        session_id,
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello "}},
    )
    update(
        session_id,
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "world"}},
    )
    call = {"toolCallId": "t1", "title": "Edit a.txt", "kind": "edit", "status": "pending"}
    update(session_id, {"sessionUpdate": "tool_call", **call})
    outcome = ask(session_id, 100, "t1")
    if outcome != {"outcome": "selected", "optionId": "ok"}:
        problems.append(f"t1: permission answered {outcome}")
    diff = {"type": "diff", "path": "/w/a.txt", "oldText": "a\n", "newText": "b\n"}
    done = {"toolCallId": "t1", "status": "completed", "content": [diff]}
    update(session_id, {"sessionUpdate": "tool_call_update", **done})
    entries = [{"content": "Edit a.txt", "priority": "high", "status": "completed"}]
    update(session_id, {"sessionUpdate": "plan", "entries": entries})
    return "end_turn"


def turn_cancel(session_id: str) -> str:
    call = {"toolCallId": "t2", "title": "Long task", "kind": "execute", "status": "in_progress"}
    update(session_id, {"sessionUpdate": "tool_call", **call})
    outcome = ask(session_id, 101, "t2")
    if outcome != {"outcome": "cancelled"}:
        problems.append(f"t2: permission answered {outcome}")
    if not any(m.get("method") == "session/cancel" for m in log):
        problems.append("t2: the permission was answered before session/cancel")
    return "cancelled"


def answer(message: dict[str, Any]) -> None:
    ident, method, params = message.get("id"), message.get("method"), message.get("params") or {}
    if method == "initialize":
        capabilities = {"loadSession": True, "promptCapabilities": {}}
        info = {"name": "raw-v1-agent", "version": "1.0.0"}
        write(
            {
                "id": ident,
                "result": {
                    "protocolVersion": 1,
                    "agentCapabilities": capabilities,
                    "agentInfo": info,
                    "authMethods": [],
                },
            }
        )
    elif method == "session/new":
        if not isinstance(params.get("mcpServers"), list) or "cwd" not in params:
            write(
                {
                    "id": ident,
                    "error": {"code": -32602, "message": "v1 session/new needs cwd and mcpServers"},
                }
            )
            return
        write({"id": ident, "result": {"sessionId": "raw-1"}})
    elif method == "session/prompt":
        text = "".join(block.get("text", "") for block in params.get("prompt", []))
        turn = {"go": turn_go, "cancel me": turn_cancel}.get(text)
        if turn is None:
            write({"id": ident, "error": {"code": -32602, "message": f"no turn {text!r}"}})
            return
        write({"id": ident, "result": {"stopReason": turn(params["sessionId"])}})
    elif method == "session/load":
        for body in list(history):
            write(
                {
                    "method": "session/update",
                    "params": {"sessionId": params["sessionId"], "update": body},
                }
            )
        write({"id": ident, "result": {}})
    elif ident is not None:
        write({"id": ident, "error": {"code": -32601, "message": f"method not found: {method}"}})


def main() -> None:
    while (message := read()) is not None:
        if "method" in message:
            answer(message)
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump({"log": log, "problems": problems}, out)


if __name__ == "__main__":
    main()
