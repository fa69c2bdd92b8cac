"""Updates passed on: coalescing, resending, and converting between ACP v1 and v2.

* ``combine``: coalescing and resync (what intermediaries and replaying senders send);
* ``content``/``gitpatch``: the items whose shape differs between v1 and v2;
* ``versions``: the v1 to v2 adapter and what both directions share;
* ``to_v1``: the v2 to v1 adapter.
"""
