"""Producing events with types: :class:`~agentproto.agui.RunProducer` and its handles.

* ``producer``: the producer, its gate (every producer duty checked through the
  verifier and the reducer) and all its typed helpers;
* ``handles``: what the streaming helpers return (open items and brackets), typed
  against the producer.
"""
