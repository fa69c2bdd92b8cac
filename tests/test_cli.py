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
