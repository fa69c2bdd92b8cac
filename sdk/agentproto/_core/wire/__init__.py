"""The wire converter: exact JSON to and from the generated attrs classes.

* ``checks``: the checks the converter and the loaders it compiles share (the per-call
  :class:`~.checks.Context`, type and constraint errors);
* ``loaders``: loaders of annotations that are not classes, and the factories the sealed
  ``_generated_loaders*`` modules call;
* ``prefilter``: a faster regular expression accepting only what a schema pattern does;
* ``source``: the Python source of per-class loaders and dumpers (what codegen writes
  into the sealed modules, and what the converter compiles for classes a caller brings);
* ``problems``: every problem of a rejected document, found after the fast path stopped;
* ``converter``: :class:`~agentproto.WireConverter` itself;
* ``checkeddump``: objects dumped to wire JSON and held to the schema on the way.
"""
