"""The session state an ACP client keeps: every ``session/update`` applied.

* ``meta``: the top-level ``_meta`` metadata patch rule;
* ``entities``: one description per entity kind and its state record (derived from the
  generated classes);
* ``rules``: the upsert rules, one per update kind, most of them derived;
* ``session``: :class:`~agentproto.acp.SessionState`;
* ``store``: the sessions of one connection, fed whole JSON-RPC messages.
"""
