"""The properties every example is held to, and the machinery that checks them.

* ``escape``: only :class:`agentproto.AgentProtoError` subclasses leave a public entry
  point (any other exception is a failure);
* ``hang``: every example ends within a time budget (``SIGALRM``; default 5 s);
* ``atomic``: a consumer feed call that raises, or an event the reducer skips,
  leaves the conversation (messages and state) exactly as it was; what a call
  delivered explains the whole change (a shadow :class:`~agentproto.agui.Conversation`
  fed the delivered events agrees with the consumer's);
* ``failure-set``: a consumer that raised has ``failure`` set, and no run is left
  running or reported as succeeded by the failing call;
* ``memory``: the peak of traced allocations stays under
  ``MEMORY_FACTOR * input size + MEMORY_CONSTANT``;
* target-specific contracts (``cli``: an exit status, never an exception, valid JSON
  with ``--json``; ``asgi``: every request answered with a documented status, and a
  200 stream that our own consumer accepts).

A target reports a broken contract by raising :class:`PropertyFailure`; the runner
classifies anything else that escapes.
"""

from __future__ import annotations

import math
import signal
import traceback
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

MEMORY_FACTOR = 200
"""Peak traced bytes allowed per input byte (decoded JSON and typed events cost ~50-100x)."""

MEMORY_CONSTANT = 32 * 1024 * 1024
"""Peak traced bytes allowed whatever the input size."""

TIME_BUDGET = 5.0
"""Seconds one example may run."""


def memory_bound(size: int) -> int:
    """The peak-memory bound for an input of ``size`` bytes."""
    return MEMORY_FACTOR * size + MEMORY_CONSTANT


class FuzzTimeout(BaseException):
    """The time budget ran out (a BaseException, so ``except Exception`` cannot swallow it)."""


class PropertyFailure(Exception):
    """A target saw a broken contract (``prop`` names the property)."""

    def __init__(self, prop: str, message: str, label: str | None = None) -> None:
        super().__init__(message)
        self.prop = prop
        self.label = label or message.split("(", 1)[0].strip()[:100]


@dataclass
class Failure:
    """One failed property on one example."""

    target: str
    prop: str
    exc_type: str
    where: str  # innermost frame: file:line function
    sdk_where: str  # innermost frame inside agentproto (or "")
    message: str
    traceback_tail: str
    index: int = -1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What deduplicates failures: target, property, exception type, last frame."""
        return (self.target, self.prop, self.exc_type, self.where)


def _short_path(filename: str) -> str:
    path = Path(filename)
    parts = path.parts
    for anchor in ("agentproto", "tests", "site-packages", "python3.11"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) :])
    return path.name


def describe_exception(exc: BaseException) -> tuple[str, str, str]:
    """``(innermost frame, innermost agentproto frame, traceback tail)`` of an exception."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = sdk_where = ""
    if frames:
        last = frames[-1]
        where = f"{_short_path(last.filename)}:{last.lineno} {last.name}"
        for frame in reversed(frames):
            if "/agentproto/" in frame.filename:
                sdk_where = f"{_short_path(frame.filename)}:{frame.lineno} {frame.name}"
                break
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    tail = "".join(lines)[-2500:]
    return where, sdk_where, tail


def failure_from(target: str, prop: str, exc: BaseException, index: int) -> Failure:
    """A :class:`Failure` for an exception seen on an example."""
    message = str(exc) if not isinstance(exc, FuzzTimeout) else "time budget exceeded"
    if len(message) > 300:
        message = message[:300] + "…"
    if isinstance(exc, PropertyFailure):
        cause = exc.__cause__
        if cause is not None:  # deduplicated by the exception that broke the contract
            where, sdk_where, tail = describe_exception(cause)
            exc_type = f"{exc.label} <- {type(cause).__name__}"
        else:
            where, sdk_where, tail = exc.label, "", message
            exc_type = "-"
        return Failure(target, prop, exc_type, where, sdk_where, message, tail, index)
    where, sdk_where, tail = describe_exception(exc)
    return Failure(target, prop, type(exc).__name__, where, sdk_where, message, tail, index)


# ---- time budget ----------------------------------------------------------------------------


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise FuzzTimeout()


WALL_FACTOR = 10.0
"""A blocked example (no CPU used) fails after this many budgets of wall time."""

_TIMERS = (
    (signal.ITIMER_PROF, signal.SIGPROF, 1.0),
    (signal.ITIMER_REAL, signal.SIGALRM, WALL_FACTOR),
)


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`FuzzTimeout` in the main thread past ``seconds`` of CPU time.

    The budget is the process's CPU time (``ITIMER_PROF``), so that other work on
    the machine does not turn a slow example into a hang; an example that blocks
    without using CPU is caught by a wall-clock timer of ``WALL_FACTOR`` budgets.
    """
    previous = [(sig, signal.signal(sig, _alarm)) for _, sig, _ in _TIMERS]
    for timer, _, factor in _TIMERS:
        signal.setitimer(timer, seconds * factor)
    try:
        yield
    finally:
        for timer, _, _ in _TIMERS:
            signal.setitimer(timer, 0)
        for sig, handler in previous:
            signal.signal(sig, handler)


@contextmanager
def harness_time() -> Iterator[None]:
    """Stop the budget's clocks while the harness checks (its own cost is not the library's)."""
    remaining = [(timer, signal.getitimer(timer)[0]) for timer, _, _ in _TIMERS]
    if all(left <= 0 for _, left in remaining):
        yield
        return
    for timer, _ in remaining:
        signal.setitimer(timer, 0)
    try:
        yield
    finally:
        for timer, left in remaining:
            if left > 0:
                signal.setitimer(timer, left)


# ---- memory -----------------------------------------------------------------------------------


class MemoryMeter:
    """Peak traced allocation of one call (tracing runs only during the call)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.last_peak = 0

    def measure(self, call: Callable[[], None]) -> int:
        """Run ``call``; return its peak (0 when disabled). Exceptions propagate."""
        self.last_peak = 0
        if not self.enabled:
            call()
            return 0
        tracemalloc.start(1)
        try:
            call()
        finally:
            self.last_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        return self.last_peak

    def stop(self) -> None:
        """Nothing to release (kept for callers that stop a meter)."""


# ---- comparing JSON values without recursion ----------------------------------------------


@dataclass(frozen=True)
class _Key:
    name: Any


def fingerprint(value: Any) -> Any:
    """A value equal for equal JSON values, types included (``1``, ``1.0`` and ``True``
    differ; NaN equals NaN): ``repr`` when it can, else a token list built without
    recursion (very deep values, integers past the 4300-digit ``str`` limit)."""
    try:
        return repr(value)
    except (ValueError, RecursionError):
        return _tokens(value)


def _tokens(value: Any) -> list[Any]:
    out: list[Any] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            out.append(("{", len(item)))
            for key in reversed(list(item)):
                stack.append(item[key])
                stack.append(_Key(key))
        elif isinstance(item, _Key):
            out.append(("key", item.name))
        elif isinstance(item, (list, tuple)):
            out.append(("[", len(item)))
            stack.extend(reversed(item))
        elif isinstance(item, float) and math.isnan(item):
            out.append(("nan",))
        elif isinstance(item, bool):
            out.append(("bool", item))
        else:
            out.append((type(item).__name__, item))
    return out


def conversation_print(conversation: Any) -> Any:
    """The fingerprint of a conversation's messages and state (via its public JSON)."""
    return fingerprint(conversation.to_json())


def first_difference(a: Any, b: Any) -> str:
    """Where two fingerprints first differ, shown briefly."""
    if type(a) is not type(b):
        return "one value is too deep or too large to show"
    for number, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            if isinstance(a, str):
                start = max(0, number - 30)
                return f"at char {number}: {a[start : number + 40]!r} != {b[start : number + 40]!r}"
            return f"token {number}: {str(x)[:60]} != {str(y)[:60]}"
    return f"lengths {len(a)} != {len(b)}"
