"""What judging one requirement id against one target gives."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped(capability)"
    """The target does not advertise the requirement's capability."""
    VACUOUS = "vacuous"
    """The condition the requirement judges never occurred (nothing to judge)."""
    RECORDED = "recorded"
    """An INFORMATIONAL id: what was observed, never judged."""
    NOT_APPLICABLE = "not-applicable"
    """What the requirement names is not in the pinned schema."""


@dataclass(frozen=True)
class Outcome:
    status: Status
    detail: str = ""


class Verdict(Exception):
    """Raised by a check to end with an outcome other than a pass."""

    def __init__(self, status: Status, detail: str) -> None:
        super().__init__(detail)
        self.outcome = Outcome(status, detail)


def fail(detail: str) -> Verdict:
    return Verdict(Status.FAILED, detail)


def vacuous(detail: str) -> Verdict:
    return Verdict(Status.VACUOUS, detail)


def skipped(detail: str) -> Verdict:
    return Verdict(Status.SKIPPED, detail)
