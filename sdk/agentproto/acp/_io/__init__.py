"""ACP over asyncio (the I/O edge): the public face is :mod:`agentproto.acp.connection`.

* ``streams``: the byte streams a connection talks to, and the translator hook;
* ``connection``: connections over byte streams (both sides);
* ``transports``: an agent subprocess, this process's stdio, in-memory pipes;
* ``v1bridge``: a v1 peer behind the v2 API.
"""
