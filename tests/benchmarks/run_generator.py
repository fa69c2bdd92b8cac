"""A deterministic, realistic AG-UI event stream for the benchmarks.

:func:`generate_run` returns one run as wire dicts (camelCase keys), valid against
the AG-UI draft schema and plausible as a protocol conversation: ``RUN_STARTED``
first, ``RUN_FINISHED`` last, and in between a seeded mix of blocks, each of which
is itself well-formed (every ``*_START`` has its ``*_END``, every ``STATE_DELTA``
patches paths the preceding snapshot and deltas created, every id is unique):

* text messages: ``TEXT_MESSAGE_START``, ``TEXT_MESSAGE_CONTENT`` (k times), ``TEXT_MESSAGE_END``;
* tool calls: ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` (k times), ``TOOL_CALL_END``,
  ``TOOL_CALL_RESULT``;
* state: a ``STATE_SNAPSHOT`` (the first time, and now and then to resynchronise),
  then ``STATE_DELTA`` events of one to three ``add``/``replace`` operations;
* activities: ``ACTIVITY_SNAPSHOT`` then ``ACTIVITY_DELTA`` (k times);
* steps: ``STEP_STARTED``, one inner text or tool block, ``STEP_FINISHED``;
* reasoning: ``REASONING_START``, ``REASONING_MESSAGE_START``,
  ``REASONING_MESSAGE_CONTENT`` (k times), ``REASONING_MESSAGE_END``, ``REASONING_END``;
* now and then a ``CUSTOM`` or a ``RAW`` event.

About a quarter of the events carry a ``timestamp`` (milliseconds, increasing) and a
few carry ``metadata``. The same ``(n_events, seed)`` always gives the same run.
Only the standard library and orjson are used, so this imports without any peer SDK.
"""

from __future__ import annotations

import copy
import itertools
import random
from collections.abc import Callable, Iterable
from typing import Any

import orjson

__all__ = ["generate_run", "to_jsonl", "to_sse"]

Event = dict[str, Any]

_PROSE = (
    "the agent reads the file and finds three functions that parse the request body "
    "before the handler runs so the fix is to validate the input once at the boundary "
    "then pass typed values down which also makes the error messages point at the exact "
    "field that failed instead of a stack trace deep inside the service layer we should "
    "add a test for the empty payload and one for a payload with an unknown key"
)
_WORDS = tuple(_PROSE.split())

_TOOLS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "search_web": lambda r: {
        "query": " ".join(r.sample(_WORDS, 4)),
        "maxResults": r.randint(3, 10),
    },
    "read_file": lambda r: {"path": f"src/{r.choice(_WORDS)}/{r.choice(_WORDS)}.py"},
    "get_weather": lambda r: {"city": r.choice(["Paris", "Lagos", "Osaka", "Lima"]), "unit": "c"},
    "run_sql": lambda r: {
        "sql": f"SELECT id, name FROM {r.choice(_WORDS)} LIMIT {r.randint(1, 50)}"
    },
    "create_ticket": lambda r: {
        "title": " ".join(r.sample(_WORDS, 5)).capitalize(),
        "labels": r.sample(["bug", "api", "ui", "infra", "docs"], 2),
        "priority": r.choice(["low", "medium", "high"]),
    },
}

_ACTIVITIES = ("search", "plan", "progress")
_STATUSES = ("planning", "researching", "writing", "reviewing")


class _RunBuilder:
    """Appends events to one run; each ``_block_*`` adds a well-formed group."""

    def __init__(self, n_events: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n_events = n_events
        self.events: list[Event] = []
        self.clock = 1_735_689_600_000 + self.rng.randint(0, 10_000_000)
        self._ids: set[str] = set()
        self.thread_id = self.new_id("thread")
        self.run_id = self.new_id("run")
        self.last_assistant_id: str | None = None
        self.state: dict[str, Any] | None = None
        self.note_keys = 0

    # -- helpers -----------------------------------------------------------

    def new_id(self, prefix: str) -> str:
        """A fresh id, unique within the run (deterministic for the seed)."""
        while True:
            candidate = f"{prefix}_{self.rng.getrandbits(96):024x}"
            if candidate not in self._ids:
                self._ids.add(candidate)
                return candidate

    def emit(self, event: Event, *, stamp: bool | None = None) -> None:
        """Append an event, sometimes with a timestamp and more rarely metadata."""
        self.clock += self.rng.randint(1, 40)
        rng = self.rng
        if stamp if stamp is not None else rng.random() < 0.25:
            event["timestamp"] = self.clock
        if rng.random() < 0.04:
            event["metadata"] = {
                "traceId": f"{rng.getrandbits(128):032x}",
                "spanId": f"{rng.getrandbits(64):016x}",
            }
        self.events.append(event)

    def remaining(self) -> int:
        """Events still to produce before RUN_FINISHED."""
        return self.n_events - 1 - len(self.events)

    def text(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(lo, hi)))

    def deltas(self, k: int) -> list[str]:
        """k token-like fragments of prose (the first without a leading space)."""
        out = []
        for i in range(k):
            words = " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(1, 3)))
            out.append(words if i == 0 else " " + words)
        if self.rng.random() < 0.5:
            out[-1] += "."
        return out

    # -- blocks ------------------------------------------------------------

    def block_text(self, budget: int) -> None:
        k = min(self.rng.randint(4, 40), budget - 2)
        mid = self.new_id("msg")
        self.last_assistant_id = mid
        start: Event = {"type": "TEXT_MESSAGE_START", "messageId": mid}
        if self.rng.random() < 0.8:
            start["role"] = "assistant"
        self.emit(start)
        for delta in self.deltas(k):
            self.emit({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": delta})
        self.emit({"type": "TEXT_MESSAGE_END", "messageId": mid})

    def block_tool(self, budget: int) -> None:
        rng = self.rng
        name = rng.choice(sorted(_TOOLS))
        args = orjson.dumps(_TOOLS[name](rng)).decode()
        k = max(1, min(rng.randint(2, 12), budget - 3, len(args)))
        cuts = sorted(rng.sample(range(1, len(args)), k - 1)) if k > 1 else []
        bounds = [0, *cuts, len(args)]
        call_id = self.new_id("call")
        start: Event = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}
        if self.last_assistant_id is not None and rng.random() < 0.7:
            start["parentMessageId"] = self.last_assistant_id
        self.emit(start)
        for a, b in itertools.pairwise(bounds):
            self.emit({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": args[a:b]})
        self.emit({"type": "TOOL_CALL_END", "toolCallId": call_id})
        output = orjson.dumps({"ok": True, "items": [self.text(2, 6) for _ in range(3)]})
        content: Any = output.decode()
        if rng.random() < 0.2:
            content = [{"type": "text", "text": self.text(5, 20)}]
        result: Event = {
            "type": "TOOL_CALL_RESULT",
            "messageId": self.new_id("msg"),
            "toolCallId": call_id,
            "content": content,
        }
        if rng.random() < 0.3:
            result["role"] = "tool"
        self.emit(result)

    def _fresh_state(self) -> dict[str, Any]:
        todos = [t for t in (self.state or {}).get("todos", []) if not t["done"]][-4:]
        while len(todos) < 3:
            todos.append({"id": self.new_id("todo"), "title": self.text(3, 6), "done": False})
        return {
            "status": self.rng.choice(_STATUSES),
            "iteration": (self.state or {}).get("iteration", 0),
            "progress": 0.0,
            "todos": todos,
            "notes": {},
        }

    def _state_op(self) -> dict[str, Any]:
        """One add/replace operation on a path that exists, applied to the model."""
        rng = self.rng
        state = self.state
        assert state is not None
        kind = rng.choice(("iteration", "status", "progress", "todo_add", "todo_done", "note"))
        if kind == "iteration":
            state["iteration"] += 1
            return {"op": "replace", "path": "/iteration", "value": state["iteration"]}
        if kind == "status":
            state["status"] = rng.choice(_STATUSES)
            return {"op": "replace", "path": "/status", "value": state["status"]}
        if kind == "progress":
            state["progress"] = round(min(1.0, state["progress"] + rng.random() / 5), 2)
            return {"op": "replace", "path": "/progress", "value": state["progress"]}
        if kind == "todo_add":
            todo = {"id": self.new_id("todo"), "title": self.text(3, 6), "done": False}
            state["todos"].append(todo)
            return {"op": "add", "path": "/todos/-", "value": dict(todo)}
        if kind == "todo_done":
            i = rng.randrange(len(state["todos"]))
            state["todos"][i]["done"] = True
            return {"op": "replace", "path": f"/todos/{i}/done", "value": True}
        self.note_keys += 1
        key = f"src/{rng.choice(_WORDS)}_{self.note_keys}.py"  # a "/" becomes "~1"
        state["notes"][key] = self.text(4, 10)
        return {
            "op": "add",
            "path": "/notes/" + key.replace("~", "~0").replace("/", "~1"),
            "value": state["notes"][key],
        }

    def block_state(self, budget: int) -> None:
        rng = self.rng
        if self.state is None or len(self.state["todos"]) > 12 or rng.random() < 0.1:
            self.state = self._fresh_state()
            self.emit({"type": "STATE_SNAPSHOT", "snapshot": copy.deepcopy(self.state)})
            budget -= 1
        for _ in range(min(rng.randint(1, 6), budget)):
            ops = [self._state_op() for _ in range(rng.randint(1, 3))]
            self.emit({"type": "STATE_DELTA", "delta": ops})

    def block_activity(self, budget: int) -> None:
        rng = self.rng
        mid = self.new_id("act")
        kind = rng.choice(_ACTIVITIES)
        content: dict[str, Any] = {"title": self.text(2, 5), "status": "running", "items": []}
        content["progress"] = 0
        snapshot: Event = {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": mid,
            "activityType": kind,
            "content": copy.deepcopy(content),
        }
        if rng.random() < 0.3:
            snapshot["replace"] = True
        self.emit(snapshot)
        k = min(rng.randint(1, 6), budget - 1)
        for i in range(k):
            last = i == k - 1
            ops: list[dict[str, Any]] = [
                {"op": "add", "path": "/items/-", "value": {"label": self.text(2, 4), "n": i}},
                {"op": "replace", "path": "/progress", "value": round((i + 1) / k, 2)},
            ]
            if last:
                ops.append({"op": "replace", "path": "/status", "value": "done"})
            self.emit(
                {"type": "ACTIVITY_DELTA", "messageId": mid, "activityType": kind, "patch": ops}
            )

    def block_step(self, budget: int) -> None:
        name = f"{self.rng.choice(('plan', 'act', 'observe', 'answer'))}_{len(self.events)}"
        self.emit({"type": "STEP_STARTED", "stepName": name})
        inner = budget - 2
        if inner >= 4 and self.rng.random() < 0.4:
            self.block_tool(inner)
        elif inner >= 3:
            self.block_text(inner)
        self.emit({"type": "STEP_FINISHED", "stepName": name})

    def block_reasoning(self, budget: int) -> None:
        span = self.new_id("rsn")
        mid = self.new_id("msg")
        self.emit({"type": "REASONING_START", "messageId": span})
        self.emit({"type": "REASONING_MESSAGE_START", "messageId": mid, "role": "reasoning"})
        for delta in self.deltas(min(self.rng.randint(3, 30), budget - 4)):
            self.emit({"type": "REASONING_MESSAGE_CONTENT", "messageId": mid, "delta": delta})
        self.emit({"type": "REASONING_MESSAGE_END", "messageId": mid})
        self.emit({"type": "REASONING_END", "messageId": span})

    def block_custom(self, budget: int) -> None:
        rng = self.rng
        name = rng.choice(("ui.toast", "app.metrics", "copilot.suggestion"))
        value: Any = {"level": rng.choice(("info", "warn")), "text": self.text(3, 8)}
        if name == "app.metrics":
            value = {"latencyMs": rng.randint(5, 900), "cacheHit": rng.random() < 0.5}
        self.emit({"type": "CUSTOM", "name": name, "value": value})

    def block_raw(self, budget: int) -> None:
        rng = self.rng
        chunk = {
            "id": f"chatcmpl-{rng.getrandbits(64):016x}",
            "object": "chat.completion.chunk",
            "created": self.clock // 1000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"content": self.text(1, 3)}, "finish_reason": None}],
        }
        self.emit({"type": "RAW", "event": chunk, "source": "openai"})

    # -- the run -----------------------------------------------------------

    def build(self) -> list[Event]:
        rng = self.rng
        self.emit(
            {"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id}, stamp=True
        )
        # (block, weight, fewest events it can be made of)
        blocks: list[tuple[Callable[[int], None], int, int]] = [
            (self.block_text, 30, 3),
            (self.block_tool, 15, 4),
            (self.block_state, 12, 1),
            (self.block_activity, 8, 2),
            (self.block_step, 8, 2),
            (self.block_reasoning, 12, 5),
            (self.block_custom, 3, 1),
            (self.block_raw, 3, 1),
        ]
        while (budget := self.remaining()) > 0:
            fits = [(b, w) for b, w, least in blocks if least <= budget]
            block = rng.choices([b for b, _ in fits], weights=[w for _, w in fits])[0]
            block(budget)
        prompt = rng.randint(500, 20_000)
        completion = rng.randint(50, 4_000)
        self.emit(
            {
                "type": "RUN_FINISHED",
                "threadId": self.thread_id,
                "runId": self.run_id,
                "outcome": {"type": "success"},
                "usage": [
                    {
                        "provider": "openai",
                        "model": "gpt-4o-mini",
                        "inputTokens": prompt,
                        "outputTokens": completion,
                        "totalTokens": prompt + completion,
                    }
                ],
            },
            stamp=True,
        )
        assert len(self.events) == self.n_events
        return self.events


def generate_run(n_events: int, seed: int = 0) -> list[dict[str, Any]]:
    """One AG-UI run of exactly ``n_events`` wire events (see the module docstring).

    Args:
        n_events: how many events, ``RUN_STARTED`` and ``RUN_FINISHED`` included (≥ 2).
        seed: the seed of the ``random.Random`` that chooses everything.

    Raises:
        ValueError: ``n_events`` is below 2.
    """
    if n_events < 2:
        raise ValueError("a run needs at least RUN_STARTED and RUN_FINISHED (n_events >= 2)")
    return _RunBuilder(n_events, seed).build()


def to_sse(events: Iterable[dict[str, Any]]) -> bytes:
    """The events as a server-sent-events body: ``data: <compact json>\\n\\n`` each."""
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


def to_jsonl(events: Iterable[dict[str, Any]]) -> bytes:
    """The events as JSON lines: one compact JSON document per line."""
    return b"".join(orjson.dumps(e) + b"\n" for e in events)
