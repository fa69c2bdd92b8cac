"""The demo: serve the scripted example agent over HTTP, consume it, print the result.

``python examples/agui_demo.py`` (what ``nox -s demo`` runs) starts the example agent
(``agui_scripted_agent.py``, beside this file) with uvicorn on a free port of
127.0.0.1, POSTs a run input to it with httpx, feeds the streamed bytes through
:func:`agentproto.agui.iter_events` into a :class:`~agentproto.agui.Consumer`, prints
each event as it arrives, then the final messages, activities, state, runs and
diagnostics. Needs httpx and uvicorn. Uses the public API only.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Sequence

from agui_scripted_agent import DEFAULT_RUN_ID, DEFAULT_THREAD_ID, make_app

from agentproto import AgentProtoError
from agentproto.agui import Consumer, iter_events


def print_summary(consumer: Consumer, error: AgentProtoError | None) -> None:
    """The final conversation (messages, activities, state), the runs and the diagnostics."""
    folded = consumer.conversation.to_json()
    messages = [m for m in folded["messages"] if m.get("role") != "activity"]
    activities = [m for m in folded["messages"] if m.get("role") == "activity"]
    print(f"messages ({len(messages)})")
    for message in messages:
        calls = len(message.get("toolCalls") or [])
        extra = f"  +{calls} tool call(s)" if calls else ""
        print(f"  {message['role']:<10} {message['id']:<14} {message.get('content', '')!r}{extra}")
    print(f"\nactivities ({len(activities)})")
    for activity in activities:
        print(f"  {activity['activityType']:<16} {activity['id']:<12} {activity['content']}")
    print(f"\nstate\n  {json.dumps(folded['state'])}")
    print(f"\nruns ({len(consumer.verifier.runs)})")
    for run in consumer.verifier.runs:
        print(f"  {run.run_id:<14} {run.status}")
    print(f"\ndiagnostics ({len(consumer.diagnostics)})")
    for diagnostic in consumer.diagnostics:
        print(f"  {diagnostic}")
    if error is not None:
        print(f"\nFATAL: {error}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the exit status (0: the run was consumed without a fatal error)."""
    try:
        import httpx
        import uvicorn
    except ImportError:
        print("the demo needs httpx and uvicorn: pip install httpx uvicorn", file=sys.stderr)
        return 2
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/agent"
    server = uvicorn.Server(uvicorn.Config(make_app(delay=0.05), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            print("the example agent did not start", file=sys.stderr)
            return 2
        time.sleep(0.01)
    run_input = {"threadId": DEFAULT_THREAD_ID, "runId": DEFAULT_RUN_ID, "messages": []}
    consumer = Consumer(run_input=run_input)
    delivered = 0
    error: AgentProtoError | None = None
    print(f"example agent serving on {url}; streaming one run\n")
    try:
        with httpx.stream("POST", url, json=run_input, timeout=30) as response:
            response.raise_for_status()
            for event in iter_events(response.iter_bytes(), consumer=consumer):
                delivered += 1
                subagent = getattr(event, "subagent_run_id", None)
                owner = f"  [subagent {subagent}]" if subagent else ""
                print(f"  {delivered:3d}  {event.type}{owner}")
    except AgentProtoError as exc:
        error = exc
    finally:
        server.should_exit = True
        thread.join(10)
    print()
    print_summary(consumer, error)
    return 0 if error is None else 1


if __name__ == "__main__":
    sys.exit(main())
