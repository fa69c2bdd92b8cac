"""ACP v2 documents ⇄ typed updates: the converters and the parse/dump functions."""

from __future__ import annotations

from typing import Any

from agentproto._core.converter import WireConverter
from agentproto._core.diagnostics import Diagnostic
from agentproto.acp import _generated_v1, _generated_v2
from agentproto.acp._generated_v2 import SessionUpdate

__all__ = ["dump_session_update", "make_converter", "make_v1_converter", "parse_session_update"]


def make_converter() -> WireConverter:
    """A new converter for the ACP v2 classes."""
    return WireConverter(_generated_v2)


def make_v1_converter() -> WireConverter:
    """A new converter for the ACP v1 classes."""
    return WireConverter(_generated_v1)


_converter = make_converter()


def parse_session_update(obj: Any, *, diagnostics: list[Diagnostic] | None = None) -> SessionUpdate:
    """Parse the ``update`` of a ``session/update`` notification.

    Args:
        obj: the update as decoded JSON (a dict with ``sessionUpdate``).
        diagnostics: ``None`` (default) for strict parsing, where a field the
            schema rejects is an error; a list to parse as the schema's
            ``x-deserialize-default-on-error`` / ``skip-invalid-items`` rules say,
            reporting each repair there. An unknown ``sessionUpdate`` kind parses as
            :class:`~agentproto.acp.schema.OtherSessionUpdate` in both modes.

    Raises:
        SchemaError: the update does not match the schema.
    """
    return _converter.load(obj, SessionUpdate, diagnostics=diagnostics)  # type: ignore[no-any-return]


def dump_session_update(update: SessionUpdate) -> dict[str, Any]:
    """The wire JSON of a typed update; omitted patch fields stay omitted, cleared ones are null."""
    return _converter.dump(update)  # type: ignore[no-any-return]
