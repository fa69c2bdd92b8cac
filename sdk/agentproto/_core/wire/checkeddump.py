"""Objects dumped to wire JSON and held to the schema on the way: each class's checked
dumper first, the slow way (dump, then check) whenever it cannot vouch for a value.

The quick way is a sealed loaders module's checked dumper
(:data:`~agentproto._core.wire.loaders.CheckedDumper`); it gives up with
:class:`~agentproto._core.wire.loaders.SlowPath` or with the first problem it meets, and
the slow way then gives the verdict and every problem. :class:`CheckedDump` is the one
place that chooses between them. It runs for every event a producer sends, so it is one
of the compiled build's modules (the compiled encoders call it, and it calls the
compiled checked dumpers, without an interpreted frame between them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentproto._core.errors import AgentProtoError
from agentproto._core.wire.checks import Context, Unrecognised
from agentproto._core.wire.loaders import CheckedDumper, SlowPath

__all__ = ["CheckedDump"]


class CheckedDump:
    """The wire JSON of objects of the classes ``dumpers`` has checked dumpers for, held
    to the schema; ``slow(obj, ctx)`` dumps and checks any object the quick way gives
    up on (or is not for), raising the error that lists every problem."""

    __slots__ = ("_dumpers", "_slow")

    def __init__(
        self,
        dumpers: Mapping[type, CheckedDumper],
        slow: Callable[[Any, Context], dict[str, Any]],
    ) -> None:
        self._dumpers = dict(dumpers)
        self._slow = slow

    def dump(self, obj: Any, ctx: Context) -> dict[str, Any]:
        """The wire JSON of ``obj`` held to the schema (``ctx``: how free-form values are
        checked, as when loading)."""
        fast = self._dumpers.get(type(obj))
        if fast is not None:
            try:
                wire: dict[str, Any] = fast(obj, ctx)
                return wire
            except (SlowPath, Unrecognised, AgentProtoError):
                pass
        return self._slow(obj, ctx)
