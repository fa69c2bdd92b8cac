"""A deliberately non-conformant stdio agent (no agentproto): the checks must catch it.

It encodes a capability as a boolean, gives every session the same id, answers
notifications, answers ``[]`` with ``[]``, answers unknown methods with a result,
prints a line of prose on stdout, and answers with a different id when the request's
id is a string. Each of those breaks one requirement id (``BROKEN`` lists them).
"""

from __future__ import annotations

import json
import sys

BROKEN = {
    "ACP-INIT-204": "capabilities.session is a boolean",
    "ACP-SESSION-002": "every session is 'same'",
    "ACP-JSONRPC-003": "notifications are answered",
    "ACP-EXT-201": "custom notifications are answered",
    "ACP-BATCH-201": "[] is answered with []",
    "ACP-JSONRPC-004": "unknown methods get a result",
    "ACP-TRANSPORT-201": "a line of prose on stdout",
    "ACP-TRANSPORT-203": "a line of prose on stdout",
    "ACP-JSONRPC-001": "string ids are answered with another id",
}


def reply(message: dict[str, object], body: dict[str, object]) -> None:
    ident = message.get("id")
    if isinstance(ident, str):
        ident = ident + "-changed"
    write({"jsonrpc": "2.0", "id": ident, **body})


def write(value: object) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        try:
            value = json.loads(line)
        except ValueError:
            write({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}})
            continue
        if value == []:
            write([])
            continue
        for message in value if isinstance(value, list) else [value]:
            if not isinstance(message, dict) or "method" not in message:
                continue
            method = message["method"]
            if method == "initialize":
                sys.stdout.write("starting up\n")
                reply(
                    message,
                    {
                        "result": {
                            "protocolVersion": 2,
                            "info": {"name": "broken", "version": "0"},
                            "capabilities": {"session": True},
                        }
                    },
                )
            elif method == "session/new":
                reply(message, {"result": {"sessionId": "same"}})
            else:
                reply(message, {"result": {}})


if __name__ == "__main__":
    main()
