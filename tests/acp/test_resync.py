"""``resync_update``: the update(s) that resend an entity to a client holding stale metadata."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto import SchemaError, UsageError
from agentproto.acp import (
    SessionState,
    ToolCallState,
    dump_session_update,
    parse_session_update,
    resync_update,
)
from tests.acp.acp_updates import apply_tolerantly, state_after, updates


def wire(items: list[Any]) -> list[dict[str, Any]]:
    return [dump_session_update(item) for item in items]


def call(meta: dict[str, Any] | None, **fields: Any) -> ToolCallState:
    return ToolCallState(tool_call_id="c1", meta=meta, **fields)


def test_stale_keys_are_set_to_null_alongside_the_current_ones() -> None:
    """One update: the current keys plus each key the client holds but should not, as null."""
    (update,) = resync_update({"a": 1, "old": 2}, call({"a": 3, "b": 4}, title="T"))
    assert dump_session_update(update) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "name": None,
        "title": "T",
        "kind": "other",
        "status": "pending",
        "content": None,
        "locations": None,
        "rawInput": None,
        "rawOutput": None,
        "capabilities": None,
        "_meta": {"old": None, "a": 3, "b": 4},
    }


def test_empty_current_metadata_is_sent_as_null_never_as_an_empty_object() -> None:
    """When the entity has no metadata the update carries ``_meta: null``."""
    (update,) = resync_update({"a": 1}, call(None))
    assert update.meta is None
    (update,) = resync_update(None, call({}))
    assert update.meta is None


def test_the_object_alone_when_the_client_holds_none() -> None:
    """A client known to hold no metadata gets the current object as is."""
    (update,) = resync_update(None, call({"a": 1}))
    assert update.meta == {"a": 1}


def test_clear_first_sends_a_clear_then_the_entity() -> None:
    """The two-update form clears the metadata first, then sends the entity with its object."""
    first, second = resync_update(None, call({"a": 1}, status="completed"), clear_first=True)
    assert dump_session_update(first) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "_meta": None,
    }
    assert dump_session_update(second)["_meta"] == {"a": 1}
    assert dump_session_update(second)["status"] == "completed"


def test_compaction_clear_carries_its_required_status() -> None:
    """A compaction's clearing update still carries the status every compaction update needs."""
    state = SessionState()
    state.apply(
        parse_session_update(
            {
                "sessionUpdate": "compaction_update",
                "compactionId": "k",
                "status": "completed",
                "_meta": {"a": 1},
            }
        )
    )
    first, _ = resync_update(None, state.compactions["k"], clear_first=True)
    assert dump_session_update(first) == {
        "sessionUpdate": "compaction_update",
        "compactionId": "k",
        "status": "completed",
        "_meta": None,
    }


def test_plan_is_resent_whole() -> None:
    """A plan's ``_meta`` is not a patch: the plan is resent as one plan_update."""
    state = SessionState()
    plan = {"type": "markdown", "planId": "p", "content": "# Plan"}
    state.apply(
        parse_session_update({"sessionUpdate": "plan_update", "plan": plan, "_meta": {"a": 1}})
    )
    assert wire(resync_update({"z": 1}, state.plans["p"])) == [
        {"sessionUpdate": "plan_update", "plan": plan, "_meta": {"a": 1}}
    ]


def test_bad_arguments() -> None:
    """Metadata holding null, or something that is not an entity, is refused."""
    with pytest.raises(SchemaError):
        resync_update(None, call({"a": None}))
    with pytest.raises(SchemaError):
        resync_update([1], call({"a": 1}))  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        resync_update(None, "tool_call:c1")  # type: ignore[arg-type]


# ---- the property ----------------------------------------------------------------------------


def pick_entity(state: SessionState, index: int) -> tuple[str, Any] | None:
    candidates = [
        (key, value)
        for key, value in state.entities()
        if key.split(":")[0]
        in {
            "tool_call",
            "terminal",
            "user_message",
            "agent_message",
            "agent_thought",
            "session_info",
            "compaction",
            "subagent",
            "session_message",
            "plan",
        }
    ]
    return candidates[index % len(candidates)] if candidates else None


def sender_entity_and_client(
    sender_log: list[Any], client_log: list[Any], index: int
) -> tuple[str, Any, SessionState] | None:
    """The sender's entity ``index`` (key, value) and the client's state; ``None``: no entity."""
    picked = pick_entity(state_after(sender_log), index)
    if picked is None:
        return None
    key, current = picked
    return key, current, state_after(client_log)


@given(
    st.lists(updates, min_size=1, max_size=8),
    st.lists(updates, max_size=8),
    st.integers(0, 9),
    st.booleans(),
)
@settings(max_examples=400)
def test_resync_brings_any_client_to_the_current_entity(
    sender_log: list[Any], client_log: list[Any], index: int, clear_first: bool
) -> None:
    """Whatever the client holds for the entity, applying the resync updates gives the entity."""
    found = sender_entity_and_client(sender_log, client_log, index)
    if found is None:
        return
    key, current, client = found
    try:
        known = client.entity(key).meta
    except KeyError:
        known = None
    apply_tolerantly(client, resync_update(known, current, clear_first=clear_first))
    assert client.entity(key) == current


@given(st.lists(updates, min_size=1, max_size=8), st.lists(updates, max_size=8), st.integers(0, 9))
@settings(max_examples=200)
def test_clear_first_fits_a_client_whose_metadata_is_unknown(
    sender_log: list[Any], client_log: list[Any], index: int
) -> None:
    """The two-update form gives the entity even when the client's metadata is not known."""
    found = sender_entity_and_client(sender_log, client_log, index)
    if found is None:
        return
    key, current, client = found
    apply_tolerantly(client, resync_update(None, current, clear_first=True))
    assert client.entity(key) == current
