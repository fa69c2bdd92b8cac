"""A thread across runs, sans I/O: what the next run's input carries.

* ``run_input``: the next ``RunAgentInput`` built from a conversation and checked;
* ``interrupts``: what a run left open, and the resume answers;
* ``frontend_tools``: calls to the client's own tools and their answers;
* ``exchange``: one thread of an agent reached over HTTP, each run's request and
  response (the HTTP clients in ``_http`` do the I/O).
"""
