"""DiagnosticLog: a bounded list of diagnostics that counts what it does not keep."""

from __future__ import annotations

import copy
import logging

import pytest

from agentproto._core.diagnostics import (
    DEFAULT_MAX_DIAGNOSTICS,
    Diagnostic,
    DiagnosticLog,
    log_diagnostics,
)


def diag(i: int) -> Diagnostic:
    return Diagnostic(code="unknown-field", message=f"d{i}", index=i)


def test_keeps_up_to_the_limit_then_one_summary() -> None:
    """Past the limit one summary diagnostic carries the count, updated, never duplicated."""
    log = DiagnosticLog(3)
    for i in range(10):
        log.append(diag(i))
    assert [d.message for d in log[:3]] == ["d0", "d1", "d2"]
    assert len(log) == 4
    assert log[-1].code == "diagnostics-limit"
    assert "7 more" in log[-1].message and "at most 3" in log[-1].message
    assert log[-1].index == 9
    assert log.dropped == 7


def test_extend_insert_and_iadd_respect_the_limit() -> None:
    """Every way of adding goes through the limit."""
    log = DiagnosticLog(2)
    log.extend([diag(0), diag(1), diag(2)])
    log += [diag(3)]
    log.insert(0, diag(4))
    assert [d.message for d in log[:2]] == ["d0", "d1"]
    assert log.dropped == 3 and len(log) == 3


def test_memory_stays_bounded() -> None:
    """A million diagnostics past the limit hold no more entries than limit + 1."""
    log = DiagnosticLog(100)
    for i in range(100_000):
        log.append(diag(i))
    assert len(log) == 101 and log.dropped == 99_900


def test_no_limit_and_default() -> None:
    """limit=None keeps everything; the default is DEFAULT_MAX_DIAGNOSTICS."""
    log = DiagnosticLog(None)
    log.extend(diag(i) for i in range(50))
    assert len(log) == 50 and not log.full
    assert DiagnosticLog().limit == DEFAULT_MAX_DIAGNOSTICS
    with pytest.raises(ValueError):
        DiagnosticLog(-1)


def test_clear_forgets_the_count_and_copies_keep_it() -> None:
    """clear() resets the count; a copy is an independent log with the same state."""
    log = DiagnosticLog(1)
    log.extend([diag(0), diag(1)])
    twin = copy.deepcopy(log)
    log.clear()
    assert log == [] and log.dropped == 0
    assert twin.dropped == 1 and len(twin) == 2 and twin.limit == 1
    assert isinstance(twin, DiagnosticLog)


def test_the_summary_keeps_where_the_last_one_was_found() -> None:
    """Past the limit, the summary carries the newest diagnostic's ``index`` and ``line``."""
    log = DiagnosticLog(1)
    log.extend([diag(0), Diagnostic(code="c", message="m", line=7)])
    assert (log[-1].code, log[-1].index, log[-1].line) == ("diagnostics-limit", None, 7)


def test_logging_names_the_event_or_the_line(caplog: pytest.LogCaptureFixture) -> None:
    """log_diagnostics puts ``event N`` or ``line N`` before a diagnostic that has one."""
    found = [
        Diagnostic(code="a", message="in a stream", index=3),
        Diagnostic(code="b", message="in a log", line=7),
        Diagnostic(code="c", message="nowhere"),
    ]
    with caplog.at_level(logging.WARNING, logger="agentproto"):
        log_diagnostics(found)
    assert [r.getMessage() for r in caplog.records] == [
        "event 3: [a] in a stream",
        "line 7: [b] in a log",
        "[c] nowhere",
    ]
