"""The Redis event log and thread store: shared by every worker that reaches the server.

A stream is a Redis stream (``<prefix>:log:<name>``) whose entry ids are the frame
positions (``<position>-0``), beside a hash (``<prefix>:meta:<name>``) holding the
oldest and newest positions held and whether the stream was ended. An append is
one Lua script (atomic: every frame or none); a read takes the hash and the
entries in one ``MULTI``; a waiting reader blocks in ``XREAD``, so a frame one
worker appends wakes a reader in another. Ending a stream adds a marker entry
(``<last>-1``, no position of its own) that wakes the readers too.

What Redis keeps is what it is configured to keep: without persistence (RDB or
AOF) a restart of the server loses every stream. Keys of one stream must live on
one node: Redis Cluster is not supported. Requires Redis 6.2 or later and the
``redis`` package (``pip install 'agentproto[redis]'``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from agentproto._core.errors import StoreError, UsageError, chained
from agentproto._core.optional import missing
from agentproto._core.store.log import (
    Entry,
    Page,
    Retention,
    check_position,
    cursor_of,
    position_of,
    unknown,
)

__all__ = ["RedisEventLog", "RedisThreadStore"]

_T = TypeVar("_T")
_INSTALL = "pip install 'agentproto[redis]'"
_ENDED = "agentproto: stream ended"

_APPEND = """
local meta = redis.call('HMGET', KEYS[2], 'first', 'last', 'ended')
if meta[3] == '1' then return redis.error_reply('ENDED_MARK') end
local first = tonumber(meta[1] or '1')
local last = tonumber(meta[2] or '0')
local start = last + 1
for i = 4, #ARGV do
  last = last + 1
  redis.call('XADD', KEYS[1], last .. '-0', 'd', ARGV[i])
end
local cap = tonumber(ARGV[2])
if cap > 0 and last - first + 1 > cap then
  first = last - cap + 1
  redis.call('XTRIM', KEYS[1], 'MINID', first .. '-0')
end
if ARGV[1] == '1' then
  redis.call('XADD', KEYS[1], last .. '-1', 'e', '1')
end
redis.call('HSET', KEYS[2], 'first', first, 'last', last, 'ended', ARGV[1])
local age = tonumber(ARGV[3])
if age > 0 then
  redis.call('PEXPIRE', KEYS[1], age)
  redis.call('PEXPIRE', KEYS[2], age)
end
return start
""".replace("ENDED_MARK", _ENDED)


def _client(url: str, client: Any, feature: str) -> Any:
    if client is not None:
        return client
    try:
        import redis.asyncio
    except ModuleNotFoundError as error:
        raise missing(error, feature, _INSTALL) from None
    return redis.asyncio.Redis.from_url(url)


async def _guard(operation: str, work: Callable[[], Awaitable[_T]]) -> _T:
    """Run ``work``; a Redis or socket failure is a :class:`StoreError`."""
    try:
        return await work()
    except (UsageError, StoreError):
        raise
    except Exception as exc:  # redis.RedisError and the socket errors under it
        if "ResponseError" in type(exc).__name__ and _ENDED in str(exc):
            raise UsageError(
                "store.stream-ended", "the stream was ended: no frame may follow"
            ) from None
        raise chained(StoreError(operation, f"Redis: {type(exc).__name__}: {exc}"), exc) from exc


def _position(entry_id: Any) -> tuple[int, bool]:
    """(position, is the end marker) of an entry id ``b"<position>-<0|1>"``."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    position, _, seq = text.partition("-")
    return int(position), seq == "1"


class RedisEventLog:
    """An :class:`~agentproto.stores.EventLog` in Redis, shared by several workers.

    Args:
        url: the server, as ``redis.asyncio.Redis.from_url`` reads it.
        client: a ``redis.asyncio.Redis`` to use instead (then ``url`` is ignored,
            and :meth:`aclose` leaves it open).
        prefix: the first part of every key this log writes.
        retention: what is kept (``max_streams`` does not apply).

    Raises:
        MissingDependencyError: the ``redis`` package is not installed.
    """

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        client: Any = None,
        prefix: str = "agentproto",
        retention: Retention | None = None,
    ) -> None:
        self._owned = client is None
        self._redis = _client(url, client, "agentproto.stores.RedisEventLog")
        self.prefix = prefix
        self.retention = retention or Retention()
        self._append = self._redis.register_script(_APPEND)

    def _keys(self, stream: str) -> list[str]:
        return [f"{self.prefix}:log:{stream}", f"{self.prefix}:meta:{stream}"]

    async def append(self, stream: str, frames: Sequence[bytes], *, end: bool = False) -> list[str]:
        """See :meth:`EventLog.append <agentproto.stores.EventLog.append>`."""
        retention = self.retention
        args: list[Any] = [
            "1" if end else "0",
            retention.max_frames or 0,
            int(retention.max_age * 1000) if retention.max_age is not None else 0,
            *(bytes(frame) for frame in frames),
        ]
        start = await _guard("append", lambda: self._append(keys=self._keys(stream), args=args))
        return [cursor_of(stream, int(start) + i) for i in range(len(frames))]

    async def _page(self, stream: str, after: int, limit: int) -> Page:
        log, meta = self._keys(stream)

        async def work() -> list[Any]:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hmget(meta, "first", "last", "ended")
                pipe.xrange(log, f"({after}-1" if after else "-", "+", count=limit + 1)
                result: list[Any] = await pipe.execute()
                return result

        (first, last, ended), rows = await _guard("read", work)
        if last is None:
            raise unknown(stream, after)
        try:
            held = int(first), int(last)
            found = [(*_position(entry_id), fields) for entry_id, fields in rows]
            frames = [(p, bytes(fields[b"d"])) for p, marker, fields in found if not marker]
        except (KeyError, TypeError, ValueError) as exc:  # keys this log did not write
            raise chained(
                StoreError("read", f"Redis: {stream!r} holds what this log did not write"), exc
            ) from exc
        check_position(stream, after, *held)
        entries = [Entry(cursor_of(stream, p), data) for p, data in frames if p > after][:limit]
        position = after + len(entries)
        cursor = cursor_of(stream, position) if position else None
        return Page(tuple(entries), ended == b"1" and position == held[1], cursor)

    async def read(
        self, stream: str, after: str | None = None, *, limit: int = 1000, wait: float = 0.0
    ) -> Page:
        """See :meth:`EventLog.read <agentproto.stores.EventLog.read>`."""
        position = position_of(stream, after)
        page = await self._page(stream, position, limit)
        deadline = time.monotonic() + wait
        log = self._keys(stream)[0]
        while not page.entries and not page.ended:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            await _guard(
                "read",
                partial(
                    self._redis.xread, {log: f"{position}-0"}, block=max(1, int(remaining * 1000))
                ),
            )
            page = await self._page(stream, position, limit)
        return page

    async def drop(self, stream: str) -> None:
        """See :meth:`EventLog.drop <agentproto.stores.EventLog.drop>`."""
        await _guard("drop", lambda: self._redis.delete(*self._keys(stream)))

    async def aclose(self) -> None:
        """Close the connection pool (unless the client was given)."""
        if self._owned:
            await self._redis.aclose()


class RedisThreadStore:
    """A :class:`~agentproto.stores.ThreadStore` in Redis: a list per thread.

    Args: as for :class:`RedisEventLog` (``url``, ``client``, ``prefix``).
    """

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        client: Any = None,
        prefix: str = "agentproto",
    ) -> None:
        self._owned = client is None
        self._redis = _client(url, client, "agentproto.stores.RedisThreadStore")
        self.prefix = prefix

    def _key(self, thread: str) -> str:
        return f"{self.prefix}:thread:{thread}"

    async def add(self, thread: str, record: bytes) -> None:
        """See :meth:`ThreadStore.add <agentproto.stores.ThreadStore.add>`."""
        await _guard("add", lambda: self._redis.rpush(self._key(thread), bytes(record)))

    async def records(self, thread: str) -> list[bytes]:
        """See :meth:`ThreadStore.records <agentproto.stores.ThreadStore.records>`."""
        rows = await _guard("records", lambda: self._redis.lrange(self._key(thread), 0, -1))
        return [bytes(row) for row in rows]

    async def drop(self, thread: str) -> None:
        """See :meth:`ThreadStore.drop <agentproto.stores.ThreadStore.drop>`."""
        await _guard("drop", lambda: self._redis.delete(self._key(thread)))

    async def aclose(self) -> None:
        """Close the connection pool (unless the client was given)."""
        if self._owned:
            await self._redis.aclose()
