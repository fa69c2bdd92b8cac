"""Writing a client (an editor): the public face is :mod:`agentproto.acp.client`.

* ``client``: :class:`~agentproto.acp.AcpClient`, its handlers and the sessions it keeps;
* ``unstable``: the calls of the unstable methods, behind an explicit opt-in.
"""
