"""What the stream builds: the conversation reducer (messages, activities, state).

* ``conversation``: :class:`~agentproto.agui.Conversation`, every rule as one of its
  methods, dispatched by event class;
* ``records``: the plain-JSON records it keeps (a message, a tool call) and
  :class:`~agentproto.agui.Change`.
"""
