"""Typed helpers for the run's structure and what the client holds besides messages.

Theory of operation
-------------------
:class:`RunEvents` is one of the bases of :class:`~agentproto.agui.RunProducer`:
helpers for the run's lifecycle, its steps and subagents, its state and activities,
messages snapshots and the pass-through events (CUSTOM, RAW). Each builds one typed
event and hands it to the producer's gate (``_send``); the bracket helpers
(``run()``, ``step()``, ``subagent()``) return a scope from
:mod:`agentproto.agui._produce.handles`. What a helper fills in comes from what the
producer knows: the run input's ids, the current run's ids, the client's state and
activities (``state_update()`` and ``activity_update()`` diff against them).

The string shorthands of an outcome (``outcome="success"``) name the schema's
outcome members that carry nothing but their tag, read from the generated unions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypedDict, Unpack, cast, get_args

import attrs

from agentproto._core.errors import UsageError
from agentproto._core.json.codec import check_value
from agentproto._core.patch.apply import make_patch
from agentproto._core.readonly import thaw
from agentproto.agui import _generated as g
from agentproto.agui._generated import Message, RunAgentInput
from agentproto.agui._produce.handles import RunScope, StepScope, SubagentScope
from agentproto.agui._produce.messages import Attribution, EventSender, _typed
from agentproto.agui._thread.frontend_tools import pending_outcome
from agentproto.agui._thread.run_input import PROTOCOL_VERSION

if TYPE_CHECKING:
    from agentproto.agui._produce.producer import RunProducer

__all__ = ["PatchLike", "RunEvents", "RunFinish", "RunOutcome", "SubagentOutcome", "SubagentStart"]

PatchLike: TypeAlias = Sequence[g.JsonPatchOperation | Mapping[str, Any]]
"""A JSON Patch as typed operations or wire dicts (``{"op": ..., "path": ...}``)."""
RunOutcome: TypeAlias = g.RunFinishedOutcome | Literal["success", "cancelled"]
"""A RUN_FINISHED outcome: typed, or the tag of an outcome that carries nothing else."""
SubagentOutcome: TypeAlias = g.SubagentFinishedOutcome | Literal["success", "suspended"]
"""A SUBAGENT_FINISHED outcome: typed, or the tag of an outcome that carries nothing else."""


class RunFinish(TypedDict, total=False):
    """The keyword arguments of RUN_FINISHED besides its outcome (``run_finished()``).

    Attributes:
        result: the run's return value (any JSON), if it has one.
        usage: token usage, one entry per provider and model.
        metadata: event metadata.
    """

    result: Any
    usage: list[g.TokenUsage] | None
    metadata: dict[str, Any] | None


class SubagentStart(TypedDict, total=False):
    """The keyword arguments of SUBAGENT_STARTED besides its name and id (``subagent()``).

    Attributes:
        description: the subagent's description.
        parent_subagent_run_id: the invocation that started this one, if any.
        parent_tool_call_id: the tool call that started it, if any.
        parent_message_id: the message that started it, if any.
        metadata: event metadata.
    """

    description: str | None
    parent_subagent_run_id: str | None
    parent_tool_call_id: str | None
    parent_message_id: str | None
    metadata: dict[str, Any] | None


NO_STATE: Final[Any] = object()
"""The producer's state before any baseline (no run input, no ``state=``, no snapshot)."""


def _bare_members(union: Any) -> dict[str, Callable[[], Any]]:
    """The members of a tagged union that need no argument, by their ``type`` tag."""
    table: dict[str, Callable[[], Any]] = {}
    for member in get_args(union):
        if all(field.default is not attrs.NOTHING for field in attrs.fields(member)):
            table[member().type] = member
    return table


_RUN_OUTCOMES: Final = _bare_members(g.RunFinishedOutcome)
_SUBAGENT_OUTCOMES: Final = _bare_members(g.SubagentFinishedOutcome)


def _outcome(table: Mapping[str, Callable[[], Any]], outcome: Any, event: str) -> Any:
    """A typed outcome from a shorthand tag (or the typed outcome given)."""
    if not isinstance(outcome, str):
        return outcome
    member = table.get(outcome)
    if member is None:
        raise UsageError(
            "producer.bad-argument",
            f"{event} outcome {outcome!r} is not one of {sorted(table)} (or a typed outcome)",
        )
    return member()


class RunEvents(EventSender):
    """The producer's helpers for lifecycle, steps, subagents, state, activities and the rest.

    Attributes:
        run_input: the typed run input, if any.
    """

    run_input: RunAgentInput | None
    _run_ids: tuple[str, str] | None  # (threadId, runId) of the last RUN_STARTED
    _state: Any  # the state the client holds (an immutable value), or NO_STATE

    def _known_activity(self, message_id: str) -> Any:
        """The activity as the client holds it (``activity_type``, ``content``), or raise
        ``producer.activity-no-snapshot``."""
        raise NotImplementedError

    def _unanswered_calls(self) -> list[str]:
        """The current run's tool calls left without a TOOL_CALL_RESULT, in the order made."""
        raise NotImplementedError

    # ---- run lifecycle -------------------------------------------------------------------

    def run_started(
        self,
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        input: RunAgentInput | None = None,
        protocol_version: str | None = PROTOCOL_VERSION,
        metadata: dict[str, Any] | None = None,
    ) -> g.RunStartedEvent:
        """RUN_STARTED; the ids default to the run input's.

        Args:
            thread_id: the conversation; default the run input's ``threadId``.
            run_id: the run; default the run input's ``runId``.
            parent_run_id: the run that spawned this one, if any.
            input: the run input to echo back, if wanted.
            protocol_version: the version this producer speaks (``None`` leaves it out).
            metadata: event metadata.
        """
        source = self.run_input
        if thread_id is None and source is not None:
            thread_id = source.thread_id
        if run_id is None and source is not None:
            run_id = source.run_id
        if not thread_id or not run_id:
            raise UsageError(
                "producer.missing-id",
                "RUN_STARTED needs a threadId and a runId: pass them, or give the "
                "producer the run input",
            )
        return self._send(
            g.RunStartedEvent(
                thread_id=thread_id,
                run_id=run_id,
                parent_run_id=parent_run_id,
                input=input,
                protocol_version=protocol_version,
                metadata=metadata,
            )
        )

    def run_finished(
        self,
        *,
        outcome: RunOutcome | None = None,
        list_pending: bool = False,
        **finish: Unpack[RunFinish],
    ) -> g.RunFinishedEvent:
        """RUN_FINISHED for the current run (its thread and run ids are filled in).

        Args:
            outcome: absent (success), ``"success"``, ``"cancelled"``, or a typed
                outcome (an interrupt outcome lists its interrupts).
            list_pending: name the run's unanswered tool calls (every call it started
                and no TOOL_CALL_RESULT answered, such as the calls to the client's
                tools) in the success outcome's ``pendingToolCallIds``; with none, the
                outcome is left as given.
            **finish: ``result``, ``usage`` and ``metadata`` (see :class:`RunFinish`).
        """
        if self._run_ids is None:
            raise UsageError("run.not-started", "Cannot send 'RUN_FINISHED': no run was started")
        thread_id, run_id = self._run_ids
        typed = _outcome(_RUN_OUTCOMES, outcome, "RUN_FINISHED")
        if list_pending:
            typed = pending_outcome(typed, self._unanswered_calls())
        return self._send(
            g.RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=typed, **finish)
        )

    def run_error(
        self,
        message: str,
        *,
        code: str | None = None,
        usage: list[g.TokenUsage] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.RunErrorEvent:
        """RUN_ERROR: the run failed (still accepted after the producer failed)."""
        return self._send(
            g.RunErrorEvent(message=message, code=code, usage=usage, metadata=metadata)
        )

    def run(self, **started: Any) -> RunScope:
        """RUN_STARTED now (``started``: :meth:`run_started`'s arguments); a context manager
        that sends RUN_FINISHED on exit, or RUN_ERROR when the block raises."""
        self.run_started(**started)
        return RunScope(cast("RunProducer", self))

    # ---- steps ---------------------------------------------------------------------------

    def step_started(
        self, step_name: str, **attribution: Unpack[Attribution]
    ) -> g.StepStartedEvent:
        """STEP_STARTED."""
        return self._send(g.StepStartedEvent(step_name=step_name, **attribution))

    def step_finished(
        self, step_name: str, **attribution: Unpack[Attribution]
    ) -> g.StepFinishedEvent:
        """STEP_FINISHED (with the same attribution as its start)."""
        return self._send(g.StepFinishedEvent(step_name=step_name, **attribution))

    def step(self, step_name: str, **attribution: Unpack[Attribution]) -> StepScope:
        """STEP_STARTED now; STEP_FINISHED from the scope (on exit as a context manager)."""
        self.step_started(step_name, **attribution)
        return StepScope(cast("RunProducer", self), step_name, attribution.get("subagent_run_id"))

    # ---- subagents -----------------------------------------------------------------------

    def subagent_started(
        self, name: str, *, subagent_run_id: str | None = None, **start: Unpack[SubagentStart]
    ) -> g.SubagentStartedEvent:
        """SUBAGENT_STARTED: announces an invocation before anything attributed to it
        (``subagent_run_id`` is generated when omitted; ``start``: see :class:`SubagentStart`)."""
        run_id = subagent_run_id
        return self._send(
            g.SubagentStartedEvent(
                subagent_run_id=run_id if run_id is not None else self._new_id("subagent"),
                name=name,
                **start,
            )
        )

    def subagent_finished(
        self,
        subagent_run_id: str,
        *,
        outcome: SubagentOutcome | None = None,
        result: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.SubagentFinishedEvent:
        """SUBAGENT_FINISHED (``outcome``: absent, ``"success"``, ``"suspended"`` or typed)."""
        return self._send(
            g.SubagentFinishedEvent(
                subagent_run_id=subagent_run_id,
                outcome=_outcome(_SUBAGENT_OUTCOMES, outcome, "SUBAGENT_FINISHED"),
                result=result,
                metadata=metadata,
            )
        )

    def subagent_error(
        self,
        subagent_run_id: str,
        message: str,
        *,
        code: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.SubagentErrorEvent:
        """SUBAGENT_ERROR."""
        return self._send(
            g.SubagentErrorEvent(
                subagent_run_id=subagent_run_id, message=message, code=code, metadata=metadata
            )
        )

    def subagent(
        self, name: str, *, subagent_run_id: str | None = None, **start: Unpack[SubagentStart]
    ) -> SubagentScope:
        """SUBAGENT_STARTED now; the scope finishes the invocation (on exit as a context
        manager: SUBAGENT_FINISHED, or SUBAGENT_ERROR when the block raises).

        Example::

            with producer.subagent("researcher") as sub:
                producer.text("Found it.", subagent_run_id=sub.subagent_run_id)
        """
        started = self.subagent_started(name, subagent_run_id=subagent_run_id, **start)
        return SubagentScope(cast("RunProducer", self), started.subagent_run_id, name)

    # ---- state ---------------------------------------------------------------------------

    def state_snapshot(
        self, snapshot: Any, **attribution: Unpack[Attribution]
    ) -> g.StateSnapshotEvent:
        """STATE_SNAPSHOT: replaces the client's state (any JSON value)."""
        return self._send(g.StateSnapshotEvent(snapshot=snapshot, **attribution))

    def state_delta(
        self, delta: PatchLike, **attribution: Unpack[Attribution]
    ) -> g.StateDeltaEvent:
        """STATE_DELTA: an RFC 6902 patch against the client's state (it must apply)."""
        return self._send(g.StateDeltaEvent(delta=_typed(list(delta), g.JsonPatch), **attribution))

    def state_update(
        self, new_state: Any, **attribution: Unpack[Attribution]
    ) -> g.StateDeltaEvent | None:
        """STATE_DELTA with the minimal patch from the current state to ``new_state``.

        Returns:
            The delta, or ``None`` (nothing emitted) when the state is already equal.
        """
        if self._state is NO_STATE:  # checked before diffing against a state nobody holds
            raise UsageError(
                "producer.state-no-baseline",
                "state_update() without a baseline: the producer has no run input and no "
                "state, so send a STATE_SNAPSHOT first",
            )
        check_value(new_state)  # JSON, and no deeper than a consumer accepts
        ops = make_patch(self._state, thaw(new_state))
        if not ops:
            return None
        return self.state_delta(ops, **attribution)

    # ---- activities ----------------------------------------------------------------------

    def activity_snapshot(
        self,
        message_id: str | None,
        activity_type: str,
        content: dict[str, Any],
        *,
        replace: bool | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.ActivitySnapshotEvent:
        """ACTIVITY_SNAPSHOT: creates the activity message, or replaces its content and
        type (``replace=False``: leaves an existing one as it stands)."""
        return self._send(
            g.ActivitySnapshotEvent(
                message_id=message_id if message_id is not None else self._new_id("activity"),
                activity_type=activity_type,
                content=content,
                replace=replace,
                **attribution,
            )
        )

    def activity_delta(
        self,
        message_id: str,
        patch: PatchLike,
        *,
        activity_type: str | None = None,
        retype: bool = False,
        **attribution: Unpack[Attribution],
    ) -> g.ActivityDeltaEvent:
        """ACTIVITY_DELTA: an RFC 6902 patch against the activity's content.

        Args:
            message_id: the activity, created by an earlier snapshot.
            patch: the operations; applied to the result, the content stays an object.
            activity_type: default the activity's current type; another type needs
                ``retype=True``.
            retype: change the activity's type on purpose.
            **attribution: ``metadata`` and ``subagent_run_id`` (which must agree with
                the activity's owner).
        """
        return self._send(
            g.ActivityDeltaEvent(
                message_id=message_id,
                activity_type=self._activity_type(message_id, activity_type),
                patch=_typed(list(patch), g.JsonPatch),
                **attribution,
            ),
            retype=retype,
        )

    def activity_update(
        self,
        message_id: str,
        new_content: dict[str, Any],
        *,
        activity_type: str | None = None,
        retype: bool = False,
        **attribution: Unpack[Attribution],
    ) -> g.ActivityDeltaEvent | None:
        """ACTIVITY_DELTA with the minimal patch from the activity's content to ``new_content``.

        Returns:
            The delta, or ``None`` (nothing emitted) when neither content nor type change.
        """
        known = self._known_activity(message_id)
        check_value(new_content)
        ops = make_patch(known.content, thaw(new_content))
        if not ops and activity_type in (None, known.activity_type):
            return None
        return self.activity_delta(
            message_id, ops, activity_type=activity_type, retype=retype, **attribution
        )

    def _activity_type(self, message_id: str, activity_type: str | None) -> str:
        known = self._known_activity(message_id)
        return known.activity_type if activity_type is None else activity_type

    # ---- everything else -----------------------------------------------------------------

    def messages_snapshot(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        metadata: dict[str, Any] | None = None,
    ) -> g.MessagesSnapshotEvent:
        """MESSAGES_SNAPSHOT (typed messages or their wire JSON)."""
        return self._send(
            g.MessagesSnapshotEvent(
                messages=_typed(list(messages), list[Message]), metadata=metadata
            )
        )

    def custom(self, name: str, value: Any, **attribution: Unpack[Attribution]) -> g.CustomEvent:
        """CUSTOM: an application event (any JSON ``value``)."""
        return self._send(g.CustomEvent(name=name, value=value, **attribution))

    def raw(
        self, event: Any, *, source: str | None = None, **attribution: Unpack[Attribution]
    ) -> g.RawEvent:
        """RAW: an event from an external system, passed through (any JSON)."""
        return self._send(g.RawEvent(event=event, source=source, **attribution))
