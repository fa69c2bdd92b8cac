"""AG-UI protocol facts, read from the generated schema: the bottom of the AG-UI stack.

* ``kinds``: the event kinds of the generated ``Event`` union and how the runtime groups
  them (the dispatch tables every stage builds come from here);
* ``wire``: the one AG-UI converter and the parse/dump functions;
* ``compat``: version compatibility, the boundary every incoming event passes first;
* ``frames``/``encoding``: one event as a transport frame; SSE and JSON Lines streams;
* ``capabilities``: what an agent declares about itself;
* ``input_schema``: the run input's JSON Schema, read from the generated classes.
"""
