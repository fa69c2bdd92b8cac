"""A session's foreground work, as an agent reports it: the prompt turn's state machine.

Theory of operation
-------------------
ACP v2 reports foreground work with ``state_update`` session updates:
``running`` when work starts or resumes, ``requires_action`` while it is
blocked on the user (a permission request), ``idle`` when it ends, with the
stop reason on that idle update. ``session/prompt`` itself only lasts until
the agent accepts the prompt; the turn goes on in these updates.

:class:`Foreground` is the agent's side of that, without I/O, written as a
table of allowed transitions (h11 style). Each method returns the state
update to send, or raises :class:`~agentproto.UsageError` *before anything
is sent* when the step breaks a rule:

==============================  ====================================================
code                            refused
==============================  ====================================================
``turn.busy``                   starting work while work is in progress (this SDK
                                runs one prompt turn at a time per session)
``turn.not-active``             blocking, resuming or ending when no work runs
``turn.cancelled``              ending work that the client cancelled with a stop
                                reason other than ``cancelled``
==============================  ====================================================

After ``session/cancel`` the work must end with ``cancelled`` (the schema: an
agent reports ``cancelled`` when cancellation ends active work, even when
aborting raised); a stop reason may also be left out (``None``) only when no
cancellation is pending.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

from agentproto._core.errors import UsageError
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import CONVERTER

__all__ = ["CANCELLED", "END_TURN", "ERROR", "Foreground", "Phase", "TurnPhase", "state_update"]

TurnPhase: TypeAlias = Literal["idle", "running", "requires_action"]
"""Where a session's foreground work (its prompt turn) stands."""
Phase: TypeAlias = TurnPhase
"""Deprecated alias of :data:`TurnPhase`, kept for one release (``agentproto.agui`` has a
``Phase`` too, :data:`~agentproto.agui.RunPhase`, which means something else)."""

CANCELLED: Final = v2.CancelledRequestPermissionOutcome().outcome
"""The stop reason (and permission outcome) of cancelled work: ``"cancelled"``."""
END_TURN: Final = "end_turn"
"""The stop reason of work that ended normally (the schema's ``end_turn`` variant)."""
ERROR: Final = "error"
"""The stop reason of work that failed (the schema's ``error`` variant, with ``error`` details)."""
if CANCELLED not in v2.ENUM_VALUES["ToolCallStatus"]:  # pragma: no cover (a regeneration broke it)
    raise ImportError("the schema's tool call statuses no longer include 'cancelled'")

# (from, step) -> to
_STEPS: Final[dict[tuple[TurnPhase, str], TurnPhase]] = {
    ("idle", "begin"): "running",
    ("running", "block"): "requires_action",
    ("requires_action", "block"): "requires_action",
    ("requires_action", "resume"): "running",
    ("running", "resume"): "running",
    ("running", "end"): "idle",
    ("requires_action", "end"): "idle",
}


def state_update(state: Any) -> v2.StateUpdateSessionUpdate:
    """The ``state_update`` session update carrying a typed ``StateUpdate`` snapshot."""
    return v2.StateUpdateSessionUpdate(extra=CONVERTER.dump(state))


class Foreground:
    """The foreground work of one session (see the module documentation).

    Attributes:
        phase: ``"idle"``, ``"running"`` or ``"requires_action"``.
        cancel_requested: whether the client cancelled the current work.
        stop_reason: the stop reason of the last work that ended.
    """

    def __init__(self) -> None:
        self.phase: TurnPhase = "idle"
        self.cancel_requested = False
        self.stop_reason: str | None = None

    @property
    def active(self) -> bool:
        """Whether foreground work is in progress (running or blocked)."""
        return self.phase != "idle"

    def _step(self, step: str) -> None:
        target = _STEPS.get((self.phase, step))
        if target is None:
            if step == "begin":
                raise UsageError("turn.busy", "foreground work is already in progress")
            raise UsageError("turn.not-active", f"cannot {step} work: the session is idle")
        self.phase = target

    def begin(self) -> v2.StateUpdateSessionUpdate:
        """Start foreground work: the ``running`` update.

        Raises:
            UsageError: ``turn.busy``.
        """
        self._step("begin")
        self.cancel_requested = False
        return state_update(v2.RunningStateUpdate())

    def block(self) -> v2.StateUpdateSessionUpdate:
        """The work waits for the user: the ``requires_action`` update.

        Raises:
            UsageError: ``turn.not-active``.
        """
        self._step("block")
        return state_update(v2.RequiresActionStateUpdate())

    def resume(self) -> v2.StateUpdateSessionUpdate:
        """The work goes on: the ``running`` update.

        Raises:
            UsageError: ``turn.not-active``.
        """
        self._step("resume")
        return state_update(v2.RunningStateUpdate())

    def cancel(self) -> bool:
        """The client cancelled the session's work; whether any work was active."""
        if self.active:
            self.cancel_requested = True
        return self.active

    def check_end(self, stop_reason: str | None) -> None:
        """Raise what :meth:`end` would raise, changing nothing."""
        if not self.active:
            raise UsageError("turn.not-active", "cannot end work: the session is idle")
        if self.cancel_requested and stop_reason != CANCELLED:
            raise UsageError(
                "turn.cancelled",
                f"the client cancelled this work: it ends with {CANCELLED!r}, not {stop_reason!r}",
            )

    def end(
        self, stop_reason: str | None, *, error: v2.Error | None = None
    ) -> v2.StateUpdateSessionUpdate:
        """End the work: the ``idle`` update with its stop reason.

        Args:
            stop_reason: why the work stopped (``"end_turn"``, ``"cancelled"``,
                ``"error"``, ...); ``None`` reports none.
            error: the failure's JSON-RPC error, for the ``error`` stop reason.

        Raises:
            UsageError: ``turn.not-active`` or ``turn.cancelled``.
        """
        self.check_end(stop_reason)
        self._step("end")
        self.cancel_requested = False
        self.stop_reason = stop_reason
        extra = None if error is None else {"error": CONVERTER.dump(error)}
        return state_update(v2.IdleStateUpdate(stop_reason=stop_reason, extra=extra))

    def snapshot(self) -> v2.StateUpdateSessionUpdate:
        """The current state as an update (resume sends one; it is not a transition)."""
        if self.phase == "running":
            return state_update(v2.RunningStateUpdate())
        if self.phase == "requires_action":
            return state_update(v2.RequiresActionStateUpdate())
        return state_update(v2.IdleStateUpdate(stop_reason=self.stop_reason))
