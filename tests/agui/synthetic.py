"""An event class no runtime rule knows: what a regeneration adding an event type produces."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from agentproto.agui import schema


@attrs.define(kw_only=True)
class FutureEvent:
    """schema.json#FutureEvent (synthesised: a type a newer schema might add)."""

    __agentproto_closed__: ClassVar[bool] = True
    type: Literal["FUTURE_EVENT"] = attrs.field(
        default="FUTURE_EVENT",
        metadata={"required": True, "wire": "type", "const": "FUTURE_EVENT"},
    )
    message_id: str | None = attrs.field(
        default=None, metadata={"required": False, "wire": "messageId"}
    )
    subagent_run_id: str | None = attrs.field(
        default=None, metadata={"required": False, "wire": "subagentRunId"}
    )


FUTURE_UNION: Any = schema.Event | FutureEvent  # type: ignore[operator]
"""The generated union, regenerated with one more member."""
