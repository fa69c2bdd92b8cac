"""ACP beyond stdio, the transport itself (Streamable HTTP and WebSocket).

* ``wire``: headers, routes and cursors of the transport;
* ``client``: the byte streams an :class:`~agentproto.acp.AcpClient` talks to a remote
  agent through (the server is :mod:`agentproto.acp._serve`).
"""
