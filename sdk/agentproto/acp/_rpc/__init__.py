"""One ACP connection, sans I/O.

* ``endpoint``: the JSON-RPC endpoint (requests, responses, notifications, limits);
* ``events``: what the endpoint returns;
* ``negotiation``: protocol version negotiation (``initialize``), both sides;
* ``turn``: a session's foreground work (the prompt turn's state machine).
"""
