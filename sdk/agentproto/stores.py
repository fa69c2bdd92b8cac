"""Where streams and threads are kept: event logs and thread stores.

An :class:`EventLog` keeps each run's frames so that a client that lost its
connection resumes after the last frame it saw (its *cursor*); a
:class:`ThreadStore` keeps each thread's recorded runs so that a server can give a
thread back after a restart. Three implementations of each, one contract:

* :class:`MemoryEventLog` / :class:`MemoryThreadStore`: this process's memory,
  bounded; the default, lost with the process;
* :class:`SQLiteEventLog` / :class:`SQLiteThreadStore`: one file (standard
  library), surviving a restart;
* :class:`RedisEventLog` / :class:`RedisThreadStore`: a Redis server, shared by
  several workers (``pip install 'agentproto[redis]'``).

Cursors are opaque and checked: a malformed, foreign or ahead cursor is a
:class:`~agentproto.CursorError`, a dropped one a :class:`~agentproto.CursorExpiredError`,
a failing backend a :class:`~agentproto.StoreError`.
"""

from __future__ import annotations

from agentproto._core.exports import export
from agentproto._core.store.log import Entry, EventLog, Page, Retention, ThreadStore
from agentproto._core.store.memory import MemoryEventLog, MemoryThreadStore
from agentproto._core.store.redis import RedisEventLog, RedisThreadStore
from agentproto._core.store.sqlite import SQLiteEventLog, SQLiteThreadStore

__all__ = [
    "Entry",
    "EventLog",
    "MemoryEventLog",
    "MemoryThreadStore",
    "Page",
    "RedisEventLog",
    "RedisThreadStore",
    "Retention",
    "SQLiteEventLog",
    "SQLiteThreadStore",
    "ThreadStore",
]

export(__name__, globals(), __all__)
