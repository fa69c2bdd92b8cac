"""Writing and serving an agent: the public face is :mod:`agentproto.acp.agent`.

* ``updates``: typed helpers for one session's updates, keeping the producer duties;
* ``agent``: :class:`~agentproto.acp.Agent` and :class:`~agentproto.acp.AgentSession`;
* ``runner``: the runner that keeps the agent's protocol duties.
"""
