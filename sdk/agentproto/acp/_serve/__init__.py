"""An ACP agent served beyond stdio: ``app``, the ASGI application of :func:`acp_app`
(HTTP and WebSocket, on the transport of :mod:`agentproto.acp._remote`)."""
