"""Former name of :mod:`agentproto.agui._compat` (version compatibility), kept as an alias."""

from agentproto.agui._compat import (
    CompatibilityBoundary,
    flatten_for_peer,
    parse_version,
    upgrade_input,
)

__all__ = ["CompatibilityBoundary", "flatten_for_peer", "parse_version", "upgrade_input"]
