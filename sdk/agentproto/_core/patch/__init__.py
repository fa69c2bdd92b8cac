"""Atomic RFC 6902 JSON Patch: a failing patch leaves the document as it was.

* ``ops``: what both appliers share: limits, pointers, operations, reads, equality;
* ``apply``: copy-on-write application (documents are immutable values; only the
  containers on the touched paths are copied), and the entry points;
* ``inplace``: in-place application made atomic by an undo log.
"""
