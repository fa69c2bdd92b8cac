"""A small AG-UI agent: the code a user copies to start (``examples/demo.py`` serves it).

Each run says hello in a streamed text message, calls a ``get_weather`` tool, and keeps
a counter in the shared state. Serve it with any ASGI server::

    uvicorn agui_hello_agent:app --port 8000      # from this folder

and POST a ``RunAgentInput`` to http://127.0.0.1:8000/ (SSE back, or JSON Lines with
``Accept: application/jsonl``).
"""

from __future__ import annotations

import asyncio

from agentproto.agui import RunProducer, agent_app
from agentproto.agui import schema as ag


async def handler(run_input: ag.RunAgentInput, producer: RunProducer) -> None:
    """One run: a greeting, a tool call with its result, a state update."""
    with producer.run():
        with producer.text_message() as message:
            for word in ("Hello", " from", " the", " example", " agent."):
                message.content(word)
                await asyncio.sleep(0.01)  # let each piece go out as it is made
        with producer.tool_call("get_weather", args={"city": "Paris"}) as call:
            call.end()
            call.result({"city": "Paris", "sky": "clear", "celsius": 21})
        runs = (run_input.state or {}).get("runs", 0) if isinstance(run_input.state, dict) else 0
        producer.state_update({"runs": runs + 1, "last_city": "Paris"})


app = agent_app(handler)
"""The agent as an ASGI application."""
