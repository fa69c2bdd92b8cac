"""How a client reconnects a broken stream: bounded attempts, exponential backoff, jitter.

Both protocols' clients take a :class:`Reconnect` (the AG-UI HTTP and WebSocket agents,
the ACP remote client); what a reconnection sends (a cursor) is theirs.
"""

from __future__ import annotations

import random
from typing import Final

import attrs

from agentproto._core.errors import UsageError

__all__ = ["DEFAULT_RECONNECT", "Reconnect"]


@attrs.frozen
class Reconnect:
    """How a client reconnects a broken stream (AG-UI's HTTP and WebSocket agents, ACP's
    remote client).

    Attributes:
        attempts: reconnections tried in a row without progress before the run
            fails (as a truncated stream); ``0`` never reconnects.
        delay: seconds before the first attempt, unless the stream's ``retry:``
            field set another time.
        max_delay: the longest wait between two attempts, in seconds.
        jitter: the fraction of each wait drawn at random (0.5: between half and
            the whole of it), so that many clients do not come back at once.
    """

    attempts: int = 5
    delay: float = 0.5
    max_delay: float = 10.0
    jitter: float = 0.5

    def __attrs_post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise UsageError("reconnect.policy", f"attempts must be an integer: {self.attempts!r}")
        if self.attempts < 0 or self.delay < 0 or self.max_delay < 0:
            raise UsageError("reconnect.policy", "attempts and delays must not be negative")
        if not 0 <= self.jitter <= 1:
            raise UsageError("reconnect.policy", f"jitter must be within [0, 1]: {self.jitter!r}")

    def wait(self, failures: int, base: float | None = None) -> float:
        """Seconds to wait before attempt number ``failures`` (from 1) of a row: ``base``
        (default ``delay``; a server's ``retry:``) doubled per failed attempt, up to
        ``max_delay``, less a random share of ``jitter``."""
        delay = min(self.max_delay, (self.delay if base is None else base) * 2 ** (failures - 1))
        return float(delay * (1 - self.jitter * random.random()))


DEFAULT_RECONNECT: Final = Reconnect()
"""Up to 5 reconnections in a row, from 0.5 s (or the stream's ``retry:``) up to 10 s."""
