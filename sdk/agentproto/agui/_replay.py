"""``agentproto replay`` and ``agentproto validate``: recorded AG-UI streams, offline.

Theory of operation. A recording is read whole and its format detected from the
content: a conformance stream file (a JSON object with ``stream``, and maybe
``input``), a JSON array of events, JSON Lines, or Server-Sent Events. Every
format then goes through the same :class:`~agentproto.agui.Consumer` pipeline as
live traffic (JSON Lines and SSE as bytes, in chunks; arrays event by event), so
a verdict here is the verdict a client would reach. Array and conformance files
are parsed by the SDK's one JSON parser (:mod:`agentproto._core.jsonutil`), as
the streams are: integers of any size stay exact, and an event may nest
:data:`~agentproto._core.jsonutil.DEFAULT_MAX_DEPTH` levels in every format.
The ``--json`` output is written by its ``dumps``: exact integers, any depth
the input accepts.

* ``replay`` prints the final messages, activities, state, runs and diagnostics,
  as a readable summary or (``--json``) one JSON object;
* ``validate`` prints every warning and the fatal error, if any, each with the
  0-based index of the event and the wire path it is about.

Exit status: 0 when the stream holds no fatal error (warnings, and a producer's
``RUN_ERROR``, included), 1 on a fatal protocol error, 2 on a usage or I/O error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TextIO

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import AgentProtoError, DecodeError, ProtocolError, SchemaError
from agentproto._core.jsonutil import DEFAULT_MAX_DEPTH, dumps, loads
from agentproto.agui._consumer import Consumer
from agentproto.agui._wire import dump_event

__all__ = ["Recording", "load_recording", "run_replay", "run_validate"]

Format = Literal["sse", "jsonl", "array", "conformance"]

EXAMPLE = "scripted_run.sse"
"""The bundled example stream (``agentproto.agui.examples``), used when no file is given."""

_CHUNK = 64 * 1024
_PROGRESS_MIN_BYTES = 4 * 1024 * 1024


@attrs.frozen
class Recording:
    """A recorded stream, its detected format, and the run input it starts from.

    ``error`` is set when the file is a JSON document that cannot be replayed
    at all (an event nesting deeper than the depth limit).
    """

    name: str
    data: bytes
    format: Format
    events: list[Any] | None = None  # decoded events, for array and conformance files
    run_input: dict[str, Any] | None = None
    error: DecodeError | None = None


@attrs.frozen
class Result:
    """What replaying a recording produced."""

    consumer: Consumer
    error: AgentProtoError | None
    delivered: int


def _too_deep(data: bytes, max_depth: int) -> DecodeError | None:
    """The error for an array of events of which one nests deeper than ``max_depth``.

    The events sit one level below the array, so the array may nest one deeper.
    """
    if len(data) <= 2 * (max_depth + 1):  # a valid document of n bytes nests n / 2 deep
        return None
    try:
        loads(data, max_depth=max_depth + 1, exact_ints=False)
    except DecodeError as exc:
        return DecodeError(f"an event nests deeper than {max_depth} levels", offset=exc.offset)
    return None


def _detect(name: str, data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> Recording:
    """Read the format of a recording from its content; parse array and conformance files.

    Events are held to ``max_depth``, as in JSON Lines and SSE: the whole file
    may nest two levels deeper (a conformance file's object and its ``stream``).
    """
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head in (b"[", b"{"):
        try:
            value = loads(data, max_depth=max_depth + 2)
        except DecodeError:
            value = None  # not one JSON document: JSON Lines, whose reader says what is wrong
        if isinstance(value, list):
            return Recording(name, data, "array", events=value, error=_too_deep(data, max_depth))
        if isinstance(value, dict) and isinstance(value.get("stream"), list):
            run_input = value.get("input")
            started = next(
                (
                    e
                    for e in value["stream"]
                    if isinstance(e, dict) and e.get("type") == "RUN_STARTED"
                ),
                {},
            )
            if isinstance(run_input, dict) or run_input is None:
                run_input = {
                    "threadId": started.get("threadId", "t"),
                    "runId": started.get("runId", "r"),
                    "messages": [],
                    **(run_input or {}),
                }
            return Recording(name, data, "conformance", events=value["stream"], run_input=run_input)
        return Recording(name, data, "jsonl")
    return Recording(name, data, "sse")


def load_recording(file: str | None) -> Recording:
    """Read a recording (``None``: the bundled example; ``-``: standard input).

    Raises:
        OSError: the file cannot be read.
    """
    if file is None:
        data = resources.files("agentproto.agui.examples").joinpath(EXAMPLE).read_bytes()
        return _detect(f"<example {EXAMPLE}>", data)
    if file == "-":
        return _detect("<stdin>", sys.stdin.buffer.read())
    return _detect(file, Path(file).read_bytes())


def _progress(total: int) -> Callable[[int], None]:
    """A progress bar on stderr for large inputs when stdout is a terminal."""
    if total < _PROGRESS_MIN_BYTES or not sys.stdout.isatty():
        return lambda done: None

    def show(done: int) -> None:
        filled = 30 * done // total
        sys.stderr.write(f"\r[{'#' * filled}{' ' * (30 - filled)}] {100 * done // total:3d}%")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def _chunks(data: bytes) -> Iterator[tuple[int, bytes]]:
    for start in range(0, len(data), _CHUNK):
        yield start + min(_CHUNK, len(data) - start), data[start : start + _CHUNK]


def replay(recording: Recording) -> Result:
    """Run a recording through the consumer pipeline, up to its end or a fatal error."""
    transport: Literal["sse", "jsonl"] = "jsonl" if recording.format == "jsonl" else "sse"
    delivered = 0
    if recording.error is not None:
        return Result(Consumer(), recording.error, 0)
    try:
        consumer = Consumer(run_input=recording.run_input, transport=transport)
    except AgentProtoError as exc:  # a malformed run input in a conformance file
        return Result(Consumer(), exc, 0)
    try:
        if recording.events is not None:
            for event in recording.events:
                delivered += len(consumer.feed_json(event))
        else:
            show = _progress(len(recording.data))
            for done, chunk in _chunks(recording.data):
                delivered += len(consumer.feed_bytes(chunk))
                show(done)
        delivered += len(consumer.close())
    except AgentProtoError as exc:
        return Result(consumer, exc, delivered)
    return Result(consumer, None, delivered)


# ---- rendering -----------------------------------------------------------------------------


def _error_json(error: AgentProtoError, consumer: Consumer) -> dict[str, Any]:
    index = consumer.events_read - 1 if consumer.events_read else None
    out: dict[str, Any] = {"message": str(error), "index": index}
    if isinstance(error, SchemaError):
        out.update(code=f"schema.{error.keyword}", path=error.location)
    elif isinstance(error, ProtocolError):
        out.update(code=error.code, subject=error.subject)
    elif isinstance(error, DecodeError):
        out.update(code="decode", offset=error.offset, line=error.line)
    else:
        out.update(code=type(error).__name__)
    return out


def _diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    return {k: v for k, v in attrs.asdict(d).items() if v is not None}


def _runs_json(consumer: Consumer) -> list[dict[str, Any]]:
    runs = []
    for run in consumer.verifier.runs:
        entry: dict[str, Any] = {
            "runId": run.run_id,
            "threadId": run.thread_id,
            "status": run.status,
        }
        if run.error is not None:
            entry["error"] = dump_event(run.error)
        if run.outcome is not None:
            entry["outcome"] = run.outcome.type
        runs.append(entry)
    return runs


def summary_json(recording: Recording, result: Result) -> dict[str, Any]:
    consumer = result.consumer
    state = consumer.conversation.to_json()
    messages = [m for m in state["messages"] if m.get("role") != "activity"]
    activities = [m for m in state["messages"] if m.get("role") == "activity"]
    return {
        "file": recording.name,
        "format": recording.format,
        "events": consumer.events_read,
        "delivered": result.delivered,
        "messages": messages,
        "activities": activities,
        "state": state["state"],
        "runs": _runs_json(consumer),
        "diagnostics": [_diagnostic_json(d) for d in consumer.diagnostics],
        "error": None if result.error is None else _error_json(result.error, consumer),
    }


def _short(value: Any, width: int = 72) -> str:
    text = value if isinstance(value, str) else dumps(value).decode()
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def print_summary(doc: dict[str, Any], out: TextIO) -> None:
    out.write(
        f"{doc['file']}: {doc['format']}, {doc['events']} events read, "
        f"{doc['delivered']} delivered\n"
    )
    out.write(f"\nmessages ({len(doc['messages'])})\n")
    for m in doc["messages"]:
        body = m.get("content", "")
        calls = m.get("toolCalls") or []
        extra = f"  +{len(calls)} tool call(s)" if calls else ""
        out.write(f"  {m.get('role', '?'):<10} {m.get('id', '?'):<24} {_short(body, 48)}{extra}\n")
    out.write(f"\nactivities ({len(doc['activities'])})\n")
    for a in doc["activities"]:
        out.write(
            f"  {a.get('activityType', '?'):<16} {a.get('id', '?'):<24} "
            f"{_short(a.get('content'), 40)}\n"
        )
    out.write(f"\nstate\n  {_short(doc['state'], 100)}\n")
    out.write(f"\nruns ({len(doc['runs'])})\n")
    for r in doc["runs"]:
        out.write(f"  {r['runId']:<24} {r['status']}\n")
    out.write(f"\ndiagnostics ({len(doc['diagnostics'])})\n")
    for d in doc["diagnostics"]:
        out.write(
            f"  event {d.get('index', '-')}: {d['code']} {d.get('path', '')} {d['message']}\n"
        )
    if doc["error"] is not None:
        out.write(f"\nFATAL at event {doc['error']['index']}: {doc['error']['message']}\n")


def run_replay(file: str | None, *, as_json: bool, out: TextIO | None = None) -> int:
    """``agentproto replay``: print the final conversation of a recording."""
    out = out or sys.stdout
    try:
        recording = load_recording(file)
    except OSError as exc:
        sys.stderr.write(f"agentproto replay: cannot read {file}: {exc}\n")
        return 2
    result = replay(recording)
    doc = summary_json(recording, result)
    if as_json:
        out.write(dumps(doc).decode() + "\n")
    else:
        print_summary(doc, out)
    return 0 if result.error is None else 1


def run_validate(file: str | None, *, as_json: bool, out: TextIO | None = None) -> int:
    """``agentproto validate``: report every warning and the fatal error of a recording."""
    out = out or sys.stdout
    try:
        recording = load_recording(file)
    except OSError as exc:
        sys.stderr.write(f"agentproto validate: cannot read {file}: {exc}\n")
        return 2
    result = replay(recording)
    consumer = result.consumer
    warnings = [_diagnostic_json(d) for d in consumer.diagnostics]
    error = None if result.error is None else _error_json(result.error, consumer)
    if as_json:
        doc = {"file": recording.name, "valid": error is None, "error": error, "warnings": warnings}
        out.write(dumps(doc).decode() + "\n")
    else:
        for w in warnings:
            out.write(
                f"event {w.get('index', '-')} {w.get('path', '')}: warning "
                f"[{w['code']}] {w['message']}\n"
            )
        if error is not None:
            out.write(
                f"event {error['index']} {error.get('path', '')}: error "
                f"[{error['code']}] {error['message']}\n"
            )
        runs = consumer.verifier.runs
        verdict = "valid" if error is None else "INVALID"
        out.write(
            f"{recording.name}: {verdict} ({consumer.events_read} events, "
            f"{len(warnings)} warning(s), {len(runs)} run(s))\n"
        )
    return 0 if error is None else 1
