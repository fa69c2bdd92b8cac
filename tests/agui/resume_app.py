"""The agent the fault-injection tests run in worker processes: the scripted run, a pause of
``RESUME_DELAY`` seconds between its events, its frames in the log ``RESUME_LOG`` names
(``memory:``, the default, ``sqlite:PATH`` or ``redis:URL``; ``RESUME_PREFIX`` keys a
Redis log apart); ``RESUME_DETACHED`` and ``RESUME_LOST`` set ``detached_timeout`` (default
none) and ``lost_timeout`` (default 30)."""

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
INTERRUPTED = "int-"
"""A run whose id starts with this ends interrupted, asking for an approval, instead of
finishing: the fault matrix's interrupt."""


def run_events(run_input: Any) -> list[Any]:
    """The scripted run's events; ending interrupted for a run id starting ``int-``."""
    events = scripted_events(run_input)
    if not run_input.run_id.startswith(INTERRUPTED):
        return events
    producer = RunProducer(run_input)
    for event in events[:-1]:
        producer.emit(event)
    producer.run_interrupted(
        [{"id": "approve", "reason": "confirmation", "message": "Send the summary?"}]
    )
    return producer.drain()


async def handler(run_input: Any, producer: RunProducer) -> None:
    for event in run_events(run_input):
        producer.emit(event)
        await asyncio.sleep(DELAY)


def _seconds(name: str) -> float | None:
    value = os.environ.get(name)
    return None if value is None else float(value)


app = agent_app(
    handler,
    log=_log(),
    detached_timeout=_seconds("RESUME_DETACHED"),
    lost_timeout=_seconds("RESUME_LOST") or 30.0,
)
