"""Subagent invocations: what the stream said about each one, keyed by ``subagentRunId``.

Theory of operation. The verifier (:mod:`agentproto.agui._verify.verifier`) checks the
subagent lifecycle;
once it has accepted an event it shows it to :class:`Invocations`, which keeps one
:class:`SubagentInvocation` per ``subagentRunId``, in order of first appearance,
with the status the draft's subagents page gives it:

===============  =====================================================================
status           set by
===============  =====================================================================
``running``      ``SUBAGENT_STARTED`` (also when a later run continues a suspended
                 invocation under the same id)
``succeeded``    ``SUBAGENT_FINISHED`` with no outcome or the ``success`` outcome
``suspended``    ``SUBAGENT_FINISHED`` with the ``suspended`` outcome: paused awaiting
                 outside input (its ``interruptIds``, when sent); a later run may
                 continue it
``failed``       ``SUBAGENT_ERROR`` (it ends the invocation, not the run)
``abandoned``    the run ended while the invocation was running: ``RUN_ERROR``, a
                 stream cut mid-run, or a fatal error (no closing event will come)
``unannounced``  events attributed to an id no ``SUBAGENT_STARTED`` announced (the
                 spec accepts this; when it began or ended is not known)
===============  =====================================================================

Records are immutable values: each change replaces the record.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import attrs

from agentproto.agui._generated import (
    RunErrorEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
)

__all__ = ["SubagentInvocation", "SubagentStatus"]

SubagentStatus: TypeAlias = Literal[
    "running", "succeeded", "suspended", "failed", "abandoned", "unannounced"
]


@attrs.frozen(kw_only=True)
class SubagentInvocation:
    """What the stream said about one subagent invocation.

    Attributes:
        subagent_run_id: the invocation's id.
        status: see :data:`SubagentStatus` (the module docstring says what sets each).
        run_id: the run its latest events belong to.
        started: its ``SUBAGENT_STARTED`` (the latest, for a continued invocation).
        finished: its ``SUBAGENT_FINISHED``, once one arrived.
        error: its ``SUBAGENT_ERROR``, once one arrived.
    """

    subagent_run_id: str
    status: SubagentStatus
    run_id: str | None = None
    started: SubagentStartedEvent | None = None
    finished: SubagentFinishedEvent | None = None
    error: SubagentErrorEvent | None = None

    @property
    def name(self) -> str | None:
        """The subagent's name, as announced (``None`` when unannounced)."""
        return None if self.started is None else self.started.name

    @property
    def parent_subagent_run_id(self) -> str | None:
        """The invocation that spawned this one (``None``: the parent agent did)."""
        return None if self.started is None else self.started.parent_subagent_run_id

    @property
    def outcome(self) -> SubagentFinishedOutcome | None:
        """The ``SUBAGENT_FINISHED`` outcome as sent (``None``: absent, meaning success)."""
        return None if self.finished is None else self.finished.outcome

    @property
    def interrupt_ids(self) -> tuple[str, ...]:
        """For a suspended invocation, the interrupts it waits on (may be empty)."""
        outcome = self.outcome
        if isinstance(outcome, SubagentFinishedSuspendedOutcome):
            return tuple(outcome.interrupt_ids or ())
        return ()

    @property
    def active(self) -> bool:
        """Whether the invocation is running now."""
        return self.status == "running"


class Invocations:
    """Every invocation a stream has shown, fed the events the verifier accepted."""

    __slots__ = ("records",)

    def __init__(self) -> None:
        self.records: dict[str, SubagentInvocation] = {}

    def observe(self, event: Any, run_id: str | None) -> None:
        """Record an accepted event of run ``run_id``."""
        records = self.records
        if isinstance(event, SubagentStartedEvent):
            sid = event.subagent_run_id
            records[sid] = SubagentInvocation(
                subagent_run_id=sid, status="running", run_id=run_id, started=event
            )
        elif isinstance(event, SubagentFinishedEvent):
            status: SubagentStatus = (
                "suspended"
                if isinstance(event.outcome, SubagentFinishedSuspendedOutcome)
                else "succeeded"
            )
            self._end(event.subagent_run_id, run_id, status=status, finished=event)
        elif isinstance(event, SubagentErrorEvent):
            self._end(event.subagent_run_id, run_id, status="failed", error=event)
        elif isinstance(event, RunErrorEvent):
            self.abandon()
        else:
            tag = getattr(event, "subagent_run_id", None)
            if isinstance(tag, str):
                known = records.get(tag)
                if known is None:
                    records[tag] = SubagentInvocation(
                        subagent_run_id=tag, status="unannounced", run_id=run_id
                    )
                elif known.status == "unannounced" and known.run_id != run_id:
                    records[tag] = attrs.evolve(known, run_id=run_id)

    def _end(self, sid: str, run_id: str | None, **changes: Any) -> None:
        known = self.records.get(sid)
        if known is None:  # not announced (the verifier refuses this; kept for safety)
            known = SubagentInvocation(subagent_run_id=sid, status="running", run_id=run_id)
        self.records[sid] = attrs.evolve(known, run_id=run_id, **changes)

    def abandon(self) -> None:
        """The run ended without closing them: every running invocation is abandoned."""
        for sid, record in self.records.items():
            if record.status == "running":
                self.records[sid] = attrs.evolve(record, status="abandoned")
