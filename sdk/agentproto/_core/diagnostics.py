"""Typed diagnostics: the problems the protocols say to tolerate.

A tolerated problem never raises. It becomes a :class:`Diagnostic` handed to the
caller, who may route it to :mod:`logging` with :func:`log_diagnostics`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import attrs

__all__ = ["Diagnostic", "log_diagnostics"]

_logger = logging.getLogger("agentproto")


@attrs.frozen(kw_only=True)
class Diagnostic:
    """One tolerated problem.

    Attributes:
        code: stable machine-readable code, e.g. ``"unknown-field"``.
        message: human-readable explanation.
        path: JSON Pointer (wire names) of what the problem is about, ``""`` for
            the whole document, ``None`` when no document position applies.
        subject: the id, event type or version the problem is about, if any.
        index: 0-based index of the event (or 1-based line number, for
            line-oriented inputs) that caused it, when known.
    """

    code: str
    message: str
    path: str | None = None
    subject: str | None = None
    index: int | None = None

    def __str__(self) -> str:
        where = f" at {self.path!r}" if self.path else ""
        return f"[{self.code}]{where} {self.message}"


def log_diagnostics(
    diagnostics: Iterable[Diagnostic], logger: logging.Logger | None = None
) -> None:
    """Send diagnostics to ``logger`` (default ``agentproto``) as warnings."""
    target = logger or _logger
    for diagnostic in diagnostics:
        target.warning("%s", diagnostic)
