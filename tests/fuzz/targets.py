"""Fuzz targets: each builds one example from a seeded ``Random`` and runs it.

A target is a pair of functions: ``generate(rng, seeds)`` returns the example's
input (a plain dict; ``size`` is its length in bytes), ``run(example, problems)``
feeds it to one public entry point. ``run`` lets :class:`agentproto.AgentProtoError`
end the example quietly, lets any other exception escape (the runner records it),
and appends a :class:`~tests.fuzz.properties.PropertyFailure` to ``problems`` for
each broken contract it sees on the way. Only public entry points are used:
``agentproto.agui`` (``Consumer``, ``Conversation``, ``parse_event``, ``dump_event``,
``agent_app``), ``agentproto.acp`` (``SessionStore``, ``parse_session_update``,
``dump_session_update``) and ``agentproto.cli.main``.

Generation is deterministic: the same ``(seed, target, index)`` rebuilds the same
input, which is what a reproducer stores.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import copy
import io
import json
import logging
import random
import shutil
import tempfile
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from agentproto import AgentProtoError, Diagnostic
from agentproto.acp import SessionStore, dump_session_update, parse_session_update
from agentproto.agui import Consumer, Conversation, agent_app, dump_event, parse_event
from agentproto.cli import main as cli_main
from tests.fuzz import mutate as m
from tests.fuzz.properties import (
    FuzzTimeout,
    PropertyFailure,
    conversation_print,
    fingerprint,
    first_difference,
    harness_time,
)
from tests.fuzz.target_rpc import gen_acp_rpc, run_acp_rpc

Problems = list[PropertyFailure]


@dataclass(frozen=True)
class Target:
    """A named fuzz target."""

    name: str
    generate: Callable[[random.Random, m.Seeds], dict[str, Any]]
    run: Callable[[dict[str, Any], Problems], None]
    doc: str


# ---- generating AG-UI streams -----------------------------------------------------------------


def completed_input(seed: m.StreamSeed) -> dict[str, Any] | None:
    """The seed's run input completed with ids from its first RUN_STARTED (None: no input)."""
    started = next(
        (e for e in seed.stream if isinstance(e, dict) and e.get("type") == "RUN_STARTED"), None
    )
    if seed.input is None and started is None:
        return None
    out = dict(seed.input) if isinstance(seed.input, dict) else {}
    thread = started.get("threadId") if started else None
    run = started.get("runId") if started else None
    out.setdefault("threadId", thread if isinstance(thread, str) else f"t-{seed.name}")
    out.setdefault("runId", run if isinstance(run, str) else f"r-{seed.name}")
    out.setdefault("messages", [])
    return out


def gen_stream(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
    """A mutated AG-UI stream: ``events`` (may hold Raw values), ``input``, ``seed``."""
    seed = rng.choice(seeds.streams)
    events: list[Any] = copy.deepcopy(seed.stream)
    run_input = completed_input(seed)
    donors = [s.stream for s in seeds.streams]
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        events = m.mutate_sequence(rng, events, donors)
    if rng.random() < 0.3:
        fixture_events = seeds.events
        events.insert(rng.randint(0, len(events)), copy.deepcopy(rng.choice(fixture_events)))
    if events and rng.random() < 0.9:
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            at = rng.randrange(len(events))
            events[at] = m.mutate_event(rng, events[at])
    if rng.random() < 0.002:  # rare: each example of this kind costs a second or two
        at = next(
            (
                n + 1
                for n, e in enumerate(events)
                if isinstance(e, dict) and e.get("type") == "RUN_STARTED"
            ),
            0,
        )
        events[at:at] = m.growth_burst(rng)
    if run_input is not None and rng.random() < 0.1:
        run_input = m.mutate_value(rng, run_input)
    if rng.random() < 0.05:
        run_input = None
    return {"events": events, "input": run_input, "seed": seed.name}


def _input_python(run_input: Any) -> Any:
    # the constructor's type is ``RunAgentInput | dict | None``: other JSON is not passed
    return m.to_python(run_input) if isinstance(run_input, dict) else None


def gen_agui_bytes(transport: str) -> Callable[[random.Random, m.Seeds], dict[str, Any]]:
    """A generator of framed bytes (``sse`` or ``jsonl``) cut into chunks."""

    def generate(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
        stream = gen_stream(rng, seeds)
        if transport == "sse":
            data = m.sse_frames(stream["events"], rng)
        else:
            data = m.jsonl_lines(stream["events"])
        if rng.random() < 0.4:
            data = m.mutate_bytes(rng, data)
        return {
            "transport": transport,
            "data": data,
            "points": m.split_points(rng, len(data)),
            "input": stream["input"],
            "seed": stream["seed"],
            "size": len(data) + input_size(stream["input"]),
        }

    return generate


def gen_agui_json(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
    """Decoded events for ``feed_json`` (Raw values become Python values at run time)."""
    stream = gen_stream(rng, seeds)
    size = len(m.dumps(stream["events"])) + input_size(stream["input"])
    return {**stream, "size": size}


def input_size(run_input: Any) -> int:
    """The run input's bytes: it is input too, and the memory bound must count it."""
    return len(m.dumps(run_input)) if isinstance(run_input, dict) else 0


def gen_events(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
    """One to three single events: fixtures (valid and invalid) or stream events, mutated."""
    pool = seeds.events
    events = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        event = copy.deepcopy(rng.choice(pool))
        if rng.random() < 0.9:
            event = m.mutate_event(rng, event)
        events.append(event)
    return {"events": events, "size": len(m.dumps(events))}


# ---- the AG-UI consumer -----------------------------------------------------------------------


def _run_statuses(consumer: Consumer) -> list[str] | None:
    try:
        return [str(run.status) for run in consumer.verifier.runs]
    except Exception:  # the verifier's shape is not what this harness depends on
        return None


LARGE_PRINT = 2_000_000
"""Conversations whose ``repr`` is longer than this are not checked call by call."""


class ConsumerCheck:
    """Feeds a consumer call by call and checks the atomicity and failure contracts."""

    def __init__(self, consumer: Consumer, problems: Problems, *, enabled: bool = True) -> None:
        self.consumer = consumer
        self.problems = problems
        self.enabled = enabled
        run_input = consumer.run_input
        self.shadow = (
            Conversation.from_input(run_input) if run_input is not None else Conversation()
        )

    def call(self, label: str, feed: Callable[[], list[Any]], may_change: bool) -> None:
        """One feed call; raises what it raises, after checking what it left behind.

        The checks run off the time budget's clock; a memory-traced example runs with
        ``enabled=False`` (no checks), so that its peak is the library's own.
        """
        if not self.enabled:
            feed()
            return
        consumer = self.consumer
        with harness_time():
            before = conversation_print(consumer.conversation) if may_change else None
            runs_before = _run_statuses(consumer)
        if isinstance(before, str) and len(before) > LARGE_PRINT:
            self.enabled = False  # a very large conversation: the checks would cost minutes
        try:
            delivered = feed()
        except FuzzTimeout:
            raise
        except BaseException as exc:
            with harness_time():
                self._after_raise(label, exc, before, runs_before)
            raise
        with harness_time():
            self._follow(label, delivered, compare=may_change or bool(delivered))

    def _after_raise(
        self,
        label: str,
        exc: BaseException,
        before: Any,
        runs_before: list[str] | None,
    ) -> None:
        consumer = self.consumer
        kind = type(exc).__name__
        if before is not None:
            after = conversation_print(consumer.conversation)
            if after != before:
                self._problem(
                    "atomic",
                    f"{label} raised {kind}, conversation changed "
                    f"({first_difference(before, after)})",
                    exc,
                )
        if consumer.failure is None:
            self._problem("failure-set", f"{label} raised {kind}, consumer.failure is None", exc)
        runs = _run_statuses(consumer)
        if runs is not None:
            if "running" in runs:
                self._problem("failure-set", f"{label} raised {kind}, a run is still running", exc)
            for number, status in enumerate(runs):
                was = runs_before[number] if runs_before and number < len(runs_before) else None
                if status == "succeeded" and was != "succeeded":
                    self._problem(
                        "failure-set", f"{label} raised {kind}, run {number} reported success", exc
                    )
                    break

    def _follow(self, label: str, delivered: list[Any], *, compare: bool) -> None:
        """Apply what the call delivered to the shadow; the consumer must agree with it."""
        shadow = self.shadow
        for event in delivered:
            before = conversation_print(shadow)
            try:
                change = shadow.apply(event)
            except AgentProtoError as exc:
                self._problem(
                    "atomic",
                    f"delivered {event.type} raises {type(exc).__name__} on a fresh reducer",
                    exc,
                )
                raise
            if change.diagnostics and not change and conversation_print(shadow) != before:
                codes = ",".join(d.code for d in change.diagnostics)
                self._problem(
                    "atomic",
                    f"skipped {event.type} ({codes}) changed the conversation "
                    f"({first_difference(before, conversation_print(shadow))})",
                )
        if compare:
            mine, theirs = (
                conversation_print(self.consumer.conversation),
                conversation_print(shadow),
            )
            if mine != theirs:
                types = ",".join(str(getattr(e, "type", "?")) for e in delivered) or "nothing"
                self._problem(
                    "atomic",
                    f"{label} delivered {types}; conversation differs from the delivered "
                    f"events' ({first_difference(theirs, mine)})",
                )
                # resynchronise so that one difference is reported once
                self.shadow = _clone(self.consumer)

    def _problem(
        self,
        prop: str,
        message: str,
        cause: BaseException | None = None,
        *,
        label: str | None = None,
    ) -> None:
        failure = PropertyFailure(prop, message, label)
        failure.__cause__ = cause
        self.problems.append(failure)


def _clone(consumer: Consumer) -> Conversation:
    doc = consumer.conversation.to_json()
    from agentproto.agui import parse_message

    return Conversation(messages=[parse_message(x) for x in doc["messages"]], state=doc["state"])


def _verdict(consumer: Consumer, delivered: list[Any], error: BaseException | None) -> Any:
    """What two feedings of the same bytes must agree on."""
    return fingerprint(
        {
            "error": None if error is None else f"{type(error).__name__}: {error}",
            "delivered": [dump_event(event) for event in delivered],
            "diagnostics": [(d.code, d.path, d.subject, d.index) for d in consumer.diagnostics],
            "conversation": consumer.conversation.to_json(),
            "runs": _run_statuses(consumer),
        }
    )


def run_agui_bytes(example: dict[str, Any], problems: Problems) -> None:
    """``Consumer(transport=...).feed_bytes`` chunk by chunk, then ``close``; then the same
    bytes in one call must reach the same verdict (events, error, diagnostics, state)."""
    run_input = _input_python(example["input"])
    try:
        consumer = Consumer(run_input=run_input, transport=example["transport"])
    except AgentProtoError:
        return
    bare = bool(example.get("bare"))
    check = ConsumerCheck(consumer, problems, enabled=not bare)
    data: bytes = example["data"]
    delivered: list[Any] = []
    error: AgentProtoError | None = None

    def collect(feed: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
        def call() -> list[Any]:
            events = feed()
            delivered.extend(events)
            return events

        return call

    try:
        for chunk in m.chunks(data, example["points"]):
            check.call(
                "feed_bytes",
                collect(partial(consumer.feed_bytes, chunk)),
                may_change=b"\n" in chunk or b"\r" in chunk,
            )
        check.call("close", collect(consumer.close), may_change=True)
    except AgentProtoError as exc:
        error = exc
    if bare or not example["points"]:
        return
    whole = Consumer(run_input=run_input, transport=example["transport"])
    whole_delivered: list[Any] = []
    whole_error: AgentProtoError | None = None
    try:
        whole_delivered += whole.feed_bytes(data)
        whole_delivered += whole.close()
    except AgentProtoError as exc:
        whole_error = exc
    if error is not None or whole_error is not None:
        # one call loses the events delivered before a fatal error inside it
        delivered, whole_delivered = [], []
    with harness_time():
        mine = _verdict(consumer, delivered, error)
        theirs = _verdict(whole, whole_delivered, whole_error)
    _compare_chunking(problems, mine, theirs)


def _compare_chunking(problems: Problems, mine: Any, theirs: Any) -> None:
    """A chunked feed must reach the verdict of one feed."""
    if mine != theirs:
        problems.append(
            PropertyFailure(
                "chunking",
                f"chunked feed differs from one feed ({first_difference(theirs, mine)})",
                label="chunked feed differs from one feed",
            )
        )


def run_agui_json(example: dict[str, Any], problems: Problems) -> None:
    """``Consumer.feed_json`` event by event (with the stream's run input), then ``close``."""
    try:
        consumer = Consumer(run_input=_input_python(example["input"]))
    except AgentProtoError:
        return
    check = ConsumerCheck(consumer, problems, enabled=not example.get("bare"))
    events = [m.to_python(event) for event in example["events"]]
    try:
        for event in events:
            check.call("feed_json", partial(consumer.feed_json, event), may_change=True)
        check.call("close", consumer.close, may_change=True)
    except AgentProtoError:
        return


def run_parse_event(example: dict[str, Any], problems: Problems) -> None:
    """``parse_event`` strict and tolerant; what parses must dump."""
    _parse_and_dump(example["events"], parse_event, dump_event)


def _parse_and_dump(
    documents: list[Any], parse: Callable[..., Any], dump: Callable[[Any], Any]
) -> None:
    """Each document parsed strict and tolerant; only SDK errors may escape, what parses dumps."""
    for document in documents:
        value = m.to_python(document)
        for diagnostics in (None, list[Diagnostic]()):
            try:
                parsed = parse(value, diagnostics=diagnostics)
            except AgentProtoError:
                continue
            with contextlib.suppress(AgentProtoError):
                dump(parsed)


# ---- ACP ------------------------------------------------------------------------------------


def gen_acp_lines(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
    """A mutated ACP log: ``session/update`` lines built from the round-trip corpus."""
    updates = [copy.deepcopy(rng.choice(seeds.updates)[1]) for _ in range(rng.randint(1, 6))]
    if rng.random() < 0.3:  # repeat an id: later updates patch the first
        updates += copy.deepcopy(updates[: rng.randint(1, len(updates))])
    for _ in range(rng.choice([0, 1, 2])):
        updates = m.mutate_sequence(rng, updates, [[u for _, u in seeds.updates]])
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        if updates:
            at = rng.randrange(len(updates))
            updates[at] = m.mutate_event(rng, updates[at])
    messages: list[Any] = [
        m.permission_request(u, n)
        if isinstance(u, dict)
        and u.get("sessionUpdate") == "tool_call_update"
        and rng.random() < 0.3
        else m.notification(u, rng.choice(["s1", "s1", "s2"]))
        for n, u in enumerate(updates)
    ]
    for _ in range(rng.choice([0, 0, 1, 2])):
        if messages:
            at = rng.randrange(len(messages))
            messages[at] = m.mutate_rpc(rng, messages[at])
    data = m.jsonl_lines(messages)
    if rng.random() < 0.3:
        data = m.mutate_bytes(rng, data)
    return {
        "data": data,
        "points": m.split_points(rng, len(data)),
        "by_line": rng.random() < 0.3,
        "updates": updates,
        "size": len(data),
    }


def _store_print(store: SessionStore) -> Any:
    return fingerprint(store.to_json())


SKIP_CODES = frozenset({"invalid-params", "invalid-update"})


def run_acp_store(example: dict[str, Any], problems: Problems) -> None:
    """``SessionStore().feed`` in chunks (or line by line, checking skips), then ``close``."""
    store = SessionStore()
    data: bytes = example["data"]
    bare = bool(example.get("bare"))
    if example["by_line"]:
        pieces = data.splitlines(keepends=True)
    else:
        pieces = list(m.chunks(data, example["points"]))
    for piece in pieces:
        line_mode = example["by_line"] and piece.endswith(b"\n") and piece.count(b"\n") == 1
        with harness_time():
            before = _store_print(store) if line_mode and not bare else None
        seen = len(store.diagnostics)
        try:
            store.feed(piece)
        except AgentProtoError as exc:
            skipped: str | None = type(exc).__name__
        else:
            codes = {d.code for d in store.diagnostics[seen:]}
            skipped = ",".join(sorted(codes & SKIP_CODES)) or None
        if before is not None and skipped is not None:
            with harness_time():
                after = _store_print(store)
            if after != before:
                problems.append(
                    PropertyFailure(
                        "atomic",
                        f"skipped line ({skipped}) changed the store "
                        f"({first_difference(before, after)})",
                    )
                )
    if not _drain(store, data):
        problems.append(
            PropertyFailure("progress", "close() kept raising past the number of lines")
        )
        return
    if bare or example["by_line"] or not example["points"]:
        return
    whole = SessionStore()
    with contextlib.suppress(AgentProtoError):
        whole.feed(data)
    _drain(whole, data)
    with harness_time():
        mine, theirs = _store_verdict(store), _store_verdict(whole)
    _compare_chunking(problems, mine, theirs)


def _drain(store: SessionStore, data: bytes) -> bool:
    """Close the store; each raise consumes one bad line, so it must end (False: it did not)."""
    for _ in range(data.count(b"\n") + 3):
        try:
            store.close()
        except AgentProtoError:
            continue
        return True
    return False


def _store_verdict(store: SessionStore) -> Any:
    return fingerprint(
        {
            "sessions": store.to_json(),
            "diagnostics": [(d.code, d.path, d.line) for d in store.diagnostics],
        }
    )


def gen_updates(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
    """One to three mutated ACP updates (decoded JSON)."""
    updates = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        update = copy.deepcopy(rng.choice(seeds.updates)[1])
        if rng.random() < 0.9:
            update = m.mutate_event(rng, update)
        updates.append(update)
    return {"updates": updates, "size": len(m.dumps(updates))}


def run_parse_update(example: dict[str, Any], problems: Problems) -> None:
    """``parse_session_update`` strict and tolerant; what parses must dump."""
    _parse_and_dump(example["updates"], parse_session_update, dump_session_update)


# ---- the command line ---------------------------------------------------------------------

_TMP = Path(tempfile.mkdtemp(prefix="agentproto-fuzz-"))
atexit.register(shutil.rmtree, _TMP, True)


def gen_cli(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
    """A recording for ``replay``/``validate`` (SSE, JSON Lines, array, stream file) or ACP."""
    command = rng.choice(["replay", "validate", "acp"])
    as_json = rng.random() < 0.5
    if command == "acp":
        data = gen_acp_lines(rng, seeds)["data"]
        fmt = "ndjson"
    else:
        stream = gen_stream(rng, seeds)
        fmt = rng.choice(["sse", "jsonl", "array", "conformance"])
        if fmt == "sse":
            data = m.sse_frames(stream["events"], rng)
        elif fmt == "jsonl":
            data = m.jsonl_lines(stream["events"])
        elif fmt == "array":
            data = m.encode_text(m.dumps(stream["events"]))
        else:
            doc: dict[str, Any] = {"stream": stream["events"]}
            if stream["input"] is not None:
                doc["input"] = stream["input"]
            data = m.encode_text(m.dumps(doc))
        if rng.random() < 0.3:
            data = m.mutate_bytes(rng, data)
    return {"command": command, "json": as_json, "format": fmt, "data": data, "size": len(data)}


def run_cli(example: dict[str, Any], problems: Problems) -> None:
    """``agentproto.cli.main`` on a temporary file, output captured."""
    path = _TMP / f"input.{example['format']}"
    path.write_bytes(example["data"])
    argv = (
        ["acp", "replay", str(path)]
        if example["command"] == "acp"
        else [example["command"], str(path)]
    )
    if example["json"]:
        argv.append("--json")
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli_main(argv)
        except AgentProtoError as exc:  # the command line reports, it does not raise
            problems.append(PropertyFailure("cli", f"main raised {type(exc).__name__}: {exc}"))
            problems[-1].__cause__ = exc
            return
    if status not in (0, 1, 2):
        problems.append(PropertyFailure("cli", f"exit status {status!r}"))
    text = out_bytes.getvalue()
    # --json: one JSON document on success; on a fatal error, one or nothing (stderr says it)
    if example["json"] and (status == 0 or (status == 1 and text.strip())):
        try:
            with harness_time():
                json.loads(text)
        except ValueError as exc:
            problems.append(
                PropertyFailure(
                    "cli", f"--json output is not one JSON document ({exc}): {text[:80]!r}"
                )
            )


# ---- the ASGI app -------------------------------------------------------------------------


async def _echo_agent(run_input: Any, producer: Any) -> None:
    producer.run_started()
    producer.state_snapshot(run_input.state if run_input.state is not None else {})
    producer.text("hello")
    if run_input.forwarded_props is not None:
        producer.custom("echo", run_input.forwarded_props)
    producer.run_finished()


_APP = agent_app(_echo_agent, max_body_bytes=1024 * 1024)
_LOOP: asyncio.AbstractEventLoop | None = None


def gen_asgi(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
    """A request body: a run input (fixture or a stream's), mutated, in ASGI body chunks."""
    inputs = [completed_input(s) for s in seeds.streams]
    inputs = [i for i in inputs if i is not None]
    inputs += [doc for name, doc in seeds.fixtures if name.startswith("RunAgentInput/")]
    body_doc: Any = copy.deepcopy(rng.choice(inputs))
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        body_doc = m.mutate_value(rng, body_doc)
    body = m.encode_text(m.dumps(body_doc))
    if rng.random() < 0.25:
        body = m.mutate_bytes(rng, body)
    points = m.split_points(rng, len(body))[:200]
    accept = rng.choice([None, "text/event-stream", "application/jsonl", "*/*", "x/\x00;q=x"])
    method = "POST" if rng.random() < 0.95 else rng.choice(["GET", "PUT", "OPTIONS"])
    return {
        "body": body,
        "points": points,
        "accept": accept,
        "method": method,
        "plain": not m.contains_raw(body_doc),
        "size": len(body),
    }


async def _call_app(example: dict[str, Any]) -> list[MutableMapping[str, Any]]:
    pieces = list(m.chunks(example["body"], example["points"]))
    incoming: list[dict[str, Any]] = [
        {"type": "http.request", "body": piece, "more_body": n < len(pieces) - 1}
        for n, piece in enumerate(pieces)
    ]
    done = asyncio.Event()
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            done.set()

    headers = [(b"content-type", b"application/json")]
    if example["accept"] is not None:
        headers.append((b"accept", example["accept"].encode("latin-1")))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": example["method"],
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "headers": headers,
        "scheme": "http",
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 1234),
    }
    await _APP(scope, receive, send)
    return sent


def run_asgi(example: dict[str, Any], problems: Problems) -> None:
    """``agent_app`` called in process; every request answered, a 200 stream consumable."""
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
    logger = logging.getLogger("agentproto")
    level = logger.level
    # the app logs a failing handler with its traceback; the fuzz run's output is its report
    logger.setLevel(logging.CRITICAL)
    try:
        sent = _LOOP.run_until_complete(_call_app(example))
    except BaseException:
        _LOOP.close()  # a loop interrupted mid-task is not reused
        _LOOP = None
        raise
    finally:
        logger.setLevel(level)
    if not sent or sent[0]["type"] != "http.response.start":
        problems.append(PropertyFailure("asgi", "no response started"))
        return
    status = sent[0]["status"]
    if status not in (200, 400, 405, 413):
        problems.append(PropertyFailure("asgi", f"status {status}"))
    if not (sent[-1]["type"] == "http.response.body" and not sent[-1].get("more_body", False)):
        problems.append(PropertyFailure("asgi", "response never completed"))
    body = b"".join(x.get("body", b"") for x in sent if x["type"] == "http.response.body")
    if status == 400:
        try:
            document = json.loads(body)
            assert isinstance(document, dict) and "error" in document
        except (ValueError, AssertionError):
            problems.append(
                PropertyFailure("asgi", f"400 body is not an error object: {body[:80]!r}")
            )
    if status == 200 and example["plain"]:
        try:
            run_input = json.loads(example["body"])
        except ValueError:
            return
        headers = dict(sent[0].get("headers", []))
        jsonl = b"jsonl" in headers.get(b"content-type", b"")
        try:
            consumer = Consumer(run_input=run_input, transport="jsonl" if jsonl else "sse")
            consumer.feed_bytes(body)
            consumer.close()
        except AgentProtoError as exc:
            failure = PropertyFailure(
                "asgi", f"served stream rejected by Consumer: {type(exc).__name__}: {exc}"
            )
            failure.__cause__ = exc
            problems.append(failure)


# ---- the table ----------------------------------------------------------------------------

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("agui-sse", gen_agui_bytes("sse"), run_agui_bytes, "Consumer.feed_bytes over SSE"),
        Target(
            "agui-jsonl",
            gen_agui_bytes("jsonl"),
            run_agui_bytes,
            "Consumer(transport='jsonl').feed_bytes",
        ),
        Target("agui-json", gen_agui_json, run_agui_json, "Consumer.feed_json per event"),
        Target("parse-event", gen_events, run_parse_event, "agui.parse_event strict/tolerant"),
        Target("acp-store", gen_acp_lines, run_acp_store, "acp.SessionStore.feed + close"),
        Target(
            "parse-update",
            gen_updates,
            run_parse_update,
            "acp.parse_session_update strict/tolerant",
        ),
        Target("cli", gen_cli, run_cli, "cli.main replay/validate/acp replay [--json]"),
        Target("asgi", gen_asgi, run_asgi, "agui.agent_app, in-process ASGI call"),
        Target("acp-rpc", gen_acp_rpc, run_acp_rpc, "acp JSON-RPC Endpoint.feed + feed_eof"),
    )
}
