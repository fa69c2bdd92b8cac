"""``agentproto``: every command, fed hostile files, exits 0/1/2 and prints no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentproto.cli import main

COMMANDS = [["replay"], ["validate"], ["acp", "replay"]]

HOSTILE = {
    "invalid-utf8": b'{"type": "RUN_STARTED", "threadId": "\xff\xfe"}\n\xc3\x28\n',
    "deep-1000": b"[" * 1000 + b"]" * 1000,
    "deep-1000-object": b'{"a":' * 1000 + b"1" + b"}" * 1000,
    "int-5000-digits": b'{"type": "STATE_SNAPSHOT", "snapshot": ' + b"9" * 5000 + b"}\n",
    "int-5000-digits-array": b"[" + b"7" * 5000 + b"]",
    "empty": b"",
    "blank-lines": b"\n\n   \n\t\n",
    "scalar": b"42",
    "scalar-string": b'"x"\n',
    "null": b"null",
    "input-not-object": b'{"stream": [], "input": 5}',
    "run-error-without-run-id": b'[{"type":"RUN_ERROR","message":"x","code":"U"}]',
    "array-of-scalars": b"[1, 2, 3]",
    "truncated-array": b'[{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},',
}


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_hostile_files_exit_0_1_or_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    name: str,
    as_json: bool,
) -> None:
    """Whatever the file holds, each command exits 0, 1 or 2; ``--json`` output parses."""
    path = tmp_path / name
    path.write_bytes(HOSTILE[name])
    code = main([*command, str(path), *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2)
    assert "Traceback" not in err
    if as_json and out:
        json.loads(out)
    if as_json and command != ["acp", "replay"]:
        assert out, "the AG-UI commands print a JSON object even on a fatal error"


def test_no_traceback_through_python_dash_m(tmp_path: Path) -> None:
    """Run as a program, a hostile file gives an exit status and a message, never a traceback."""
    for name in ("invalid-utf8", "deep-1000", "int-5000-digits", "input-not-object", "scalar"):
        data = HOSTILE[name]
        path = tmp_path / name
        path.write_bytes(data)
        for command in COMMANDS:
            done = subprocess.run(
                [sys.executable, "-m", "agentproto", *command, str(path)],
                capture_output=True,
                check=False,
            )
            assert done.returncode in (0, 1, 2), (name, command)
            assert b"Traceback" not in done.stderr, (name, command, done.stderr[-400:])
            from_stdin = subprocess.run(
                [sys.executable, "-m", "agentproto", *command, "-", "--json"],
                input=data,
                capture_output=True,
                check=False,
            )
            assert from_stdin.returncode == done.returncode, (name, command)
            assert b"Traceback" not in from_stdin.stderr, (name, command)


def test_version_flag_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``agentproto --version`` prints ``agentproto VERSION`` (the installed one) and exits 0."""
    import agentproto

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"agentproto {agentproto.__version__}\n"
    done = subprocess.run(
        [sys.executable, "-m", "agentproto", "--version"], capture_output=True, check=False
    )
    assert (done.returncode, done.stdout.decode()) == (0, f"agentproto {agentproto.__version__}\n")


UNKNOWN_EVENT = (
    b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}\n'
    b'{"type":"FANCY_NEW_EVENT","payload":1}\n'
    b'{"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n'
)


@pytest.mark.parametrize("command", [["validate"], ["replay"]], ids=" ".join)
def test_unknown_event_warning_is_one_short_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """An unknown event type is named alone on its warning line, not with every known type."""
    path = tmp_path / "unknown.jsonl"
    path.write_bytes(UNKNOWN_EVENT)
    assert main([*command, str(path)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "unknown-event" in line]
    assert len(lines) == 1
    assert "'FANCY_NEW_EVENT'" in lines[0] and "RUN_STARTED" not in lines[0]
    assert len(lines[0]) < 100, lines[0]
    assert main([*command, str(path), "--json"]) == 0
    assert "FANCY_NEW_EVENT" in capsys.readouterr().out  # the JSON keeps the whole diagnostic


BROKEN_CONFORMANCE = {
    "one-line": b'{"stream": [{"type":"RUN_STARTED","threadId":"t","runId":"r"}, {"type": x}]}',
    "lines": b'{"input": {},\n "stream": [\n{"type":"RUN_STARTED","threadId":"t","runId":"r"},'
    b'\n{"type":"RUN_FINISHED" x}]}',
}


@pytest.mark.parametrize("name", list(BROKEN_CONFORMANCE))
def test_broken_conformance_file_names_the_broken_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """A conformance file broken inside its second stream event is about event 1, on one
    line too (not a truncated JSON Lines stream), with one byte offset."""
    path = tmp_path / f"{name}.json"
    path.write_bytes(BROKEN_CONFORMANCE[name])
    assert main(["validate", str(path), "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["index"], error["code"]) == (1, "decode")
    assert error["message"].count("byte") == 1 and "truncated" not in error["message"]
    assert main(["replay", str(path)]) == 1
    assert "FATAL at event 1:" in capsys.readouterr().out
