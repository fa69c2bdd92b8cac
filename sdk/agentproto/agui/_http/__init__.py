"""Running an agent over HTTP with httpx (the I/O edge; the ``agentproto[http]`` extra).

* ``client``: :class:`~agentproto.agui.HttpAgent` and :class:`~agentproto.agui.AsyncHttpAgent`,
  built on the sans-I/O thread of ``_thread.exchange``;
* ``reconnect``: resuming a broken SSE stream after its last cursor
  (:class:`~agentproto.agui.Reconnect`).
"""
