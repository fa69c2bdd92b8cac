"""Event logs and thread stores, behind one small protocol (public in :mod:`agentproto.stores`).

* ``log``: the protocols (:class:`EventLog`, :class:`ThreadStore`), cursors and retention;
* ``memory``: in this process, bounded (the default);
* ``sqlite``: one embedded file, surviving a restart;
* ``redis``: a Redis server, shared by several workers.
"""
