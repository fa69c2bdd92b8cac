"""The regeneration checklist: every generated kind, and the stage tables that handle it.

Every AG-UI event type (a member of the generated ``Event`` union, by its ``type``
const) and every ACP update kind (a member of a generated ``SessionUpdate`` union, by its
``sessionUpdate`` const) passes through stages that each decide, kind by kind, in a
table of their own: the AG-UI verifier, reducer, compaction, compatibility boundary,
chunk lanes and producer helpers; the ACP upsert rules, entity kinds, ``combine``, the
v1 <-> v2 adapters and the agent-side update helpers (:data:`STAGES` says where each
table is). The kinds are read from the generated modules, and each stage's answer from
the stage's own table, never from a list copied here. A kind a stage's table has no
entry for must be listed in :data:`NOT_HANDLED_YET` under that stage, with the reason
(nothing to do there, by the spec; or what is missing).

How to use this after a regeneration
------------------------------------
Run this file (``pytest tests/test_regeneration_checklist.py``). Each failure names one
stage and one kind, and together they are the maintainer's checklist:

* ``test_kind_is_handled[<stage>-<kind>]``: the stage has no rule for a generated kind
  (usually one the schema just added). Give it a rule in the table the message names,
  or, when the stage rightly does nothing for it yet, add it to
  ``NOT_HANDLED_YET[<stage>]`` with the reason.
* ``test_not_handled_entry_is_current[<stage>-<kind>]``: an entry names a kind the stage
  now handles, or one no generated union has any more: delete it.

When nothing fails, every stage has decided about every kind.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import attrs
import pytest

from agentproto.acp import _generated_v1 as acp_v1
from agentproto.acp import _generated_v2 as acp_v2
from agentproto.acp._agent import agent as acp_agent
from agentproto.acp._agent import updates as acp_updates
from agentproto.acp._relay import combine as acp_combine
from agentproto.acp._relay import to_v1 as acp_to_v1
from agentproto.acp._relay import versions as acp_versions
from agentproto.acp._state import entities as acp_entities
from agentproto.acp._state import rules as acp_rules
from agentproto.acp._state import session as acp_session
from agentproto.agui import _generated as agui
from agentproto.agui._consume import chunks as agui_chunks
from agentproto.agui._history import compaction as agui_compaction
from agentproto.agui._produce import producer as agui_producer
from agentproto.agui._protocol import compat as agui_compat
from agentproto.agui._protocol import kinds as agui_kinds
from agentproto.agui._reduce import conversation as agui_conversation
from agentproto.agui._verify import verifier as agui_verifier

# ---- the kinds, read from the generated unions ---------------------------------------------


def tagged_members(union: Any, tag_wire: str) -> dict[str, type]:
    """The members of a generated union by the const of their tag field (wire name
    ``tag_wire``), in the union's order; a member without one (ACP's catch-all) is left out."""
    members: dict[str, type] = {}
    for cls in typing.get_args(union):
        for field in attrs.fields(cls):
            if field.metadata.get("wire") == tag_wire and "const" in field.metadata:
                members[field.metadata["const"]] = cls
    return members


AGUI_EVENTS = tagged_members(agui.Event, "type")
ACP_UPDATES = tagged_members(acp_v2.SessionUpdate, "sessionUpdate")
ACP_V1_UPDATES = tagged_members(acp_v1.SessionUpdate, "sessionUpdate")


def _tags(members: Mapping[str, type], classes: Iterable[object]) -> frozenset[str]:
    """The tags of ``classes``, each a member of ``members`` (else ``KeyError``)."""
    by_class = {cls: tag for tag, cls in members.items()}
    return frozenset(by_class[cls] for cls in classes)


# ---- how each stage answers "do you handle this kind?" ------------------------------------


def _ruled(table: Mapping[type, object], fallback: object) -> frozenset[str]:
    """The event types with a rule of their own in a class-keyed dispatch table built by
    ``kinds.dispatch_table`` (a class without an entry gets the table's ``fallback``)."""
    return _tags(AGUI_EVENTS, (cls for cls, rule in table.items() if rule is not fallback))


def _resolve(node: ast.expr, namespace: Mapping[str, Any]) -> object:
    """What a name or dotted name (``v2.NoticeSessionUpdate``) in a module stands for."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, namespace)
        return None if base is None else getattr(base, node.attr, None)
    return None


def constructed(owners: Iterable[type], members: Mapping[str, type]) -> dict[str, list[str]]:
    """The kinds whose generated class a method of ``owners`` builds, each with those
    methods (``Owner.method``): read from the methods' source, names resolved in the
    module that defines them, so that the helpers need no table of their own."""
    classes = {cls: tag for tag, cls in members.items()}
    found: dict[str, list[str]] = {}
    for owner in owners:
        for name, method in vars(owner).items():
            if not inspect.isfunction(method):
                continue
            tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                target = _resolve(node.func, method.__globals__)
                if isinstance(target, type) and target in classes:
                    found.setdefault(classes[target], []).append(f"{owner.__name__}.{name}")
    return found


def _own_classes(*classes: type) -> list[type]:
    """``classes`` and their bases but ``object``, once each."""
    return list(dict.fromkeys(c for cls in classes for c in cls.__mro__ if c is not object))


def _verifier() -> frozenset[str]:
    return _ruled(agui_verifier._IN_RUN, agui_verifier.Verifier._no_rule)


def _reducer() -> frozenset[str]:
    return _ruled(agui_conversation._RULES, agui_conversation._no_rule)


def _compaction() -> frozenset[str]:
    return _ruled(agui_compaction._RULES, agui_compaction.RunCompactor._keep)


def _chunk_lanes() -> frozenset[str]:
    return frozenset(agui_chunks._CATEGORY)


def _compatibility() -> frozenset[str]:
    """The event types the boundary has a rule of its own for: those it may change for a
    current peer (its ``kinds``: the version on RUN_STARTED, the retired nulls), those a
    retired type is translated into, and those an old peer's era drops."""
    current = agui_compat.CompatibilityBoundary()
    assert current.kinds is not None
    translated = set()
    for retired in current.kinds - AGUI_EVENTS.keys():
        event = current.translate({"type": retired}, [])
        assert event is not None
        translated.add(event["type"])
    oldest = agui_compat.CompatibilityBoundary(peer_version="0.0.0")  # every era applies
    dropped = {kind for kind in AGUI_EVENTS if oldest.translate({"type": kind}, []) is None}
    return frozenset((current.kinds & AGUI_EVENTS.keys()) | translated | dropped)


def _producer_helpers() -> frozenset[str]:
    owners = _own_classes(agui_producer.RunProducer)
    return frozenset(constructed(owners, AGUI_EVENTS))


def _upsert_rules() -> frozenset[str]:
    applied = (cls for cls, rule in acp_session.RULES.items() if rule not in acp_rules.TOLERATED)
    return _tags(ACP_UPDATES, applied)


def _entity_kinds() -> frozenset[str]:
    return _tags(ACP_UPDATES, (*acp_entities.BY_UPSERT, *acp_entities.BY_CHUNK))


def _combine() -> frozenset[str]:
    return _tags(ACP_UPDATES, acp_combine.ENTITY_OF)


def _to_v1() -> frozenset[str]:
    return _tags(ACP_UPDATES, acp_to_v1.TO_V1)


def _from_v1() -> frozenset[str]:
    return frozenset(acp_versions.FROM_V1)


def _agent_helpers() -> frozenset[str]:
    owners = _own_classes(acp_agent.AgentSession, acp_updates.ToolCall, acp_updates.Terminal)
    return frozenset(constructed(owners, ACP_UPDATES))


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of the runtime that decides per kind.

    Attributes:
        name: how failures and :data:`NOT_HANDLED_YET` name it.
        table: where its table is (what a maintainer edits).
        kinds: the generated kinds it decides about.
        read: the kinds its table handles, read from the table.
    """

    name: str
    table: str
    kinds: Mapping[str, type] = dataclasses.field(repr=False)
    read: Callable[[], frozenset[str]] = dataclasses.field(repr=False)

    @functools.cached_property
    def handled(self) -> frozenset[str]:
        """The kinds its table handles (read once)."""
        return self.read()


STAGES = (
    Stage("verifier", "agui/_verify/verifier.py: _IN_RUN", AGUI_EVENTS, _verifier),
    Stage("reducer", "agui/_reduce/conversation.py: _RULES", AGUI_EVENTS, _reducer),
    Stage("compaction", "agui/_history/compaction.py: _rules()", AGUI_EVENTS, _compaction),
    Stage(
        "compatibility",
        "agui/_protocol/compat.py: _THINKING, NULL_RETIREMENTS, the subagent era",
        AGUI_EVENTS,
        _compatibility,
    ),
    Stage(
        "chunk-lanes",
        "agui/_protocol/kinds.py: CLOSES_*, SUBAGENT_TERMINALS, CHUNK_TYPES "
        "(agui/_consume/chunks.py: _CATEGORY)",
        AGUI_EVENTS,
        _chunk_lanes,
    ),
    Stage(
        "producer-helpers",
        "agui/_produce/messages.py, run.py: a RunProducer method building the event",
        AGUI_EVENTS,
        _producer_helpers,
    ),
    Stage("upsert-rules", "acp/_state/rules.py: build_rules()", ACP_UPDATES, _upsert_rules),
    Stage("entity-kinds", "acp/_state/entities.py: _SPECS", ACP_UPDATES, _entity_kinds),
    Stage("combine", "acp/_relay/combine.py: ENTITY_OF", ACP_UPDATES, _combine),
    Stage("v2-to-v1", "acp/_relay/to_v1.py: TO_V1", ACP_UPDATES, _to_v1),
    Stage("v1-to-v2", "acp/_relay/versions.py: FROM_V1", ACP_V1_UPDATES, _from_v1),
    Stage(
        "agent-helpers",
        "acp/_agent/updates.py, agent.py: a SessionUpdates, AgentSession, ToolCall or "
        "Terminal method building the update",
        ACP_UPDATES,
        _agent_helpers,
    ),
)
"""Every stage that decides per kind, with where its table is."""


# ---- what each stage does not handle (yet), and why -----------------------------------------

_KEPT_START = (
    "kept in place: a START fixes the message order and what is open when; compaction "
    "joins only the deltas between START and END"
)
_NO_CHUNKS = (
    "never reaches compaction, which takes chunk-expanded events (chunk_form writes chunks "
    "again afterwards, where expansion gives back the same events)"
)
_NO_RETIRED_SHAPE = (
    "no rule of its own: no retired type becomes it, no NULL_RETIREMENTS row names a field "
    "of its own (rawEvent, which every event may carry, has a rule for all), and no old "
    "peer's era drops it"
)
_NO_HELPER_YET = (
    "no helper yet: an agent builds the update and sends it with SessionUpdates.emit "
    "(the same duties and the same fold as a helper's)"
)

NOT_HANDLED_YET: dict[str, dict[str, str]] = {
    "verifier": {},
    "reducer": {},
    "compaction": {
        "TEXT_MESSAGE_START": _KEPT_START,
        "TOOL_CALL_START": _KEPT_START,
        "REASONING_MESSAGE_START": _KEPT_START,
        "REASONING_START": _KEPT_START,
        "TOOL_CALL_RESULT": "kept in place: it mints one tool message, with no deltas to join",
        "REASONING_ENCRYPTED_VALUE": (
            "kept in place: an opaque value stored with its message or tool call and "
            "returned unmodified; nothing shorter says the same"
        ),
        "STEP_STARTED": (
            "kept in place: steps change no message or state, but are part of the run a "
            "consumer verifies (opened before finished, closed by RUN_FINISHED)"
        ),
        "STEP_FINISHED": (
            "kept in place: steps change no message or state, but are part of the run a "
            "consumer verifies (opened before finished, closed by RUN_FINISHED)"
        ),
        "SUBAGENT_STARTED": (
            "kept in place: the subagent lifecycle decides where attributed events may "
            "stand (announced before them, closed before RUN_FINISHED)"
        ),
        "SUBAGENT_FINISHED": (
            "kept in place: the subagent lifecycle decides where attributed events may "
            "stand (announced before them, closed before RUN_FINISHED)"
        ),
        "SUBAGENT_ERROR": (
            "kept in place: the subagent lifecycle decides where attributed events may "
            "stand (announced before them, closed before RUN_FINISHED)"
        ),
        "RAW": "kept in place: a pass-through payload for the application, as it was sent",
        "CUSTOM": "kept in place: a pass-through payload for the application, as it was sent",
        "TEXT_MESSAGE_CHUNK": _NO_CHUNKS,
        "TOOL_CALL_CHUNK": _NO_CHUNKS,
        "REASONING_MESSAGE_CHUNK": _NO_CHUNKS,
    },
    "compatibility": dict.fromkeys(
        (
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TEXT_MESSAGE_CHUNK",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "STATE_SNAPSHOT",
            "STATE_DELTA",
            "ACTIVITY_SNAPSHOT",
            "ACTIVITY_DELTA",
            "RAW",
            "CUSTOM",
            "RUN_ERROR",
            "STEP_STARTED",
            "STEP_FINISHED",
            "REASONING_MESSAGE_CHUNK",
            "REASONING_ENCRYPTED_VALUE",
        ),
        _NO_RETIRED_SHAPE,
    ),
    "chunk-lanes": {},
    "producer-helpers": dict.fromkeys(
        ("TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK"),
        "no helper writes the chunk shorthand: the helpers stream explicit START/CONTENT/END "
        "and one item must not mix both forms; RunProducer.emit() takes a chunk and checks "
        "it through chunk expansion",
    ),
    "upsert-rules": {},
    "entity-kinds": {
        "available_commands_update": (
            "not an entity: the session keeps the latest update whole (rules.LATEST)"
        ),
        "config_option_update": (
            "not an entity: the session keeps the latest update whole (rules.LATEST)"
        ),
        "state_update": "not an entity: the session keeps the latest update whole (rules.LATEST)",
        "usage_update": (
            "not an entity: the session keeps the latest update, with its three-state cost "
            "(a rule of its own in acp/_state/rules.py)"
        ),
        "plan_update": (
            "not an entity: it replaces the content of the plan with its planId whole, and "
            "its _meta is not a patch (a rule of its own in acp/_state/rules.py)"
        ),
        "plan_removed": (
            "not an entity: it deletes the plan with its planId (a rule of its own in "
            "acp/_state/rules.py)"
        ),
        "notice": "not an entity: notices are kept in arrival order, none updates another",
    },
    "combine": {
        "notice": "never coalesces: each notice is kept, in order, so two notices stay two",
    },
    "v2-to-v1": {
        "state_update": (
            "v1 has no state_update kind (a v1 turn ends with the prompt response): "
            "dropped with not-convertible"
        ),
    },
    "v1-to-v2": {
        "current_mode_update": "v2 has no current_mode_update kind: dropped with not-convertible",
    },
    "agent-helpers": {
        "agent_thought": (
            "no helper yet: thought_chunk appends, nothing sends a thought whole; an agent "
            "builds the update and sends it with SessionUpdates.emit"
        ),
        "user_message_chunk": (
            "no helper yet: user_message sends the prompt's user message whole; a chunk "
            "goes through SessionUpdates.emit"
        ),
        "state_update": (
            "no helper, on purpose: foreground state is the session's work (begin_work, "
            "end_work and request_permission send the turn's Foreground updates, "
            "acp/_rpc/turn.py), and emit refuses one sent by hand (updates.by-hand-state)"
        ),
        "plan_removed": (
            "no helper yet: plan() replaces a plan's entries, nothing removes a plan; an "
            "agent sends it with SessionUpdates.emit"
        ),
        **dict.fromkeys(
            (
                "available_commands_update",
                "config_option_update",
                "notice",
                "compaction_update",
                "compaction_summary_chunk",
                "session_message",
                "session_message_chunk",
            ),
            _NO_HELPER_YET,
        ),
    },
}
"""Per stage: each generated kind its table has no entry for, with the reason."""


# ---- the check ---------------------------------------------------------------------------------


def missing(
    handled: Collection[str], kinds: Iterable[str], not_handled: Mapping[str, str]
) -> list[str]:
    """The kinds of ``kinds`` that a stage's table (``handled``) lacks and ``not_handled``
    does not list."""
    return [kind for kind in kinds if kind not in handled and kind not in not_handled]


def stale(
    handled: Collection[str], kinds: Collection[str], not_handled: Mapping[str, str]
) -> list[str]:
    """The entries of ``not_handled`` that no longer hold: a kind the table handles, a
    kind ``kinds`` lacks (no longer generated), or an entry without a reason."""
    return [
        kind
        for kind, reason in not_handled.items()
        if kind in handled or kind not in kinds or not reason.strip()
    ]


def _not_handled(stage: Stage) -> Mapping[str, str]:
    return NOT_HANDLED_YET.get(stage.name, {})


CASES = [
    pytest.param(stage, kind, id=f"{stage.name}-{kind}") for stage in STAGES for kind in stage.kinds
]
ENTRIES = [
    pytest.param(stage, kind, id=f"{stage.name}-{kind}")
    for stage in STAGES
    for kind in _not_handled(stage)
]


@pytest.mark.parametrize(("stage", "kind"), CASES)
def test_kind_is_handled(stage: Stage, kind: str) -> None:
    """Every generated kind has a rule in every stage's table, or a reason in NOT_HANDLED_YET."""
    assert not missing(stage.handled, [kind], _not_handled(stage)), (
        f"{stage.name}: no rule for {kind!r} in {stage.table}; give it one, or list it in "
        f"NOT_HANDLED_YET[{stage.name!r}] of tests/test_regeneration_checklist.py with the reason"
    )


@pytest.mark.parametrize(("stage", "kind"), ENTRIES)
def test_not_handled_entry_is_current(stage: Stage, kind: str) -> None:
    """A NOT_HANDLED_YET entry names a generated kind the stage does not handle, with a reason."""
    assert not stale(stage.handled, stage.kinds.keys(), {kind: _not_handled(stage)[kind]}), (
        f"NOT_HANDLED_YET[{stage.name!r}][{kind!r}] is out of date: "
        + (
            f"{stage.table} now handles it"
            if kind in stage.handled
            else "no generated union has it"
            if kind not in stage.kinds
            else "it gives no reason"
        )
        + "; delete the entry (or give the reason)"
    )


# ---- the check is not vacuous ------------------------------------------------------------------


def test_the_kinds_are_the_generated_unions_members() -> None:
    """The kind lists are exactly the tagged members of the generated unions, none empty."""
    assert set(AGUI_EVENTS.values()) == set(typing.get_args(agui.Event))
    assert set(AGUI_EVENTS) == set(typing.get_args(agui.EventType)) == agui_kinds.EVENT_TYPES
    catch_all = {c for c in typing.get_args(acp_v2.SessionUpdate) if c not in ACP_UPDATES.values()}
    assert [c.__name__ for c in catch_all] == ["OtherSessionUpdate"]
    assert acp_entities.union_members(acp_v2.SessionUpdate) == ACP_UPDATES
    assert set(ACP_V1_UPDATES.values()) == set(typing.get_args(acp_v1.SessionUpdate))
    assert set(ACP_V1_UPDATES) == acp_versions.V1_KINDS
    for members in (AGUI_EVENTS, ACP_UPDATES, ACP_V1_UPDATES):
        assert len(members) > 10


def test_every_stage_has_its_not_handled_yet_entry() -> None:
    """NOT_HANDLED_YET has one mapping per stage, under the stage's name, and nothing else."""
    assert set(NOT_HANDLED_YET) == {stage.name for stage in STAGES}


@pytest.mark.parametrize("stage", STAGES, ids=lambda stage: stage.name)
def test_each_stage_table_is_read(stage: Stage) -> None:
    """A stage's table reads as a non-empty set of its own generated kinds."""
    assert stage.handled
    assert stage.handled <= stage.kinds.keys()


@pytest.mark.parametrize("stage", STAGES, ids=lambda stage: stage.name)
def test_missing_reports_a_kind_removed_from_a_table(stage: Stage) -> None:
    """A copy of a stage's table without one of its kinds makes the check report that kind."""
    removed = sorted(stage.handled)[0]
    table = set(stage.handled) - {removed}
    before = missing(stage.handled, stage.kinds, _not_handled(stage))
    assert set(missing(table, stage.kinds, _not_handled(stage))) - set(before) == {removed}


@pytest.mark.parametrize("stage", STAGES, ids=lambda stage: stage.name)
def test_stale_reports_an_entry_for_a_handled_kind(stage: Stage) -> None:
    """Listing a kind a stage's table handles as not handled makes the check report it."""
    handled = sorted(stage.handled)[0]
    entries = {**_not_handled(stage), handled: "a reason"}
    before = stale(stage.handled, stage.kinds.keys(), _not_handled(stage))
    assert set(stale(stage.handled, stage.kinds.keys(), entries)) - set(before) == {handled}


def test_stale_reports_a_vanished_kind_and_a_missing_reason() -> None:
    """An entry for a kind no union has, or one without a reason, is reported."""
    entries = {"GONE": "renamed upstream", "KEPT": "a reason", "BARE": " "}
    assert stale({"DONE"}, {"DONE", "KEPT", "BARE"}, entries) == ["GONE", "BARE"]
    assert missing({"DONE"}, ["DONE", "KEPT", "NEW"], entries) == ["NEW"]


def test_constructed_finds_the_helper_that_builds_a_kind() -> None:
    """The helper scan names the method that builds an update class, and only real members."""
    found = constructed([acp_updates.Terminal], ACP_UPDATES)
    assert found == {
        "terminal_output_chunk": ["Terminal.output"],
        "terminal_update": ["Terminal.exit"],
    }
