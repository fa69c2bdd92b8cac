"""What a request for an AG-UI run comes to (:class:`Begun`), whatever carries it; the
ASGI request side both protocols' servers share is :mod:`agentproto._core.asgi`."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import attrs

from agentproto._core.store.log import Entry
from agentproto.agui._generated import Event

__all__ = ["Begun"]


@attrs.frozen
class Begun:
    """What a request for a run comes to, whatever carries it (HTTP, a WebSocket): the
    events of a run served without a log, the log stream to read after a cursor, or a
    refusal (its HTTP status and JSON body)."""

    events: AsyncGenerator[Event, None] | None = None
    stream: str | None = None
    cursor: str | None = None
    refusal: tuple[int, dict[str, Any]] | None = None
    preface: tuple[Entry, ...] = ()  # a resync's entries, sent before those after cursor
