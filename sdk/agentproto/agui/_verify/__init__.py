"""Is the stream legal: the AG-UI sequencing rules, one state machine over expanded events.

* ``verifier``: :class:`~agentproto.agui.Verifier`, every rule as one of its methods;
* ``runs``: what it tracks within a run (records, open items, steps);
* ``subagents``: what the stream said about each subagent invocation.
"""
