"""Permission outcomes (``session/request_permission``): what counts as approval, both sides.

The schema's rules: an outcome of a kind the receiver does not understand never
counts as approval; a ``selected`` outcome whose ``optionId`` was not offered
is not approved; ``cancelled`` means no option was chosen (the work was
cancelled, the prompt dismissed, or declined by policy). Which offered options
*allow* is read off the schema's ``PermissionOptionKind`` values (those named
``allow_…``).
"""

from __future__ import annotations

from typing import Final

import attrs

from agentproto.acp import _generated_v2 as v2

__all__ = ["ALLOW_KINDS", "PermissionDecision", "decide", "outcome_for"]

ALLOW_KINDS: Final = frozenset(
    kind for kind in v2.ENUM_VALUES["PermissionOptionKind"] if kind.startswith("allow")
)
if not ALLOW_KINDS:  # pragma: no cover (a regeneration broke the naming)
    raise ImportError("no PermissionOptionKind value allows: the permission rule needs review")


@attrs.frozen(kw_only=True)
class PermissionDecision:
    """The client's answer to a permission request, read by the rules above.

    Attributes:
        outcome: the outcome as received (an unknown kind kept whole).
        option: the offered option the user selected; ``None`` when none was
            (cancelled, an unknown outcome, or an option id that was not offered).
    """

    outcome: v2.RequestPermissionOutcome
    option: v2.PermissionOption | None = None

    @property
    def allowed(self) -> bool:
        """Whether the user selected an offered option of an ``allow_…`` kind."""
        return self.option is not None and self.option.kind in ALLOW_KINDS

    @property
    def cancelled(self) -> bool:
        """Whether the outcome is ``cancelled``."""
        return isinstance(self.outcome, v2.CancelledRequestPermissionOutcome)


def decide(
    request: v2.RequestPermissionRequest, outcome: v2.RequestPermissionOutcome
) -> PermissionDecision:
    """Read an outcome against the request's offered options."""
    option = None
    if isinstance(outcome, v2.SelectedRequestPermissionOutcome):
        option = next((o for o in request.options if o.option_id == outcome.option_id), None)
    return PermissionDecision(outcome=outcome, option=option)


def outcome_for(
    request: v2.RequestPermissionRequest, answer: str | v2.RequestPermissionOutcome | None
) -> tuple[v2.RequestPermissionOutcome, str | None]:
    """The outcome a client sends for an application's answer, and a problem with it.

    Args:
        request: the agent's request.
        answer: an offered ``optionId``, a typed outcome, or ``None`` (no
            choice: ``cancelled``).

    Returns:
        The outcome, and ``None`` or why the answer became ``cancelled`` (an
        option id that was not offered, a value that is not an answer).
    """
    if answer is None:
        return v2.CancelledRequestPermissionOutcome(), None
    if isinstance(answer, str):
        if any(option.option_id == answer for option in request.options):
            return v2.SelectedRequestPermissionOutcome(option_id=answer), None
        return v2.CancelledRequestPermissionOutcome(), f"option {answer!r} was not offered"
    if isinstance(answer, v2.SelectedRequestPermissionOutcome):
        if any(option.option_id == answer.option_id for option in request.options):
            return answer, None
        return outcome_for(request, answer.option_id)
    if isinstance(answer, v2.CancelledRequestPermissionOutcome | v2.OtherRequestPermissionOutcome):
        return answer, None
    return v2.CancelledRequestPermissionOutcome(), f"{type(answer).__name__} is not an answer"
