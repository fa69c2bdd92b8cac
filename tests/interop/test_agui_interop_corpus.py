"""Interop over the conformance corpus: the real @ag-ui/client 1.0.0 and agentproto,
given the same bytes, reach the same verdict and the same messages and state.

Each draft corpus stream (those without a pinned peer era or a run input) is served
as SSE by uvicorn on 127.0.0.1 to the published client's ``HttpAgent`` (run by Node)
and fed to agentproto's Consumer. Where the two legitimately differ, because the 1.0.0
client predates a rule of the draft spec (or, for one stream, the corpus admits a gap
in the TypeScript client), the stream is listed in ``DIFFERENCES`` with the rule; the
test then checks that the client still behaves as recorded and that agentproto takes
the spec's side.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentproto._core.sse import encode_sse
from tests.agui.live_server import serve
from tests.conformance.agui_runner import StreamCase, observe
from tests.interop.test_agui_interop import SCRIPT, _ensure_client
from tests.needs import spec_params, spec_root

CORPUS = "agui/draft/conformance/streams"

# stream → (the rule of the draft spec the 1.0.0 client does not apply, the verdict the
# spec requires of a client, which agentproto must reach)
DIFFERENCES: dict[str, tuple[str, str]] = {
    "duplicate-interrupt-id-fatal": (
        "interrupt ids are unique within a run (lifecycle); 1.0.0 does not check them",
        "failed",
    ),
    "run-finished-wrong-run-id-fatal": (
        "RUN_STARTED and RUN_FINISHED agree on runId; 1.0.0 does not compare them",
        "failed",
    ),
    "run-finished-wrong-thread-id-fatal": (
        "RUN_STARTED/RUN_FINISHED carry the run input's threadId; 1.0.0 does not check it",
        "failed",
    ),
    "second-run-on-another-thread-fatal": (
        "a later run in the stream carries the input's threadId; 1.0.0 does not check it",
        "failed",
    ),
    "truncated-stream-fails-the-run": (
        "a stream that ends without a terminal event has no outcome and fails the run; "
        "1.0.0 resolves the run as completed",
        "failed",
    ),
    "unknown-enum-value-role-fatal": (
        "an unknown enum value (role 'narrator') is stripped with a warning (processing: "
        "enforcement); 1.0.0 rejects the stream, the corpus's admitted gap",
        "completed",
    ),
}


def _cases(root: Path) -> list[Any]:
    cases = []
    for path in sorted((root / CORPUS).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "client" in data or "input" in data:
            continue  # pinned peer eras and run inputs test the request side
        cases.append(pytest.param(StreamCase(path.stem, path, data), id=path.stem))
    return cases


def _static(body: bytes) -> Any:
    """An ASGI app answering any request with ``body`` as an SSE stream."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def _typescript(case: StreamCase) -> dict[str, Any]:
    folder = _ensure_client()
    started = next(
        (e for e in case.data["stream"] if isinstance(e, dict) and e.get("type") == "RUN_STARTED"),
        {},
    )
    body = b"".join(encode_sse(orjson.dumps(e)) for e in case.data["stream"])
    with serve(_static(body)) as url:
        result = subprocess.run(
            [
                "node",
                str(folder / SCRIPT.name),
                url,
                started.get("threadId", "t"),
                started.get("runId", "r"),
            ],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NODE_NO_WARNINGS": "1"},
        )
    document: dict[str, Any] = json.loads(result.stdout)
    return document


@pytest.mark.parametrize("case", spec_params(_cases, CORPUS))
def test_same_verdict_and_state_as_the_typescript_client(case: StreamCase) -> None:
    """Same bytes, same verdict and final messages/state, or a named spec difference."""
    theirs = _typescript(case)
    ours = observe(case, "1.0", with_request=False)
    their_outcome = "failed" if "error" in theirs else "completed"
    if case.name in DIFFERENCES:
        rule, spec_outcome = DIFFERENCES[case.name]
        assert their_outcome != spec_outcome, f"1.0.0 now applies the rule ({rule})"
        assert ours.outcome == spec_outcome, rule
        return
    assert ours.outcome == their_outcome, theirs.get("error")
    if ours.outcome == "completed":
        assert ours.conversation["messages"] == theirs["messages"]
        assert ours.conversation["state"] == theirs["state"]


def test_differences_name_corpus_streams() -> None:
    """Every listed difference is a stream of the corpus this test runs."""
    names = {Path(p.values[0].path).stem for p in _cases(spec_root(CORPUS))}
    assert set(DIFFERENCES) <= names
