"""Hypothesis strategies for ACP v2 session updates that collide often.

Every strategy draws *wire* objects (what a peer sends) from small id and value
spaces, so that consecutive updates often touch the same entity, clear what an
earlier one set, or patch the same ``_meta`` keys; :data:`updates` parses them
into typed updates. A few terminal updates carry invalid base64 on purpose.
:func:`update_line` is the line a peer writes for one update, :func:`tool_update` a
plain ``tool_call_update`` of tool call ``c1``.
"""

from __future__ import annotations

import base64
import contextlib
from typing import Any

from hypothesis import strategies as st

from agentproto._core.errors import AgentProtoError
from agentproto._core.json.codec import dumps
from agentproto.acp import SessionState, parse_session_update

IDS = st.sampled_from(["a", "b"])
KEYS = st.sampled_from(["k1", "k2", "k3"])
VALUES = st.sampled_from([0, 1, "v", True, {"x": None}, [1]])

# a patch field: omitted (the key is left out), null, or a value
OMIT = object()


def patch(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Omitted, null or a value."""
    return st.just(OMIT) | st.none() | values


meta_patches = patch(st.dictionaries(KEYS, st.none() | VALUES, max_size=3))
texts = st.sampled_from(["hi", "there", "", "é"])
blocks = texts.map(lambda text: {"type": "text", "text": text}) | st.just(
    {"type": "_widget", "x": 1}
)
tool_contents = blocks.map(lambda block: {"type": "content", "content": block}) | st.just(
    {"type": "terminal", "terminalId": "t"}
)
chunk_metas = st.just(OMIT) | st.none() | st.just({"chunk": 1})
valid_b64 = st.binary(max_size=4).map(lambda data: base64.b64encode(data).decode("ascii"))
any_b64 = valid_b64 | st.just("!!not base64")


def _obj(tag: str, **members: Any) -> dict[str, Any]:
    out = {"sessionUpdate": tag}
    out.update({key: value for key, value in members.items() if value is not OMIT})
    return out


def _upsert(tag: str, id_member: str | None, **fields: st.SearchStrategy[Any]) -> Any:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        members = {name: draw(strategy) for name, strategy in fields.items()}
        if id_member is not None:
            members[id_member] = draw(IDS)
        members["_meta"] = draw(meta_patches)
        return _obj(tag, **members)

    return build()


def _chunk(tag: str, id_member: str, item: st.SearchStrategy[Any], item_member: str) -> Any:
    return st.builds(
        lambda ident, value, meta: _obj(
            tag, **{id_member: ident, item_member: value, "_meta": meta}
        ),
        IDS,
        item,
        chunk_metas,
    )


tool_call_updates = _upsert(
    "tool_call_update",
    "toolCallId",
    name=patch(texts),
    title=patch(texts),
    kind=patch(st.sampled_from(["read", "other", "_custom"])),
    status=patch(st.sampled_from(["pending", "completed", "_weird"])),
    content=patch(st.lists(tool_contents, max_size=2)),
    locations=patch(st.lists(st.just({"path": "/x", "line": 2}), max_size=1)),
    rawInput=patch(VALUES),
    rawOutput=patch(VALUES),
    capabilities=patch(st.just({"cancel": {}})),
)
terminal_updates = _upsert(
    "terminal_update",
    "terminalId",
    command=patch(texts),
    cwd=patch(st.just("/w")),
    output=patch(any_b64.map(lambda data: {"data": data})),
    exitStatus=patch(st.just({"exitCode": 0})),
    size=patch(st.just({"cols": 80, "rows": 24})),
)
message_updates = st.sampled_from(["user_message", "agent_message", "agent_thought"]).flatmap(
    lambda tag: _upsert(tag, "messageId", content=patch(st.lists(blocks, max_size=2)))
)
session_info_updates = _upsert(
    "session_info_update",
    None,
    title=patch(texts),
    updatedAt=patch(st.just("2026-01-01T00:00:00Z")),
)
compaction_updates = _upsert(
    "compaction_update",
    "compactionId",
    status=st.sampled_from(["in_progress", "completed", "_other"]),
    summary=patch(st.lists(blocks, max_size=2)),
    error=patch(texts),
)
subagent_updates = _upsert(
    "subagent_update",
    "sessionId",
    title=patch(texts),
    description=patch(texts),
    capabilities=patch(st.just({})),
    state=patch(st.just({"state": "running"})),
    cwd=patch(st.just("/child")),
    additionalDirectories=patch(st.sampled_from([[], ["/extra"]])),
)
session_message_updates = _upsert(
    "session_message",
    "messageId",
    senderSessionId=patch(texts),
    recipientSessionId=patch(texts),
    senderMessageId=patch(texts),
    recipientMessageId=patch(texts),
    content=patch(st.lists(blocks, max_size=2)),
)
chunks = st.one_of(
    _chunk("tool_call_content_chunk", "toolCallId", tool_contents, "content"),
    _chunk("terminal_output_chunk", "terminalId", any_b64, "data"),
    _chunk("user_message_chunk", "messageId", blocks, "content"),
    _chunk("agent_message_chunk", "messageId", blocks, "content"),
    _chunk("agent_thought_chunk", "messageId", blocks, "content"),
    _chunk("compaction_summary_chunk", "compactionId", blocks, "content"),
    _chunk("session_message_chunk", "messageId", blocks, "content"),
)
plans = st.one_of(
    st.builds(
        lambda ident, status, meta: _obj(
            "plan_update",
            plan={
                "type": "items",
                "planId": ident,
                "entries": [{"content": "do", "priority": "high", "status": status}],
            },
            _meta=meta,
        ),
        IDS,
        st.sampled_from(["pending", "completed"]),
        st.just(OMIT) | st.just({"p": 1}),
    ),
    st.builds(lambda ident: _obj("plan_removed", planId=ident), IDS),
)
others = st.one_of(
    st.builds(lambda used: _obj("usage_update", used=used, size=100), st.integers(0, 3)),
    st.builds(
        lambda name: _obj(
            "available_commands_update",
            availableCommands=[{"type": "command", "name": name, "description": "d"}],
        ),
        texts,
    ),
    st.builds(lambda s: _obj("state_update", state=s), st.sampled_from(["running", "idle"])),
    st.builds(lambda title: _obj("notice", severity="info", title=title or "t"), texts),
    st.builds(lambda x: _obj("_vendor_thing", x=x), VALUES),
)

upserts = st.one_of(
    tool_call_updates,
    terminal_updates,
    message_updates,
    session_info_updates,
    compaction_updates,
    subagent_updates,
    session_message_updates,
)
wire_updates = st.one_of(upserts, upserts, chunks, plans, others)
"""Wire objects of every update kind, upserts twice as likely as the rest."""

updates = wire_updates.map(lambda obj: parse_session_update(obj, diagnostics=[]))
"""Typed updates (parsed tolerantly: unknown content blocks are kept as ``Other…``)."""


def apply_tolerantly(state: SessionState, items: list[Any]) -> SessionState:
    """Apply updates in order, skipping those the state rejects (as a tolerant store does)."""
    for update in items:
        with contextlib.suppress(AgentProtoError):
            state.apply(update)
    return state


def tool_update(**members: Any) -> dict[str, Any]:
    """A ``tool_call_update`` wire object for tool call ``c1`` with ``members``."""
    return {"sessionUpdate": "tool_call_update", "toolCallId": "c1", **members}


def update_line(update: dict[str, Any], session: str = "s1") -> bytes:
    """The JSON-RPC ``session/update`` notification carrying ``update``, as one line
    (``_core``'s dumps: integers of any size, any depth)."""
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session, "update": update},
    }
    return dumps(message) + b"\n"


def state_after(items: list[Any]) -> SessionState:
    """A fresh session after the updates."""
    return apply_tolerantly(SessionState("s"), items)


def _parsed(strategy: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    return strategy.map(lambda obj: parse_session_update(obj, diagnostics=[]))


_ENTITY_KINDS: list[list[st.SearchStrategy[Any]]] = [
    [tool_call_updates, _chunk("tool_call_content_chunk", "toolCallId", tool_contents, "content")],
    [terminal_updates, _chunk("terminal_output_chunk", "terminalId", any_b64, "data")],
    [
        _upsert("agent_message", "messageId", content=patch(st.lists(blocks, max_size=2))),
        _chunk("agent_message_chunk", "messageId", blocks, "content"),
    ],
    [session_info_updates],
    [compaction_updates, _chunk("compaction_summary_chunk", "compactionId", blocks, "content")],
    [subagent_updates],
    [session_message_updates, _chunk("session_message_chunk", "messageId", blocks, "content")],
    [plans],
]

same_kind_pairs = st.sampled_from(_ENTITY_KINDS).flatmap(
    lambda kinds: st.tuples(_parsed(st.one_of(kinds)), _parsed(st.one_of(kinds)))
)
"""Two updates of one entity kind (an upsert or its chunk each), ids from a space of two."""
