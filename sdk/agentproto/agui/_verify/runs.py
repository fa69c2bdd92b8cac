"""What the verifier tracks: run records, and the items, steps and subagents of a run.

:class:`RunRecord` is what the stream said about one run (public, via
:class:`~agentproto.agui.Verifier`); :class:`_Items` and :class:`RunScope` are the
run-scoped bookkeeping the rules of :mod:`agentproto.agui._verify.verifier` need.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias

import attrs

from agentproto._core.errors import AgentProtoError, ProtocolError
from agentproto.agui._generated import (
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunStartedEvent,
)
from agentproto.agui._protocol.kinds import FAMILIES

__all__ = ["Owner", "RunRecord", "RunStatus"]

RunStatus: TypeAlias = Literal["running", "succeeded", "failed", "cancelled", "interrupted"]
Owner: TypeAlias = str | None
"""Who produced something: a ``subagentRunId``, or ``None`` for the parent agent."""


@attrs.frozen(kw_only=True)
class RunRecord:
    """What the stream said about one run.

    Attributes:
        run_id: the run's ``runId`` (``None`` for a stream that opened with RUN_ERROR).
        thread_id: the run's ``threadId`` (``None`` likewise).
        status: ``running`` until a terminal event; then ``succeeded`` (no outcome, or
            the success outcome), ``interrupted``, ``cancelled`` (neither success nor
            failure), or ``failed`` (RUN_ERROR, a late RUN_ERROR, a protocol violation,
            or a stream that ended mid-run).
        started: the run's RUN_STARTED.
        finished: its RUN_FINISHED, if one arrived.
        error: the RUN_ERROR that failed it, if any (the run's own failure report).
        violation: the fatal error that failed it on the consumer's side, if any.
    """

    run_id: str | None
    thread_id: str | None
    status: RunStatus
    started: RunStartedEvent | None = None
    finished: RunFinishedEvent | None = None
    error: RunErrorEvent | None = None
    violation: AgentProtoError | None = None

    @property
    def outcome(self) -> RunFinishedOutcome | None:
        """The RUN_FINISHED outcome as sent (``None``: absent, which means success)."""
        return self.finished.outcome if self.finished is not None else None

    @property
    def succeeded(self) -> bool:
        """Whether the run ended in success (never true for a failed or truncated run)."""
        return self.status == "succeeded"


def describe_owner(owner: Owner) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


def quoted(ids: Iterable[str]) -> str:
    return ", ".join(f"'{i}'" for i in ids)


def _owner_mismatch(
    event_type: str, noun: str, item_id: str, tag: str, owner: Owner
) -> ProtocolError:
    return ProtocolError(
        "owner.mismatch",
        f"{event_type} for {noun} '{item_id}' carries subagentRunId '{tag}', which does not "
        f"match the owner its opener established ({describe_owner(owner)})",
        subject=item_id,
    )


def finish_status(outcome: RunFinishedOutcome | None) -> RunStatus:
    if isinstance(outcome, RunFinishedInterruptOutcome):
        return "interrupted"
    if isinstance(outcome, RunFinishedCancelledOutcome):
        return "cancelled"
    return "succeeded"


class _Items:
    """One family of streamed items within a run: what is open, and who owns what."""

    __slots__ = ("code", "noun", "open", "owner", "start_type")

    def __init__(self, code: str, family: str) -> None:
        self.code = code  # error-code prefix: "message.", "reasoning.span-", ...
        self.noun = FAMILIES[family].noun
        self.start_type = FAMILIES[family].start
        self.open: dict[str, Owner] = {}  # open ids -> owner, in opening order
        self.owner: dict[str, Owner] = {}  # every id known in the run -> owner

    def start(self, item_id: str, tag: Owner, default: Owner = None) -> None:
        """Open (or reopen) ``item_id``; ``default`` is the owner of an untagged opener."""
        if item_id in self.open:
            raise ProtocolError(
                f"{self.code}duplicate-open",
                f"Cannot send '{self.start_type}' for {self.noun} '{item_id}': a {self.noun} "
                f"with that ID is already active",
                subject=item_id,
            )
        if item_id in self.owner:  # reopening keeps the owner it had
            owner = self.owner[item_id]
            if tag is not None and tag != owner:
                raise _owner_mismatch(self.start_type, self.noun, item_id, tag, owner)
        else:
            owner = default if tag is None else tag
            self.owner[item_id] = owner
        self.open[item_id] = owner

    def touch(self, event_type: str, item_id: str, tag: Owner) -> None:
        """Check a continuation (CONTENT, ARGS or END) of ``item_id``."""
        if item_id not in self.open:
            raise ProtocolError(
                f"{self.code}not-open",
                f"No active {self.noun} found with ID '{item_id}' for '{event_type}'",
                subject=item_id,
            )
        if tag is not None and tag != self.open[item_id]:
            raise _owner_mismatch(event_type, self.noun, item_id, tag, self.open[item_id])

    def end(self, event_type: str, item_id: str, tag: Owner) -> None:
        self.touch(event_type, item_id, tag)
        del self.open[item_id]

    def check_closed(self) -> None:
        """RUN_FINISHED requires every item closed."""
        if self.open:
            raise ProtocolError(
                f"{self.code}open-at-finish",
                f"Cannot send 'RUN_FINISHED' while {self.noun}s are still active: "
                f"{quoted(self.open)}",
                subject=next(iter(self.open)),
            )


class RunScope:
    """Everything tracked for the run in progress; discarded when it closes."""

    __slots__ = (
        "announced",
        "answered",
        "attributed",
        "calls",
        "reasoning",
        "spans",
        "steps",
        "subagents",
        "text",
        "tools",
    )

    def __init__(self) -> None:
        self.text = _Items("message.", "text")
        self.tools = _Items("toolcall.", "tool")
        self.reasoning = _Items("reasoning.", "reasoning")
        self.spans = _Items("reasoning.span-", "span")
        self.steps: dict[tuple[Owner, str], None] = {}  # open (owner, stepName), in order
        self.subagents: dict[str, None] = {}  # active invocations, in order
        self.announced: set[str] = set()  # every invocation announced in the run
        self.attributed: set[str] = set()  # every subagentRunId events were attributed to
        self.calls: dict[str, None] = {}  # tool calls a TOOL_CALL_START made, in order
        self.answered: set[str] = set()  # toolCallIds a TOOL_CALL_RESULT answered

    def unanswered(self) -> list[str]:
        """The run's tool calls left without a TOOL_CALL_RESULT, in the order made."""
        return [call for call in self.calls if call not in self.answered]
