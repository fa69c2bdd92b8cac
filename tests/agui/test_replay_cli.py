"""``agentproto replay`` / ``validate`` on recorded AG-UI streams (agentproto.cli.agui)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pytest

from agentproto._core.json.codec import dumps
from agentproto._core.sse import encode_sse
from agentproto.cli.agui import load_recording, run_replay, run_validate
from tests.conformance.agui_runner import CORPUS_FOLDERS, default_corpora, load_streams, observe
from tests.needs import spec_params

RUN = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hello"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _formats(tmp_path: Path) -> dict[str, str]:
    return {
        "sse": _write(tmp_path, "run.sse", b"".join(encode_sse(orjson.dumps(e)) for e in RUN)),
        "jsonl": _write(tmp_path, "run.jsonl", b"".join(orjson.dumps(e) + b"\n" for e in RUN)),
        "array": _write(tmp_path, "run.json", orjson.dumps(RUN)),
        "conformance": _write(
            tmp_path, "stream.json", orjson.dumps({"name": "x", "stream": RUN, "expect": {}})
        ),
    }


@pytest.mark.parametrize("fmt", ["sse", "jsonl", "array", "conformance"])
def test_formats_are_detected_and_replay_alike(tmp_path: Path, fmt: str) -> None:
    """SSE, JSON Lines, a JSON array and a conformance file are detected and fold alike."""
    path = _formats(tmp_path)[fmt]
    assert load_recording(path).format == fmt
    out = io.StringIO()
    assert run_replay(path, as_json=True, out=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["messages"] == [{"id": "m1", "role": "assistant", "content": "Hello"}]
    assert doc["state"] == {"n": 1}
    assert doc["runs"][0]["status"] == "succeeded"
    assert doc["error"] is None


def test_validate_reports_warning_index_and_path(tmp_path: Path) -> None:
    """validate names each warning's event index and wire path, and exits 0 on warnings."""
    events = [*RUN[:2], {**RUN[2], "futureProp": 1}, *RUN[3:]]
    path = _write(tmp_path, "w.json", orjson.dumps(events))
    out = io.StringIO()
    assert run_validate(path, as_json=True, out=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["valid"] is True
    assert [(w["index"], w["path"], w["code"]) for w in doc["warnings"]] == [
        (2, "/futureProp", "unknown-field")
    ]


def test_validate_fatal_error_exits_1_with_index_and_path(tmp_path: Path) -> None:
    """A malformed known field is fatal: exit 1, the event's index and the path named."""
    events = [*RUN[:2], {**RUN[2], "delta": 42}, *RUN[3:]]
    path = _write(tmp_path, "bad.json", orjson.dumps(events))
    out = io.StringIO()
    assert run_validate(path, as_json=True, out=out) == 1
    error = json.loads(out.getvalue())["error"]
    assert (error["index"], error["path"], error["code"]) == (2, "/delta", "schema.type")


def test_run_error_is_not_fatal(tmp_path: Path) -> None:
    """A producer's RUN_ERROR is the run's failure, not a protocol error: exit 0."""
    events = [RUN[0], {"type": "RUN_ERROR", "message": "boom"}]
    path = _write(tmp_path, "err.json", orjson.dumps(events))
    out = io.StringIO()
    assert run_validate(path, as_json=False, out=out) == 0
    assert run_replay(path, as_json=True, out=(replayed := io.StringIO())) == 0
    assert json.loads(replayed.getvalue())["runs"][0]["status"] == "failed"


def test_truncated_stream_exits_1(tmp_path: Path) -> None:
    """A stream that ends inside a run has no outcome: validate exits 1."""
    path = _write(tmp_path, "cut.json", orjson.dumps(RUN[:3]))
    assert run_validate(path, as_json=False, out=io.StringIO()) == 1


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    """A missing file is an I/O error: exit 2."""
    assert run_validate(str(tmp_path / "missing.sse"), as_json=False, out=io.StringIO()) == 2
    assert run_replay(str(tmp_path / "missing.sse"), as_json=False, out=io.StringIO()) == 2


def test_readable_summary(tmp_path: Path) -> None:
    """Without --json, replay prints a readable summary naming messages, state and runs."""
    out = io.StringIO()
    assert run_replay(_formats(tmp_path)["sse"], as_json=False, out=out) == 0
    text = out.getvalue()
    assert "messages (1)" in text and "Hello" in text and "succeeded" in text


def _corpus_cases(root: Path) -> list[object]:
    cases = []
    for corpus in default_corpora(root)[:2]:  # draft and 1.1: the complete corpora
        streams, _ = load_streams(corpus)
        cases += [
            pytest.param(corpus.protocol_version, case, id=f"{corpus.label}/{case.name}")
            for case in streams
        ]
    return cases


@pytest.mark.parametrize(
    ("version", "case"), spec_params(_corpus_cases, *CORPUS_FOLDERS[:2], width=2)
)
def test_validate_agrees_with_the_conformance_runner(version: str, case: object) -> None:
    """validate exits 0 exactly on the conformance streams the runner sees completed."""
    observed = observe(case, version, with_request=False)  # type: ignore[arg-type]
    status = run_validate(str(case.path), as_json=False, out=io.StringIO())  # type: ignore[attr-defined]
    assert (status == 0) == (observed.outcome == "completed")


def test_big_integers_stay_exact_across_chunk_boundaries() -> None:
    """An integer beyond 64 bits stays exact however the SSE bytes are split."""
    from agentproto.agui import Consumer

    big = 2**70 + 1
    events = [
        RUN[0],
        {"type": "STATE_SNAPSHOT", "snapshot": {"pad": "x" * 100, "n": big}},
        RUN[-1],
    ]
    data = b"".join(encode_sse(json.dumps(e).encode()) for e in events)  # orjson cannot
    for size in (1, 7, 19, 64, 1000):
        consumer = Consumer()
        for start in range(0, len(data), size):
            consumer.feed_bytes(data[start : start + size])
        consumer.close()
        assert consumer.conversation.state_json()["n"] == big, size


def test_cli_runs_replay_and_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`agentproto replay/validate FILE` dispatch to the AG-UI commands with their exit codes."""
    from agentproto.cli import main

    path = _formats(tmp_path)["jsonl"]
    assert main(["replay", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == {"n": 1}
    bad = _write(tmp_path, "bad.json", orjson.dumps([RUN[0], {**RUN[2], "delta": 1}]))
    assert main(["validate", bad]) == 1
    assert main(["validate", str(tmp_path / "nope")]) == 2
    assert main(["validate", "--bogus"]) == 2


def _nested(depth: int) -> object:
    """A JSON value of exactly ``depth`` nested arrays and objects."""
    value: object = []
    for level in range(depth - 1):
        value = {"k": value} if level % 2 else [value]
    return value


def _snapshot_run(snapshot: object) -> list[dict[str, object]]:
    return [RUN[0], {"type": "STATE_SNAPSHOT", "snapshot": snapshot}, RUN[-1]]


@pytest.mark.parametrize("fmt", ["jsonl", "array", "conformance"])
def test_big_integers_are_exact_in_every_format_and_in_the_output(tmp_path: Path, fmt: str) -> None:
    """A 25-digit integer stays exact whatever the file format, through ``replay --json``."""
    events = _snapshot_run({"n": 10**25})
    data = {
        "jsonl": b"".join(json.dumps(e).encode() + b"\n" for e in events),
        "array": json.dumps(events).encode(),
        "conformance": json.dumps({"name": "x", "stream": events}).encode(),
    }[fmt]
    path = _write(tmp_path, f"big.{fmt}", data)
    assert load_recording(path).format == fmt
    out = io.StringIO()
    assert run_replay(path, as_json=True, out=out) == 0
    assert '"state":{"n":10000000000000000000000000}' in out.getvalue()
    assert json.loads(out.getvalue())["state"] == {"n": 10**25}


@pytest.mark.parametrize("fmt", ["jsonl", "array", "conformance"])
def test_depth_limit_is_the_same_in_every_format(tmp_path: Path, fmt: str) -> None:
    """An event as deep as the limit replays (and prints whole); one level more is refused."""
    from agentproto._core.json.codec import DEFAULT_MAX_DEPTH

    def encode(snapshot_depth: int) -> bytes:
        events = _snapshot_run(_nested(snapshot_depth))
        return {
            "jsonl": b"".join(json.dumps(e).encode() + b"\n" for e in events),
            "array": json.dumps(events).encode(),
            "conformance": json.dumps({"name": "x", "stream": events}).encode(),
        }[fmt]

    # the event object holds the snapshot: the snapshot may nest one less than the limit
    ok = _write(tmp_path, f"ok.{fmt}", encode(DEFAULT_MAX_DEPTH - 1))
    out = io.StringIO()
    assert run_replay(ok, as_json=True, out=out) == 0
    assert json.loads(out.getvalue())["state"] == _nested(DEFAULT_MAX_DEPTH - 1)
    bad = _write(tmp_path, f"bad.{fmt}", encode(DEFAULT_MAX_DEPTH))
    out = io.StringIO()
    assert run_validate(bad, as_json=True, out=out) == 1
    error = json.loads(out.getvalue())["error"]
    assert error["code"] == "decode"
    assert f"deeper than {DEFAULT_MAX_DEPTH} levels" in error["message"]


def test_run_without_run_id_prints_in_text(tmp_path: Path) -> None:
    """A run the stream never named (a lone RUN_ERROR) prints in the text summary too."""
    path = _write(tmp_path, "e.json", b'[{"type":"RUN_ERROR","message":"x","code":"U"}]')
    out = io.StringIO()
    assert run_replay(path, as_json=False, out=out) == 0
    assert "runs (1)" in out.getvalue() and "failed" in out.getvalue()


@pytest.mark.parametrize("run_input", [5, [], "x", True])
def test_conformance_input_that_is_not_an_object_is_an_input_error(
    tmp_path: Path, run_input: object
) -> None:
    """A conformance file whose ``input`` is not an object is a fatal input error: exit 1."""
    path = _write(tmp_path, "c.json", orjson.dumps({"stream": RUN, "input": run_input}))
    out = io.StringIO()
    assert run_validate(path, as_json=True, out=out) == 1
    error = json.loads(out.getvalue())["error"]
    assert (error["code"], error["path"], error["index"]) == ("schema.type", "/input", None)
    assert "run input must be an object" in error["message"]
    for command in (run_replay, run_validate):
        text = io.StringIO()
        assert command(path, as_json=False, out=text) == 1
        assert "run input must be an object" in text.getvalue()


def test_state_nested_500_deep_prints_as_json_and_text(tmp_path: Path) -> None:
    """A state nested 500 deep replays: whole with --json, as a bounded preview in text."""
    deep = _nested(500)
    path = _write(tmp_path, "deep.json", json.dumps(_snapshot_run(deep)).encode())
    out = io.StringIO()
    assert run_replay(path, as_json=True, out=out) == 0
    assert json.loads(out.getvalue())["state"] == deep
    text = io.StringIO()
    assert run_replay(path, as_json=False, out=text) == 0
    assert max(map(len, text.getvalue().splitlines())) < 200


def test_text_output_is_bounded_for_huge_values(tmp_path: Path) -> None:
    """A 10 MB state, message and id print as short previews, never whole."""
    huge = "y" * 10_000_000
    events = [
        RUN[0],
        {"type": "TEXT_MESSAGE_START", "messageId": huge[:100_000], "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": huge[:100_000], "delta": huge},
        {"type": "TEXT_MESSAGE_END", "messageId": huge[:100_000]},
        {"type": "STATE_SNAPSHOT", "snapshot": {"big": huge, "n": 10**300}},
        RUN[-1],
    ]
    path = _write(tmp_path, "huge.json", dumps(events))
    text = io.StringIO()
    assert run_replay(path, as_json=False, out=text) == 0
    assert len(text.getvalue()) < 2000


BROKEN_SECOND_EVENT = {
    "array": b'[\n{"type":"RUN_STARTED","threadId":"t","runId":"r"},\n{"type":"RUN_FINISHED" x}\n]',
    "array-one-line": b'[{"type":"RUN_STARTED","threadId":"t","runId":"r"}, {"type": x}]',
    "array-tricky-string": b'[{"type":"RUN_STARTED","threadId":"t,\\",[","runId":"r"},{"x": x}]',
    "jsonl": b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}\n{"type": x}\n',
    "sse": b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\ndata: {"type": x}\n\n',
}


@pytest.mark.parametrize("name", list(BROKEN_SECOND_EVENT))
def test_json_error_names_the_broken_event_and_one_offset(tmp_path: Path, name: str) -> None:
    """Event 1 broken: the error is about event 1 and its message has one byte offset."""
    path = _write(tmp_path, name, BROKEN_SECOND_EVENT[name])
    out = io.StringIO()
    assert run_validate(path, as_json=True, out=out) == 1
    error = json.loads(out.getvalue())["error"]
    assert (error["index"], error["code"]) == (1, "decode")
    assert error["message"].count("byte") == 1, error["message"]
    for command in (run_validate, run_replay):
        text = io.StringIO()
        assert command(path, as_json=False, out=text) == 1
        assert "event 1" in text.getvalue() and "event 0" not in text.getvalue()


@pytest.mark.parametrize("data", [b"", b"\n\n  \n", b"[]", b'{"stream": []}'])
def test_no_events_is_said_and_never_event_none(tmp_path: Path, data: bytes) -> None:
    """A file with no event says "no events found"; no output ever says "event None"."""
    path = _write(tmp_path, "none", data)
    for command in (run_validate, run_replay):
        text = io.StringIO()
        assert command(path, as_json=False, out=text) == 1
        assert "no events found" in text.getvalue()
        assert "None" not in text.getvalue()
    out = io.StringIO()
    assert run_validate(path, as_json=True, out=out) == 1
    assert json.loads(out.getvalue())["error"]["index"] is None
