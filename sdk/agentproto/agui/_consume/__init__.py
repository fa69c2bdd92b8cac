"""Consuming a stream, sans I/O: bytes in, verified events and state out.

* ``decoder``: stages 1-4 (transport framing, compatibility, the schema);
* ``chunks``: chunk expansion (``*_CHUNK`` into START/CONTENT/END);
* ``later_stages``: stages 5-7 for each event (expansion, verification, the reducer);
* ``consumer``: :class:`~agentproto.agui.Consumer`, the whole pipeline;
* ``stream``: thin sync/async adapters over byte iterators;
* ``state_view``: the state read as the application's own type.
"""
