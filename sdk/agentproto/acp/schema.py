"""Every class and alias of the ACP v2 schema, unstable additions included (generated).

The module is generated from ``schema.unstable.json``, a superset of the stable
v2 schema, so stable documents parse too. Three-state patch fields default to
:data:`agentproto.acp.UNSET` (omitted); ``None`` means "clear".
"""

from agentproto.acp._generated_v2 import *  # noqa: F403
