"""``agentproto acp replay``: the final state of each session of a log, as JSON or a summary."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentproto._core.json.codec import DEFAULT_MAX_DEPTH
from agentproto.cli import main
from agentproto.cli.acp import example_log, replay_bytes, replay_json
from tests.acp.acp_updates import update_line as line

ISSUE_LINES = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"Read","_meta":{"a":1,"b":2}}}}\n'
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","_meta":{"a":null}}}}\n'
)
ISSUE_OUTPUT = (
    b'{"sessions":{"s1":{"entities":{"tool_call:c1":{"toolCallId":"c1","title":"Read",'
    b'"kind":"other","status":"completed","_meta":{"b":2}}}}},"diagnostics":[]}\n'
)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "log.ndjson"
    path.write_bytes(data)
    return str(path)


def test_issue_example_prints_exactly_the_documented_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's two lines print exactly the JSON it shows, byte for byte."""
    code, out, err = run(["acp", "replay", write(tmp_path, ISSUE_LINES), "--json"], capsys)
    assert (code, err) == (0, "")
    assert out.encode() == ISSUE_OUTPUT


def test_entities_show_defaults_and_omit_cleared_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defaults are shown, cleared fields absent, blocks separate, terminal bytes as base64."""
    text = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    data = b"".join(
        [
            line({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "T"}),
            line({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": None}),
            line({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text[0]}),
            line({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text[1]}),
            line({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "aGVs"}),
            line({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "bG8="}),
            line(
                {"sessionUpdate": "subagent_update", "sessionId": "k1", "additionalDirectories": []}
            ),
            line(
                {
                    "sessionUpdate": "subagent_update",
                    "sessionId": "k2",
                    "additionalDirectories": None,
                }
            ),
        ]
    )
    code, out, _ = run(["acp", "replay", write(tmp_path, data), "--json"], capsys)
    assert code == 0
    assert orjson.loads(out)["sessions"]["s1"]["entities"] == {
        "tool_call:c": {"toolCallId": "c", "kind": "other", "status": "pending"},
        "agent_message:m": {"messageId": "m", "content": text},
        "terminal:t": {"terminalId": "t", "output": {"data": base64.b64encode(b"hello").decode()}},
        "subagent:k1": {"sessionId": "k1", "additionalDirectories": []},
        "subagent:k2": {"sessionId": "k2"},
    }


def test_diagnostics_carry_line_code_and_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tolerated problems are listed with their line, code and message; the exit status is 0."""
    data = (
        line({"sessionUpdate": "_vendor"})
        + b"\n"
        + orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {}})
        + b"\n"
        + line({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "@"})
    )
    code, out, _ = run(["acp", "replay", write(tmp_path, data), "--json"], capsys)
    assert code == 0
    diagnostics = orjson.loads(out)["diagnostics"]
    assert [(d["line"], d["code"]) for d in diagnostics] == [
        (1, "unknown-session-update"),
        (3, "ignored-method"),
        (4, "invalid-update"),
    ]
    assert all(set(d) == {"line", "code", "message"} for d in diagnostics)
    assert "/params/update/data" in diagnostics[2]["message"]


def test_summary_without_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json a readable summary lists each session's entities and the diagnostics."""
    code, out, _ = run(["acp", "replay", write(tmp_path, ISSUE_LINES)], capsys)
    assert code == 0
    assert out.splitlines() == [
        "session s1: 1 entity",
        "  tool_call:c1  'Read' other, completed; _meta: b",
        "0 diagnostics",
    ]


def test_bundled_example_is_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    """Without FILE the bundled example log is replayed; it covers several entity kinds."""
    code, out, _ = run(["acp", "replay", "--json"], capsys)
    assert code == 0
    result = orjson.loads(out)
    keys = list(result["sessions"]["sess_1"]["entities"])
    for kind in (
        "tool_call:",
        "terminal:",
        "agent_message:",
        "plan:",
        "compaction:",
        "session_info",
    ):
        assert any(key.startswith(kind) for key in keys), kind
    call = result["sessions"]["sess_1"]["entities"]["tool_call:call_1"]
    assert call["_meta"] == {
        "acme.dev/trace": "t-42",
        "acme.dev/review": {"state": "approved", "reviewer": "sam"},
    }
    assert {d["code"] for d in result["diagnostics"]} == {"ignored-method", "ignored-message"}
    assert replay_json(replay_bytes(example_log())) == result
    code, out, _ = run(["acp", "replay"], capsys)
    assert code == 0 and out.startswith("session sess_1: ")


def test_fatal_input_error_exits_1_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line that is not a JSON-RPC message is fatal: exit 1, its line number in the message."""
    data = ISSUE_LINES + b'{"jsonrpc":"2.0"}\n'
    code, out, err = run(["acp", "replay", write(tmp_path, data), "--json"], capsys)
    assert (code, out) == (1, "")
    assert "line 3" in err
    code, _, err = run(["acp", "replay", write(tmp_path, b"[1,\n")], capsys)
    assert code == 1 and "line 1" in err


def test_usage_and_io_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing file, an unknown command or option exits 2; --help exits 0."""
    code, _, err = run(["acp", "replay", str(tmp_path / "missing.ndjson")], capsys)
    assert code == 2 and "cannot read" in err
    code, _, err = run(["acp", "replay", str(tmp_path)], capsys)
    assert code == 2
    assert run(["acp", "frobnicate"], capsys)[0] == 2
    assert run(["acp", "replay", "--yaml"], capsys)[0] == 2
    assert run([], capsys)[0] == 2
    assert run(["acp", "replay", "--help"], capsys)[0] == 0


def test_stdin_and_python_dash_m(tmp_path: Path) -> None:
    """``python -m agentproto acp replay - --json`` reads stdin and prints the same bytes."""
    done = subprocess.run(
        [sys.executable, "-m", "agentproto", "acp", "replay", "-", "--json"],
        input=ISSUE_LINES,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ISSUE_OUTPUT


def _nested(depth: int) -> Any:
    """A JSON value of exactly ``depth`` nested arrays and objects."""
    value: Any = []
    for level in range(depth - 1):
        value = {"k": value} if level % 2 else [value]
    return value


def test_big_integer_in_meta_round_trips_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """10**25 in a _meta value comes out of ``acp replay --json`` exactly, not as 1e+25."""
    data = line({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": {"n": 10**25}})
    assert b"10000000000000000000000000" in data
    code, out, err = run(["acp", "replay", write(tmp_path, data), "--json"], capsys)
    assert (code, err) == (0, "")
    assert '"_meta":{"n":10000000000000000000000000}' in out
    entity = json.loads(out)["sessions"]["s1"]["entities"]["tool_call:c1"]
    assert entity["_meta"] == {"n": 10**25}


@pytest.mark.parametrize("extra", [0, 1])
def test_depth_limit_of_the_line_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: int
) -> None:
    """A _meta value as deep as the limit allows prints whole; one level more exits 1 naming it."""
    # the line's own levels: message, params, update, _meta object, then the value
    deep = _nested(DEFAULT_MAX_DEPTH - 4 + extra)
    data = line({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": {"d": deep}})
    code, out, err = run(["acp", "replay", write(tmp_path, data), "--json"], capsys)
    if not extra:
        assert (code, err) == (0, "")
        entity = json.loads(out)["sessions"]["s1"]["entities"]["tool_call:c1"]
        assert entity["_meta"] == {"d": deep}
    else:
        assert (code, out) == (1, "")
        assert f"deeper than {DEFAULT_MAX_DEPTH} levels" in err
        assert "line 1" in err


def test_user_message_meta_500_deep_prints_as_json_and_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user_message _meta nested 500 deep: whole with --json, a bounded summary in text."""
    deep = _nested(500)
    update = {"sessionUpdate": "user_message", "messageId": "m", "content": []}
    update["_meta"] = {"d": deep}
    path = write(tmp_path, line(update))
    code, out, err = run(["acp", "replay", path, "--json"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out)["sessions"]["s1"]["entities"]["user_message:m"]["_meta"] == {"d": deep}
    code, out, err = run(["acp", "replay", path], capsys)
    assert (code, err) == (0, "")
    assert "user_message:m" in out and max(map(len, out.splitlines())) < 200


def test_summary_is_bounded_for_huge_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 10 MB title, message text, id and _meta key print as short previews, never whole."""
    huge = "q" * 10_000_000
    data = line(
        {"sessionUpdate": "tool_call_update", "toolCallId": huge[:100_000], "title": huge}
    ) + line(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "m",
            "content": {"type": "text", "text": huge},
            "_meta": {huge: 1, **{f"k{i}": i for i in range(10_000)}},
        },
        session=huge[:100_000],
    )
    code, out, err = run(["acp", "replay", write(tmp_path, data)], capsys)
    assert (code, err) == (0, "")
    assert len(out) < 2000


def test_unknown_kinds_keep_their_raw_payload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An update of an unknown kind is kept whole in --json (the schema's ``other`` member:
    preserve it when storing or replaying), big integers exact, and counted in the summary."""
    unknown = {"sessionUpdate": "brand_new_kind", "payload": {"n": 10**25, "xs": [1, None]}}
    data = line({"sessionUpdate": "tool_call_update", "toolCallId": "c1"}) + line(unknown)
    data += line({"sessionUpdate": "another_kind"})
    code, out, err = run(["acp", "replay", write(tmp_path, data), "--json"], capsys)
    assert (code, err) == (0, "")
    session = json.loads(out)["sessions"]["s1"]
    assert session["unknown"] == [unknown, {"sessionUpdate": "another_kind"}]
    assert list(session["entities"]) == ["tool_call:c1"]
    code, out, err = run(["acp", "replay", write(tmp_path, data)], capsys)
    assert (code, err) == (0, "")
    assert "2 updates of unknown kinds kept unapplied: 'brand_new_kind', 'another_kind'" in out


def test_to_json_without_unknown_kinds_has_entities_only() -> None:
    store = replay_bytes(line({"sessionUpdate": "tool_call_update", "toolCallId": "c1"}))
    assert list(store.to_json()["sessions"]["s1"]) == ["entities"]
