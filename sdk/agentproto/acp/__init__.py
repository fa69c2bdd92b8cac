"""ACP v2: agent ↔ code-editor ``session/update`` upserts.

The typed layer (every schema class) is :mod:`agentproto.acp.schema` (v1:
:mod:`agentproto.acp.schema_v1`); this package exports the hand-written API.
"""

from agentproto._core.unset import UNSET, Unset
from agentproto.acp import schema, schema_v1
from agentproto.acp._generated_v2 import SessionUpdate
from agentproto.acp._wire import (
    dump_session_update,
    make_converter,
    make_v1_converter,
    parse_session_update,
)

__all__ = [
    "UNSET",
    "SessionUpdate",
    "Unset",
    "dump_session_update",
    "make_converter",
    "make_v1_converter",
    "parse_session_update",
    "schema",
    "schema_v1",
]
