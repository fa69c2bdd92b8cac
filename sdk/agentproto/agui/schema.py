"""Every class and alias of the AG-UI schema (generated; see ``agentproto.agui._generated``).

Events, messages, content parts, run input, capabilities and patch operations are
attrs classes with snake_case attributes; their wire names live in each field's
metadata. Unions (``Event``, ``Message``, ``ContentPart``, ...) are type aliases.
"""

from agentproto.agui._generated import *  # noqa: F403
