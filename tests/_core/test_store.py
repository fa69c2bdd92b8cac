"""The event log and thread store contract, held by every implementation alike: memory,
SQLite and a real Redis server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentproto import CursorError, CursorExpiredError, StoreError, UnknownStreamError, UsageError
from agentproto._core.store.log import cursor_of
from agentproto.stores import (
    EventLog,
    MemoryEventLog,
    MemoryThreadStore,
    RedisEventLog,
    RedisThreadStore,
    Retention,
    SQLiteEventLog,
    SQLiteThreadStore,
    ThreadStore,
)
from tests.needs import redis_server

LogFactory = Callable[[Retention], EventLog]
KINDS = ["memory", "sqlite", "redis"]


def _log_factory(kind: str, tmp_path: Path) -> LogFactory:
    if kind == "memory":
        return lambda retention: MemoryEventLog(retention)
    if kind == "sqlite":
        return lambda retention: SQLiteEventLog(tmp_path / "log.db", retention=retention)
    url = redis_server()
    prefix = f"t{uuid.uuid4().hex}"  # one key space per test
    return lambda retention: RedisEventLog(url, prefix=prefix, retention=retention)


@pytest.fixture(params=KINDS)
async def make_log(request: Any, tmp_path: Path) -> AsyncIterator[LogFactory]:
    opened: list[EventLog] = []
    factory = _log_factory(request.param, tmp_path)

    def make(retention: Retention | None = None) -> EventLog:
        log = factory(retention or Retention())
        opened.append(log)
        return log

    yield make
    for log in opened:
        await log.aclose()


@pytest.fixture
async def log(make_log: LogFactory) -> EventLog:
    return make_log(Retention())


@pytest.fixture(params=KINDS)
async def threads(request: Any, tmp_path: Path) -> AsyncIterator[ThreadStore]:
    store: ThreadStore
    if request.param == "memory":
        store = MemoryThreadStore()
    elif request.param == "sqlite":
        store = SQLiteThreadStore(tmp_path / "threads.db")
    else:
        store = RedisThreadStore(redis_server(), prefix=f"t{uuid.uuid4().hex}")
    yield store
    await store.aclose()


def _data(page: Any) -> list[bytes]:
    return [entry.data for entry in page.entries]


async def test_implementations_satisfy_the_protocols(log: EventLog, threads: ThreadStore) -> None:
    """Every log is an EventLog and every store a ThreadStore (the runtime-checkable protocols)."""
    assert isinstance(log, EventLog)
    assert isinstance(threads, ThreadStore)


async def test_read_after_a_cursor_returns_exactly_the_frames_that_follow(log: EventLog) -> None:
    """Reading after the cursor of frame k gives frames k+1.. in order, whole and byte-exact."""
    frames = [b"a", b"\x00\xff binary", b"", b"d" * 70_000]
    cursors = await log.append("s", frames[:2])
    cursors += await log.append("s", frames[2:])
    assert len(set(cursors)) == 4
    whole = await log.read("s")
    assert _data(whole) == frames
    assert [entry.cursor for entry in whole.entries] == cursors
    for k, cursor in enumerate(cursors):
        page = await log.read("s", cursor)
        assert _data(page) == frames[k + 1 :]
        assert page.cursor == cursors[-1]
        assert not page.ended


async def test_limit_pages_through_a_stream(log: EventLog) -> None:
    """``limit`` bounds a page; reading on from its cursor gives the rest, nothing twice."""
    await log.append("s", [str(i).encode() for i in range(7)])
    seen: list[bytes] = []
    cursor = None
    while True:
        page = await log.read("s", cursor, limit=3)
        if not page.entries:
            break
        assert len(page.entries) <= 3
        seen += _data(page)
        cursor = page.cursor
    assert seen == [str(i).encode() for i in range(7)]


async def test_an_ended_stream_says_so_once_its_last_frame_is_read(log: EventLog) -> None:
    """``ended`` is set only on a page that reaches the last frame of an ended stream, and no
    frame may be appended after the end."""
    cursors = await log.append("s", [b"1", b"2"], end=True)
    assert (await log.read("s")).ended
    assert not (await log.read("s", limit=1)).ended
    assert (await log.read("s", cursors[-1])).ended
    with pytest.raises(UsageError) as caught:
        await log.append("s", [b"3"])
    assert caught.value.code == "store.stream-ended"
    assert _data(await log.read("s")) == [b"1", b"2"]


async def test_an_empty_stream_can_be_ended(log: EventLog) -> None:
    """A stream ended before any frame reads as ended and empty."""
    assert await log.append("s", [], end=True) == []
    page = await log.read("s")
    assert page.entries == () and page.ended and page.cursor is None


async def test_cursors_are_checked_never_trusted(log: EventLog) -> None:
    """A malformed, foreign or ahead cursor is a CursorError naming why, and never yields
    another stream's frames."""
    [mine] = await log.append("mine", [b"secret-of-mine"])
    theirs = (await log.append("theirs", [b"t1", b"t2"]))[0]
    tag = theirs.partition(".")[0]
    cases = {
        "store.cursor-malformed": [
            "",
            "7",
            "x.y",
            f"{tag}.-1",
            f"{tag}.01",
            f"{tag}.1e3",
            "a" * 500,
        ],
        "store.cursor-foreign": [mine],
        "store.cursor-ahead": [f"{tag}.3", f"{tag}.99999999999999999999"],
    }
    for code, cursors in cases.items():
        for cursor in cursors:
            with pytest.raises(CursorError) as caught:
                await log.read("theirs", cursor)
            assert caught.value.code == code, cursor
            assert not isinstance(caught.value, CursorExpiredError)


async def test_the_start_cursor_reads_every_frame(log: EventLog) -> None:
    """``cursor_of(stream, 0)`` names the stream's start: reading after it gives every frame."""
    frames = [b"1", b"2"]
    await log.append("s", frames)
    assert _data(await log.read("s", cursor_of("s", 0))) == frames
    with pytest.raises(CursorError):
        await log.read("t", cursor_of("s", 0))


async def test_unknown_streams(log: EventLog) -> None:
    """A stream never written is UnknownStreamError; with a cursor for it, CursorExpiredError
    (the log may have held it once)."""
    with pytest.raises(UnknownStreamError):
        await log.read("nobody")
    [cursor] = await log.append("gone", [b"x"])
    await log.drop("gone")
    with pytest.raises(CursorExpiredError):
        await log.read("gone", cursor)
    await log.drop("never-there")  # dropping an unknown stream is no error


async def test_frames_beyond_max_frames_expire_oldest_first(make_log: LogFactory) -> None:
    """With max_frames=3, the three newest frames are kept; a cursor before them expires, and
    so does reading from the start (never a silent gap); one at their edge still reads on."""
    log = make_log(Retention(max_frames=3))
    cursors = await log.append("s", [b"1", b"2", b"3"])
    cursors += await log.append("s", [b"4", b"5"])
    assert _data(await log.read("s", cursors[1])) == [b"3", b"4", b"5"]
    for cursor in (cursors[0], None):
        with pytest.raises(CursorExpiredError) as caught:
            await log.read("s", cursor)
        assert caught.value.code == "store.cursor-expired"


async def test_idle_streams_expire_whole(make_log: LogFactory) -> None:
    """A stream with no append for max_age seconds is dropped; a cursor into it expires."""
    log = make_log(Retention(max_age=0.2))
    [cursor] = await log.append("s", [b"x"])
    await asyncio.sleep(0.4)
    with pytest.raises(CursorExpiredError):
        await log.read("s", cursor)
    with pytest.raises(UnknownStreamError):
        await log.read("s")


async def test_a_waiting_reader_gets_the_live_tail(log: EventLog) -> None:
    """A reader waiting after the last frame wakes with the next append, and with the end."""
    [first] = await log.append("s", [b"1"])

    async def later() -> None:
        await asyncio.sleep(0.05)
        await log.append("s", [b"2"])

    writer = asyncio.create_task(later())
    page = await log.read("s", first, wait=5)
    await writer
    assert _data(page) == [b"2"]
    ending = asyncio.create_task(log.append("s", [], end=True))
    page = await log.read("s", page.cursor, wait=5)
    await ending
    assert page.entries == () and page.ended


async def test_a_wait_gives_up_after_its_time(log: EventLog) -> None:
    """A reader waiting on a quiet stream returns an empty page when its wait is over."""
    [cursor] = await log.append("s", [b"1"])
    loop = asyncio.get_running_loop()
    started = loop.time()
    page = await log.read("s", cursor, wait=0.2)
    assert page.entries == () and not page.ended and page.cursor == cursor
    assert loop.time() - started >= 0.15


async def test_the_log_is_shared_through_its_backend(make_log: LogFactory, tmp_path: Path) -> None:
    """Two log objects on one backend see each other's frames, as two workers (Redis) or a
    restarted process (SQLite) do; the in-memory log is one process's own."""
    writer, reader = make_log(Retention()), make_log(Retention())
    [cursor] = await writer.append("s", [b"1"])
    if isinstance(writer, MemoryEventLog):
        with pytest.raises(CursorExpiredError):
            await reader.read("s", cursor)
        return
    appending = asyncio.create_task(_append_later(writer, "s", [b"2"], end=True))
    page = await reader.read("s", cursor, wait=5)
    await appending
    assert _data(page) == [b"2"]


async def _append_later(log: EventLog, stream: str, frames: list[bytes], *, end: bool) -> None:
    await asyncio.sleep(0.05)
    await log.append(stream, frames, end=end)


async def test_threads_keep_their_records_in_order(threads: ThreadStore) -> None:
    """A thread's records come back in the order added, byte-exact; threads are separate."""
    assert await threads.records("t") == []
    await threads.add("t", b'{"run": 1}')
    await threads.add("u", b"other")
    await threads.add("t", b"\x00binary")
    assert await threads.records("t") == [b'{"run": 1}', b"\x00binary"]
    await threads.drop("t")
    assert await threads.records("t") == []
    assert await threads.records("u") == [b"other"]


async def test_the_memory_stores_are_bounded() -> None:
    """The in-memory log keeps at most max_streams streams and the thread store max_threads
    threads, the least recently written going first."""
    log = MemoryEventLog(Retention(max_streams=2))
    for name in ("a", "b", "c"):
        await log.append(name, [name.encode()])
    with pytest.raises(UnknownStreamError):
        await log.read("a")
    assert _data(await log.read("c")) == [b"c"]
    store = MemoryThreadStore(max_threads=1)
    await store.add("a", b"1")
    await store.add("b", b"2")
    assert await store.records("a") == []


async def test_a_failing_sqlite_file_is_a_store_error(tmp_path: Path) -> None:
    """A database that cannot be opened or written is a StoreError naming the operation."""
    log = SQLiteEventLog(tmp_path / "missing-folder" / "log.db")
    with pytest.raises(StoreError) as caught:
        await log.append("s", [b"x"])
    assert caught.value.operation == "append"
    assert caught.value.__cause__ is not None
    store = SQLiteThreadStore(tmp_path)  # a folder, not a database file
    with pytest.raises(StoreError):
        await store.add("t", b"x")


async def test_a_lost_redis_server_is_a_store_error() -> None:
    """A Redis server that cannot be reached is a StoreError from the call, never a hang."""
    redis_server()  # the package is needed to build the client
    with socket_closed_port() as port:
        log = RedisEventLog(f"redis://127.0.0.1:{port}/0")
        with pytest.raises(StoreError) as caught:
            await asyncio.wait_for(log.append("s", [b"x"]), 10)
        assert caught.value.operation == "append"
        with pytest.raises(StoreError):
            await asyncio.wait_for(log.read("s", wait=1), 10)
        await log.aclose()


def socket_closed_port() -> Any:
    """A context giving a loopback port nothing listens on."""
    import contextlib
    import socket

    @contextlib.contextmanager
    def closed() -> Any:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        yield port

    return closed()


async def test_sqlite_survives_a_restart(tmp_path: Path) -> None:
    """Frames and threads written before the file is closed read back from a new object, and
    a cursor issued before the restart still reads on."""
    path = tmp_path / "store.db"
    log, threads = SQLiteEventLog(path), SQLiteThreadStore(path)
    cursors = await log.append("s", [b"1", b"2"])
    await threads.add("t", b"run")
    await log.aclose()
    await threads.aclose()
    log, threads = SQLiteEventLog(path), SQLiteThreadStore(path)
    assert _data(await log.read("s", cursors[0])) == [b"2"]
    assert await threads.records("t") == [b"run"]
    await log.append("s", [b"3"], end=True)
    assert (await log.read("s", cursors[1])).ended
    await log.aclose()
    await threads.aclose()


async def test_foreign_data_under_a_redis_key_is_a_store_error() -> None:
    """Entries this log did not write under its keys are a StoreError, not a bare KeyError."""
    import redis.asyncio

    url, prefix = redis_server(), f"t{uuid.uuid4().hex}"
    log = RedisEventLog(url, prefix=prefix)
    await log.append("s", [b"mine"])
    client = redis.asyncio.Redis.from_url(url)
    await client.xadd(f"{prefix}:log:s", {"x": "theirs"}, id="2-0")
    await client.hset(f"{prefix}:meta:s", mapping={"last": 2})
    with pytest.raises(StoreError) as caught:
        await log.read("s")
    assert caught.value.operation == "read"
    await client.aclose()
    await log.aclose()
