"""Every class and alias of the ACP v1 schema, unstable additions included (generated).

Used by the v1 ↔ v2 adapters.
"""

from agentproto.acp._generated_v1 import *  # noqa: F403
