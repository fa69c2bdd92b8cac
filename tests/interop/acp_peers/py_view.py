"""The normalized session view (the shape of view.mjs) for the agent-client-protocol peers.

The official Python SDK is v1 only. Its ``acp.contrib.session_state.SessionAccumulator``
folds the session; this module maps that fold (and the order of the notifications,
which the accumulator does not keep across message kinds) onto the view the tests
compare. v1 has no plan ids: its one plan is shown under ``main``, the synthetic id
the v2 plan RFD gives it. v1 message chunks carry no id: a run of consecutive chunks
of one kind is one message, and the view shows no id for it.
"""

from __future__ import annotations

from typing import Any

from acp.contrib.session_state import SessionAccumulator
from acp.schema import SessionNotification

CHUNKS = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"}


def summary(item: dict[str, Any]) -> dict[str, Any]:
    """A version-neutral summary of one tool call content item (v1 wire JSON)."""
    kind = item.get("type")
    if kind == "content":
        return {"type": "text", "text": item.get("content", {}).get("text")}
    if kind == "diff":
        return {"type": "diff", "paths": [item["path"]]}
    if kind == "terminal":
        return {"type": "terminal", "terminalId": item["terminalId"]}
    return {"type": kind}


class PeerView:
    """A SessionAccumulator plus the order of messages, as one normalized view."""

    def __init__(self) -> None:
        self.accumulator = SessionAccumulator()
        self.messages: list[dict[str, Any]] = []
        self.unhandled: list[str] = []
        self._run: str | None = None

    def apply(self, notification: SessionNotification) -> None:
        self.accumulator.apply(notification)
        update = notification.update.model_dump(mode="json", by_alias=True, exclude_none=True)
        kind = update["sessionUpdate"]
        if kind in CHUNKS:
            message_kind = kind.removesuffix("_chunk")
            if self._run != kind:
                self.messages.append({"kind": message_kind, "text": ""})
            text = update["content"].get("text", "")
            self.messages[-1]["text"] += text
            self._run = kind
            return
        self._run = None
        if kind not in ("tool_call", "tool_call_update", "plan"):
            self.unhandled.append(kind)

    def to_json(self) -> dict[str, Any]:
        calls: dict[str, Any] = {}
        entries: list[dict[str, Any]] = []
        if self.accumulator.session_id is None:  # nothing applied yet
            tool_calls: dict[str, Any] = {}
        else:
            snapshot = self.accumulator.snapshot()
            tool_calls = snapshot.tool_calls
            entries = [
                e.model_dump(mode="json", by_alias=True, exclude_none=True)
                for e in snapshot.plan_entries
            ]
        for ident, call in tool_calls.items():
            dumped = call.model_dump(mode="json", by_alias=True)
            calls[ident] = {
                "title": dumped["title"],
                "kind": dumped["kind"] or "other",
                "status": dumped["status"] or "pending",
                "content": [summary(c) for c in dumped["content"] or []],
                "locations": [loc["path"] for loc in dumped["locations"] or []],
            }
        return {
            "toolCalls": calls,
            "plans": {"main": entries} if entries else {},
            "messages": self.messages,
            "terminals": {},
            "state": None,
            "unhandled": self.unhandled,
        }
