"""ACP protocol facts: the bottom of the ACP stack.

* ``methods``: the method tables, read off the generated ``METHODS`` table;
* ``api``: where each method lives in the typed API (agent handlers, client calls);
* ``jsonrpc``: JSON-RPC 2.0 messages over newline-delimited JSON;
* ``errors``: error codes and error responses;
* ``wire``/``wireversion``: the converters and parse/dump functions, per ACP version;
* ``blocks``: content blocks (what a prompt or message carries);
* ``permission``: what counts as approval of a permission request.
"""
