"""A typed view of the state: read as the application's type after every snapshot or
delta, a clear error naming the path when it stops fitting, never a stale value."""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
import pytest

from agentproto import AgentProtoError, SchemaError
from agentproto.agui import Consumer, Conversation, StateShapeError, StateView, parse_event
from tests.docblocks import run_doc_block


@attrs.define
class Item:
    name: str
    qty: int


@attrs.define
class Plan:
    status: str
    items: list[Item] = attrs.field(factory=list)
    notes: dict[str, Any] = attrs.field(factory=dict)


def apply(conversation: Conversation, *events: dict[str, Any]) -> None:
    for event in events:
        conversation.apply(parse_event(event))


def snapshot(value: Any) -> dict[str, Any]:
    return {"type": "STATE_SNAPSHOT", "snapshot": value}


def delta(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"type": "STATE_DELTA", "delta": list(ops)}


PLAN = {"status": "draft", "items": [{"name": "tent", "qty": 1}]}


def test_value_follows_snapshots_and_deltas() -> None:
    """Each snapshot and each delta is seen at the next read, as a new object."""
    conversation = Conversation()
    view = StateView(conversation, Plan)
    apply(conversation, snapshot(PLAN))
    first = view.value
    assert first == Plan(status="draft", items=[Item("tent", 1)])
    assert view.value is first  # unchanged state: not structured again
    apply(conversation, delta({"op": "replace", "path": "/items/0/qty", "value": 2}))
    second = view.value
    assert second is not first and second.items == [Item("tent", 2)]
    apply(conversation, snapshot({"status": "done"}))
    assert view.value == Plan(status="done")


def test_the_baseline_is_read_before_any_event() -> None:
    """The run input's state (the baseline) is the view's first value."""
    conversation = Conversation(state=PLAN)
    assert StateView(conversation, Plan).value.status == "draft"


def test_a_consumer_is_a_source_too() -> None:
    """A view over a Consumer reads its conversation's state."""
    consumer = Consumer(run_input={"threadId": "t", "runId": "r", "messages": [], "state": PLAN})
    view = StateView(consumer, Plan)
    consumer.feed_all(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            delta({"op": "replace", "path": "/status", "value": "booked"}),
        ]
    )
    assert view.value.status == "booked"


def test_stopping_to_fit_raises_with_the_path_and_never_returns_a_stale_value() -> None:
    """A delta that makes the state stop fitting makes every read raise
    StateShapeError at the path, until a change makes it fit again."""
    conversation = Conversation()
    view = StateView(conversation, Plan)
    apply(conversation, snapshot(PLAN))
    assert view.value.items[0].qty == 1
    apply(conversation, delta({"op": "replace", "path": "/items/0/qty", "value": "two"}))
    for _ in range(2):
        with pytest.raises(StateShapeError) as caught:
            _ = view.value
        assert (caught.value.keyword, caught.value.location) == ("type", "/items/0/qty")
        assert "Plan" in str(caught.value) and "integer" in str(caught.value)
        assert caught.value.__cause__ is not None
    assert view.fits() is False
    apply(conversation, delta({"op": "replace", "path": "/items/0/qty", "value": 3}))
    assert view.fits() is True and view.value.items[0].qty == 3


def test_every_problem_is_listed() -> None:
    """A missing member is ``required`` at its path; all problems are in ``problems``."""
    conversation = Conversation(state={"items": [{"qty": 1}, {"name": "x", "qty": True}]})
    with pytest.raises(StateShapeError) as caught:
        _ = StateView(conversation, Plan).value
    got = {(p.keyword, p.location) for p in caught.value.problems}
    assert got == {
        ("required", "/status"),
        ("required", "/items/0/name"),
        ("type", "/items/1/qty"),
    }


def test_the_error_is_in_the_sdk_hierarchy() -> None:
    """StateShapeError is a SchemaError (hence an AgentProtoError and a ValueError)."""
    assert issubclass(StateShapeError, SchemaError)
    assert issubclass(StateShapeError, AgentProtoError)
    assert issubclass(StateShapeError, ValueError)


@pytest.mark.parametrize(
    ("state", "location"),
    [
        (None, ""),  # STATE_SNAPSHOT may carry any JSON value
        (["not", "an", "object"], ""),
        ({"status": 5}, "/status"),  # no coercion of a number into a string
        ({"status": "x", "items": [{"name": "a", "qty": "3"}]}, "/items/0/qty"),
        ({"status": "x", "items": [{"name": "a", "qty": 1.5}]}, "/items/0/qty"),
        ({"status": "x", "items": {"name": "a"}}, "/items"),
    ],
)
def test_scalars_and_containers_are_not_coerced(state: Any, location: str) -> None:
    """The default converter takes JSON as it is: no ``"3"`` read as 3, no object read
    as a list, a null state does not fit an attrs class."""
    conversation = Conversation()
    apply(conversation, snapshot(state))
    with pytest.raises(StateShapeError) as caught:
        _ = StateView(conversation, Plan).value
    assert caught.value.location == location


def test_a_failed_delta_keeps_the_value() -> None:
    """A patch that fails leaves the state as it was, so the view's value stands."""
    conversation = Conversation(state=PLAN)
    view = StateView(conversation, Plan)
    before = view.value
    apply(conversation, delta({"op": "test", "path": "/status", "value": "other"}))
    assert view.value is before


def test_the_value_shares_nothing_with_the_state() -> None:
    """Changing the structured value cannot change the conversation's state."""
    conversation = Conversation(state={"status": "a", "notes": {"k": [1]}})
    value = StateView(conversation, Plan).value
    value.notes["k"].append(2)
    assert conversation.state_json() == {"status": "a", "notes": {"k": [1]}}


class Money:
    """A type cattrs cannot build by itself: "12.50 EUR"."""

    def __init__(self, amount: str, currency: str) -> None:
        self.amount, self.currency = amount, currency


def parse_money(value: Any, _: Any) -> Money:
    amount, currency = value.split(" ")
    if len(currency) != 3:
        raise ValueError(f"not a currency: {currency!r}")
    return Money(amount, currency)


def test_a_structure_hook_reads_any_type() -> None:
    """A cattrs structure hook reads the state as a type of the app's own; whatever the
    hook raises becomes a StateShapeError chaining it."""
    conversation = Conversation(state="12.50 EUR")
    view = StateView(conversation, Money, hook=parse_money)
    assert (view.value.amount, view.value.currency) == ("12.50", "EUR")
    apply(conversation, snapshot("12.50 EURO"))
    with pytest.raises(StateShapeError, match="not a currency") as caught:
        _ = view.value
    assert isinstance(caught.value.__cause__, ValueError)
    apply(conversation, snapshot(12))  # the hook's own AttributeError
    with pytest.raises(StateShapeError) as again:
        _ = view.value
    assert isinstance(again.value.__cause__, AttributeError)


def test_an_app_converter_is_used_and_left_unchanged() -> None:
    """The app's converter decides (extra keys refused here); a hook is registered on a
    copy, never on the app's converter."""
    strict = cattrs.Converter(forbid_extra_keys=True)
    conversation = Conversation(state={"name": "a", "qty": 1, "colour": "red"})
    with pytest.raises(StateShapeError):
        _ = StateView(conversation, Item, converter=strict).value
    StateView(conversation, Money, converter=strict, hook=parse_money)
    with pytest.raises(cattrs.errors.StructureHandlerNotFoundError):
        strict.structure("1 EUR", Money)


def test_guide_example_runs() -> None:
    """The client authors' guide's typed-state example runs as written."""
    namespace = run_doc_block("docs/guides/client-authors.md", "A typed view of the state")
    assert namespace["plan"].steps == ["search", "book"]
    assert namespace["where"] == "/steps/1"
