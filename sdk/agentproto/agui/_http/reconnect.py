"""Reconnecting a broken SSE stream after the last frame the client saw.

Theory of operation
-------------------
A server that keeps its runs in an event log (``agent_app(log=...)``) gives every
SSE frame a cursor in ``id:``. When the connection breaks (or ends cleanly) before
the run ended, the client sends the same request again with ``Last-Event-ID`` and
the server answers with exactly the frames after it. For the consumer to see one
uninterrupted stream, a :class:`Resumption` stands between the responses and the
consumer: it passes on only *complete* frames (the bytes of a frame cut by the
break are held back, then dropped: the server sends that frame again whole), and
remembers the last event id and the ``retry:`` the stream set, with a decoder of
its own.

A stream without cursors (a server without a log) is never resumed: its break is
the truncation it always was. Attempts are bounded (:class:`Reconnect`); each
waits ``delay`` (or the server's ``retry:``), doubled after each failed attempt up
to ``max_delay``, with random jitter, and a response that makes progress resets
the count.
"""

from __future__ import annotations

from agentproto._core.errors import AgentProtoError
from agentproto._core.reconnect import DEFAULT_RECONNECT, Reconnect
from agentproto._core.sse import SSEDecoder
from agentproto.agui._thread.exchange import Exchange

__all__ = ["DEFAULT_RECONNECT", "Attempts", "Reconnect", "Resumption"]  # Reconnect: _core.reconnect

_RETRYABLE_STATUS = frozenset({502, 503, 504})
_NO_LIMIT = 1 << 62


class Attempts:
    """One run's reconnections: how many in a row failed, whether to try again, how long
    to wait first."""

    def __init__(self, exchange: Exchange, policy: Reconnect) -> None:
        self._exchange = exchange
        self._policy = policy
        self.failures = 0

    def progressed(self) -> None:
        """A new frame arrived: the next break starts counting again."""
        self.failures = 0

    def wanted(self, cursor: str | None) -> bool:
        """Whether to reconnect now: the stream gave a ``cursor``, its run is not over,
        and attempts are left (counting this one)."""
        consumer = self._exchange.consumer
        if cursor is None or consumer is None or consumer.failure is not None:
            return False
        verifier = consumer.verifier
        if verifier.runs and verifier.current_run is None:
            return False  # the run ended: nothing to resume
        self.failures += 1
        return self.failures <= self._policy.attempts

    def wait(self, retry: int | None = None) -> float:
        """Seconds to wait before the next attempt (``retry``: the stream's, in ms)."""
        return self._policy.wait(self.failures, None if retry is None else retry / 1000)


class Resumption(Attempts):
    """An SSE run's stream across its connections: complete frames, the last id, the waits."""

    def __init__(self, exchange: Exchange, policy: Reconnect) -> None:
        super().__init__(exchange, policy)
        self._decoder: SSEDecoder | None = SSEDecoder(max_event_bytes=_NO_LIMIT, strict_end=False)
        self._held = b""

    @property
    def last_event_id(self) -> str | None:
        """The cursor to resume after (``None``: the stream gave none)."""
        return None if self._decoder is None else self._decoder.last_event_id

    def forward(self, chunk: bytes) -> bytes:
        """The complete frames ``chunk`` finishes (the rest is held back)."""
        decoder = self._decoder
        if decoder is None:
            return chunk
        data = self._held + chunk
        try:
            decoder.feed(chunk)
        except AgentProtoError:  # the consumer will say what is wrong: stop resuming
            self._decoder = None
            self._held = b""
            return data
        cut = len(data) - decoder.buffered
        self._held = data[cut:]
        if cut:
            self.progressed()
        return data[:cut]

    def resume(self) -> bool:
        """Whether to reconnect now (see :meth:`Attempts.wanted`); the frame the break cut
        is dropped, since it comes again whole."""
        if not self.wanted(self.last_event_id):
            return False
        self._held = b""
        return True

    def backoff(self) -> float:
        """Seconds to wait before the next attempt (the stream's ``retry:`` first)."""
        return self.wait(None if self._decoder is None else self._decoder.retry)

    @staticmethod
    def retryable(status: int) -> bool:
        """Whether a reconnection answered with ``status`` is tried again."""
        return status in _RETRYABLE_STATUS
