"""The one JSON parser and line reader of both protocols.

* ``codec``: parsing and encoding with the limits a network peer needs (depth, size,
  exact big integers, byte offsets in errors);
* ``lines``: JSON Lines (NDJSON), one document per line, within a line-length limit.
"""
