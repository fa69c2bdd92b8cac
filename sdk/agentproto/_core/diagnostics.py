"""Typed diagnostics: the problems the protocols say to tolerate.

A tolerated problem never raises. It becomes a :class:`Diagnostic` handed to the
caller, who may route it to :mod:`logging` with :func:`log_diagnostics`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import SupportsIndex

import attrs

__all__ = ["DEFAULT_MAX_DIAGNOSTICS", "Diagnostic", "DiagnosticLog", "log_diagnostics"]

DEFAULT_MAX_DIAGNOSTICS = 10_000
"""How many diagnostics a consumer or store keeps before it only counts them."""

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
        index: 0-based index, in the stream of events, of the event that caused
            it, when known (AG-UI consumers and decoders).
        line: 1-based line number, in a line-oriented input (an ACP NDJSON stream
            or log), of the line that caused it, when known.
    """

    code: str
    message: str
    path: str | None = None
    subject: str | None = None
    index: int | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = f" at {self.path!r}" if self.path else ""
        return f"[{self.code}]{where} {self.message}"


class DiagnosticLog(list[Diagnostic]):
    """A list of diagnostics that keeps at most ``limit`` of them, then counts.

    A hostile stream can cause one diagnostic per event; keeping them all would
    hold memory without bound. Past ``limit`` entries, the log keeps one more:
    a diagnostic with code ``diagnostics-limit`` whose message says how many
    were not kept (updated as more arrive, never duplicated), so the caller
    still learns that they happened.

    Args:
        limit: the most diagnostics kept before counting (``None``: no limit).
    """

    def __init__(self, limit: int | None = DEFAULT_MAX_DIAGNOSTICS) -> None:
        super().__init__()
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise ValueError("the diagnostics limit must be a non-negative integer or None")
        self.limit = limit
        self.dropped = 0
        """How many diagnostics arrived past the limit and were only counted."""

    @property
    def full(self) -> bool:
        """Whether new diagnostics are only counted."""
        return self.limit is not None and len(self) - (1 if self.dropped else 0) >= self.limit

    def append(self, diagnostic: Diagnostic) -> None:
        """Keep ``diagnostic``, or count it once the log is full."""
        if not self.full:
            super().append(diagnostic)
            return
        self.dropped += 1
        summary = Diagnostic(
            code="diagnostics-limit",
            message=(
                f"{self.dropped} more diagnostic(s) not kept: the log holds at most "
                f"{self.limit} (raise the max_diagnostics limit to keep more)"
            ),
            index=diagnostic.index,
            line=diagnostic.line,
        )
        if self.dropped == 1:
            super().append(summary)
        else:
            self[-1] = summary

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        """Append each diagnostic in order."""
        for diagnostic in diagnostics:
            self.append(diagnostic)

    def __iadd__(self, diagnostics: Iterable[Diagnostic]) -> DiagnosticLog:  # type: ignore[override, misc]
        self.extend(diagnostics)
        return self

    def insert(self, index: SupportsIndex, diagnostic: Diagnostic) -> None:
        """Insert within the limit; past it, the diagnostic is only counted."""
        if self.full:
            self.append(diagnostic)
        else:
            super().insert(index, diagnostic)

    def clear(self) -> None:
        """Forget every diagnostic, the count included."""
        super().clear()
        self.dropped = 0


def log_diagnostics(
    diagnostics: Iterable[Diagnostic], logger: logging.Logger | None = None
) -> None:
    """Send diagnostics to ``logger`` (default ``agentproto``) as warnings, each
    after where it was found (``event N: ...``, ``line N: ...``) when that is known."""
    target = logger or _logger
    for diagnostic in diagnostics:
        where = [] if diagnostic.index is None else [f"event {diagnostic.index}"]
        if diagnostic.line is not None:
            where.append(f"line {diagnostic.line}")
        if where:
            target.warning("%s: %s", ", ".join(where), diagnostic)
        else:
            target.warning("%s", diagnostic)
