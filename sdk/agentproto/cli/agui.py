"""``agentproto replay`` and ``agentproto validate``: recorded AG-UI streams, offline.

The I/O edge of :mod:`agentproto.agui._history.replay`: a recording is read whole (a
file, standard input, or the bundled example), detected and folded there, and
printed here. The ``--json`` output is written by the SDK's one encoder
(:func:`agentproto._core.json.codec.dumps`): exact integers, any depth the input
accepts. The readable output shows every value through a bounded preview.

* ``replay`` prints the final messages, activities, state, runs and diagnostics,
  as a readable summary or (``--json``) one JSON object;
* ``validate`` prints every warning and the fatal error, if any, each with the
  0-based index of the event and the wire path it is about.

Exit status: 0 when the stream holds no fatal error (warnings, and a producer's
``RUN_ERROR``, included), 1 on a fatal protocol error (the file's content), 2 on
a usage or I/O error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import AgentProtoError, DecodeError, ProtocolError, SchemaError
from agentproto._core.json.codec import dumps
from agentproto.agui import dump_event
from agentproto.agui._history.replay import (
    Recording,
    Result,
    bare_message,
    detect_recording,
    error_index,
    replay,
)
from agentproto.cli._text import preview, write_utf8

__all__ = ["load_recording", "print_summary", "run_replay", "run_validate", "summary_json"]

EXAMPLE = "agui_run.sse"
"""The bundled example stream (package data of :mod:`agentproto.cli`, in ``data/``; the
scripted agent of ``examples/agui_scripted_agent.py`` writes it), used when no file is
given."""

_PROGRESS_MIN_BYTES = 4 * 1024 * 1024
_NO_EVENTS = "no events found"


def load_recording(file: str | None) -> Recording:
    """Read and detect a recording (``None``: the bundled example; ``-``: standard input).

    Raises:
        OSError: the file cannot be read.
    """
    if file is None:
        data = resources.files("agentproto.cli").joinpath("data").joinpath(EXAMPLE).read_bytes()
        return detect_recording(f"<example {EXAMPLE}>", data)
    if file == "-":
        return detect_recording("<stdin>", sys.stdin.buffer.read())
    return detect_recording(file, Path(file).read_bytes())


def _progress(total: int) -> Callable[[int], None] | None:
    """A progress bar on stderr for large inputs when stdout is a terminal."""
    if total < _PROGRESS_MIN_BYTES or not sys.stdout.isatty():
        return None

    def show(done: int) -> None:
        filled = 30 * done // total
        sys.stderr.write(f"\r[{'#' * filled}{' ' * (30 - filled)}] {100 * done // total:3d}%")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def _message(error: AgentProtoError) -> str:
    """The error's message, with one location: a decoder's wrapped error shows once."""
    cause = error.__cause__
    if isinstance(error, DecodeError) and isinstance(cause, DecodeError):
        return str(DecodeError(bare_message(cause), offset=error.offset, line=error.line))
    return str(error)


def _error_json(error: AgentProtoError, index: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"message": _message(error), "index": index}
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


def _runs_json(result: Result) -> list[dict[str, Any]]:
    runs = []
    for run in result.consumer.verifier.runs:
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
    """The ``replay --json`` object: the final conversation, runs, diagnostics and error."""
    consumer = result.consumer
    state = consumer.conversation.to_json()
    messages = [m for m in state["messages"] if m.get("role") != "activity"]
    activities = [m for m in state["messages"] if m.get("role") == "activity"]
    error = result.error
    return {
        "file": recording.name,
        "format": recording.format,
        "events": consumer.events_read,
        "delivered": result.delivered,
        "messages": messages,
        "activities": activities,
        "state": state["state"],
        "runs": _runs_json(result),
        "diagnostics": [_diagnostic_json(d) for d in consumer.diagnostics],
        "error": None if error is None else _error_json(error, error_index(recording, result)),
    }


def _cell(value: Any, width: int) -> str:
    """A column of ``width``: the value's preview, padded."""
    return preview("?" if value is None else value, width).ljust(width)


def _where(entry: dict[str, Any]) -> str:
    """``event N`` for an entry about an event, ``line N`` for one about a line of the
    recording, ``-`` for one about neither."""
    index, line = entry.get("index"), entry.get("line")
    if index is not None:
        return f"event {index}"
    return "-" if line is None else f"line {line}"


def _warning_text(entry: dict[str, Any]) -> str:
    """A diagnostic's message for the readable output: an unknown event type is named
    alone (the diagnostic's message also lists every known type)."""
    if entry["code"] == "unknown-event-dropped" and "subject" in entry:
        return f"dropped event of unknown type '{preview(entry['subject'], 60)}'"
    return preview(entry["message"], 200)


def _no_events(events: int, error: dict[str, Any] | None) -> bool:
    """Whether the stream was read and held no event (not a file that failed to parse)."""
    return not events and (error is None or str(error["code"]).startswith("stream."))


def _summary_lines(doc: dict[str, Any]) -> list[str]:
    lines = [f"{preview(doc['file'], 200)}: {doc['format']}, {doc['events']} events read, "]
    lines[0] += f"{doc['delivered']} delivered"
    if _no_events(doc["events"], doc["error"]):
        lines.append(_NO_EVENTS)
    lines.append(f"\nmessages ({len(doc['messages'])})")
    for m in doc["messages"]:
        calls = m.get("toolCalls") or []
        extra = f"  +{len(calls)} tool call(s)" if isinstance(calls, list) and calls else ""
        body = preview(m.get("content", ""), 48)
        lines.append(f"  {_cell(m.get('role'), 10)} {_cell(m.get('id'), 24)} {body}{extra}")
    lines.append(f"\nactivities ({len(doc['activities'])})")
    for a in doc["activities"]:
        content = preview(a.get("content"), 40)
        lines.append(f"  {_cell(a.get('activityType'), 16)} {_cell(a.get('id'), 24)} {content}")
    lines.append(f"\nstate\n  {preview(doc['state'], 100)}")
    lines.append(f"\nruns ({len(doc['runs'])})")
    lines += [f"  {_cell(r['runId'], 24)} {r['status']}" for r in doc["runs"]]
    lines.append(f"\ndiagnostics ({len(doc['diagnostics'])})")
    for d in doc["diagnostics"]:
        path = preview(d.get("path", ""), 100)
        lines.append(f"  {_where(d)}: {d['code']} {path} {_warning_text(d)}")
    error = doc["error"]
    if error is not None:
        at = "" if error["index"] is None else f" at event {error['index']}"
        lines.append(f"\nFATAL{at}: {preview(error['message'], 400)}")
    return lines


def print_summary(doc: dict[str, Any], out: TextIO) -> None:
    """Print the readable summary of a :func:`summary_json` object."""
    write_utf8(out, ("\n".join(_summary_lines(doc)) + "\n").encode("utf-8", "replace"))


def _replayed(command: str, file: str | None) -> tuple[Recording, Result] | None:
    """Read and replay a recording; ``None`` (the error written) when it cannot be read."""
    try:
        recording = load_recording(file)
    except OSError as exc:
        sys.stderr.write(f"agentproto {command}: cannot read {file}: {exc.strerror or exc}\n")
        return None
    return recording, replay(recording, _progress(len(recording.data)))


def _emit(out: TextIO, doc: dict[str, Any], lines: list[str] | None) -> int:
    """Print ``doc`` as JSON, or ``lines``; the exit status of ``doc``'s error."""
    if lines is None:
        write_utf8(out, dumps(doc) + b"\n")
    else:
        write_utf8(out, ("\n".join(lines) + "\n").encode("utf-8", "replace"))
    return 0 if doc["error"] is None else 1


def run_replay(file: str | None, *, as_json: bool, out: TextIO | None = None) -> int:
    """``agentproto replay``: print the final conversation of a recording.

    Args:
        file: the recording; ``None`` for the bundled example, ``-`` for stdin.
        as_json: print one JSON object instead of the summary.
        out: where the result goes (default ``sys.stdout``).

    Returns:
        The exit status: 0, 1 (fatal protocol error) or 2 (I/O error).
    """
    replayed = _replayed("replay", file)
    if replayed is None:
        return 2
    doc = summary_json(*replayed)
    return _emit(out or sys.stdout, doc, None if as_json else _summary_lines(doc))


def _validate_lines(recording: Recording, result: Result, doc: dict[str, Any]) -> list[str]:
    lines = []
    if _no_events(result.consumer.events_read, doc["error"]):
        lines.append(f"{preview(recording.name, 200)}: {_NO_EVENTS}")
    for w in doc["warnings"]:
        where = f"{_where(w)} {preview(w.get('path', ''), 100)}".rstrip()
        lines.append(f"{where}: warning [{w['code']}] {_warning_text(w)}")
    error = doc["error"]
    if error is not None:
        where = f"{_where(error)} {preview(error.get('path', ''), 100)}".rstrip()
        lines.append(f"{where}: error [{error['code']}] {preview(error['message'], 400)}")
    verdict = "valid" if error is None else "INVALID"
    lines.append(
        f"{preview(recording.name, 200)}: {verdict} ({result.consumer.events_read} events, "
        f"{len(doc['warnings'])} warning(s), {len(result.consumer.verifier.runs)} run(s))"
    )
    return lines


def run_validate(file: str | None, *, as_json: bool, out: TextIO | None = None) -> int:
    """``agentproto validate``: report every warning and the fatal error of a recording.

    Arguments and exit status as :func:`run_replay`; the output is one line per
    problem and a verdict, or (``as_json``) ``{"file", "valid", "error", "warnings"}``.
    """
    replayed = _replayed("validate", file)
    if replayed is None:
        return 2
    recording, result = replayed
    warnings = [_diagnostic_json(d) for d in result.consumer.diagnostics]
    error = None
    if result.error is not None:
        error = _error_json(result.error, error_index(recording, result))
    doc = {"file": recording.name, "valid": error is None, "error": error, "warnings": warnings}
    lines = None if as_json else _validate_lines(recording, result, doc)
    return _emit(out or sys.stdout, doc, lines)
