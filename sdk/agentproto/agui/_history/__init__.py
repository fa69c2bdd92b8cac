"""Recorded runs: serialization, lineage, compaction and replay.

* ``history``: :class:`~agentproto.agui.History`, recorded runs of a thread;
* ``compaction``: verified events in, equivalent shorter events out;
* ``replay``: a recording's format detected and folded, sans I/O.
"""
