"""The agent the fault-injection tests run in worker processes: the scripted run, a pause of
``RESUME_DELAY`` seconds between its events, its frames in the log ``RESUME_LOG`` names
(``memory:``, the default, ``sqlite:PATH`` or ``redis:URL``; ``RESUME_PREFIX`` keys a
Redis log apart)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agui_scripted_agent import scripted_events

from agentproto.agui import RunProducer, agent_app
from agentproto.stores import EventLog, MemoryEventLog, RedisEventLog, SQLiteEventLog


def _log() -> EventLog:
    kind, _, where = os.environ.get("RESUME_LOG", "memory:").partition(":")
    if kind == "memory":
        return MemoryEventLog()
    if kind == "sqlite":
        return SQLiteEventLog(where)
    return RedisEventLog(where, prefix=os.environ.get("RESUME_PREFIX", "agentproto"))


DELAY = float(os.environ.get("RESUME_DELAY", "0"))


async def handler(run_input: Any, producer: RunProducer) -> None:
    for event in scripted_events(run_input):
        producer.emit(event)
        await asyncio.sleep(DELAY)


app = agent_app(handler, log=_log(), detached_timeout=None)
