"""Which protocol version a message is read in: the one table and converter per ACP version.

The sans-I/O endpoint (:mod:`agentproto.acp._rpc.endpoint`) speaks one version at a time;
``initialize`` is the one message read by the ``protocolVersion`` it carries, since
it is what negotiates the version (the v1 bridge, :mod:`agentproto.acp._io.v1bridge`,
then switches the endpoint).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from agentproto._core.wire.converter import WireConverter
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.methods import MethodTable, method_table
from agentproto.acp._protocol.wire import make_converter, make_v1_converter

__all__ = ["initialize_type", "is_v1", "wire_version"]

_INITIALIZE = v2.InitializeRequest.__agentproto_method__


@functools.cache
def wire_version(protocol: int) -> tuple[MethodTable, WireConverter]:
    """The method table and converter of one protocol version."""
    return method_table(protocol), (make_converter() if protocol == 2 else make_v1_converter())


def is_v1(value: object, name: str) -> bool:
    """Whether ``value`` is an instance of the ACP v1 class ``name``.

    v1 is not imported to answer: no v1 instance exists before something imported it
    (a v1 peer's ``initialize``, read by :func:`initialize_type`), so a v2 session
    never loads the v1 schema.
    """
    schema = sys.modules.get("agentproto.acp._generated_v1")
    return schema is not None and isinstance(value, getattr(schema, name))


def initialize_type(
    protocol: int, method: str, value: Any, result: bool, default: tuple[Any, WireConverter]
) -> tuple[Any, WireConverter]:
    """How to read a message: ``initialize`` by the ``protocolVersion`` it carries.

    Returns:
        The params (or result) class and converter of that version; ``default``
        when ``value`` is of the version ``protocol`` spoken now, or not ``initialize``.
    """
    version = value.get("protocolVersion") if isinstance(value, dict) else None
    if method != _INITIALIZE or version == protocol or version not in (1, 2):
        return default
    table, converter = wire_version(version)
    spec = table.requests[method]
    return (spec.result if result else spec.params), converter
