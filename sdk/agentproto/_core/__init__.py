"""What both protocols share, from the bottom up (the order ``tests/test_layout.py`` checks).

* ``describe``: untrusted values and locations shown in messages, bounded;
* ``errors``: the one exception hierarchy (its docstring draws the tree);
* ``exports``: public names shown where users import them (``__module__``);
* ``optional``: stand-ins for what an optional dependency provides, failing on use;
* ``diagnostics``: the typed record of a problem the protocols say to tolerate;
* ``unset``: the ``UNSET`` sentinel of three-state patch fields;
* ``readonly``: zero-copy read-only views of JSON documents;
* ``sse``: Server-Sent Events, framed and interpreted as browsers do;
* ``json/``: the one JSON parser and line reader (limits, exact integers, offsets);
* ``patch/``: atomic RFC 6902 JSON Patch (copy-on-write, and in place with an undo log);
* ``wire/``: the wire converter (exact JSON to and from the generated attrs classes), the
  checks and loader factories the sealed generated modules call;
* ``store/``: event logs and thread stores (memory, SQLite, Redis) behind one protocol.
"""
