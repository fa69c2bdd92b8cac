"""Serving AG-UI over HTTP (the I/O edge): the public face is :mod:`agentproto.agui.asgi`.

* ``request``: the request side: ASGI types, headers, the body within limits, refusals;
* ``outbox``: the bounded hand-off between an agent handler and the response;
* ``keepalive``: SSE comments in quiet stretches;
* ``app``: :class:`~agentproto.agui.EventStreamResponse` and :func:`~agentproto.agui.agent_app`;
* ``routes``: the agent as a Starlette or FastAPI route.
"""
