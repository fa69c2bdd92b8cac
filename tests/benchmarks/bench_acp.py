"""ACP figure ``acp.parse_apply_100k``: parse and apply v2 upserts vs the peer parsing v1.

Ours: NDJSON bytes of ``session/update`` notifications carrying v2 upserts (tool
calls created then patched, ``_meta`` patches included, agent messages, session
info) go through :class:`~agentproto.acp.SessionStore`: our
:class:`~agentproto.acp.MessageReader` frames and decodes each line, the
notification is parsed (strictly, every field checked) and the update applied
to the session state. The peer, agent-client-protocol 0.12.1 (pydantic), merely
parses the *equivalent v1 stream* the way its own transport does
(``json.loads(line)`` then ``SessionNotification.model_validate(params)``), and
keeps no state. The v1 stream is what our stateful v2→v1 adapter sends for the
same updates (a tool call's first update becomes a v1 ``tool_call``, later ones
``tool_call_update`` with the complete merged ``_meta``; an agent message
becomes an ``agent_message_chunk``): one v1 line per v2 line.

Both streams are checked outside the timed loops (ours in strict mode without a
diagnostic, every peer line validated), then timed side by side in chunks of
lines (see :func:`tests.benchmarks.bench.best_us_per_item`); each of our chunks
starts a fresh store. The figure is µs per event, ``ratio = peer / ours``.

Register it at the end of the harness (``tests/benchmarks/bench.py``) with::

    from tests.benchmarks import bench_acp

    benchmark(bench_acp.FIGURE)(bench_acp.bench_acp_parse_apply)

This module imports the harness only when it runs, so that import is not circular.
"""

from __future__ import annotations

import importlib.metadata
import json
import random
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from agentproto.acp import SessionStore, V2ToV1Adapter, parse_session_update
from agentproto.acp._protocol.wire import make_v1_converter

if TYPE_CHECKING:
    from tests.benchmarks.bench import Figure, Workload

__all__ = ["FIGURE", "bench_acp_parse_apply", "figures", "generate_updates", "streams"]

FIGURE = "acp.parse_apply_100k"


def _harness() -> types.ModuleType:
    """The benchmark harness module, the one running as ``__main__`` if it is.

    ``python -m tests.benchmarks.bench`` runs the harness as ``__main__``; importing
    ``tests.benchmarks.bench`` then would load a second copy whose ``PeerMissing`` the
    running harness does not catch. Imported lazily, so that the harness may import this
    module at its end to register the figure.
    """
    main = sys.modules.get("__main__")
    if main is not None and hasattr(main, "REGISTRY") and hasattr(main, "best_us_per_item"):
        return main
    from tests.benchmarks import bench

    return bench


_WORDS = tuple(
    [
        "read",
        "the",
        "module",
        "parse",
        "the",
        "request",
        "validate",
        "the",
        "input",
        "once",
        "at",
        "the",
        "boundary",
        "then",
        "pass",
        "typed",
        "values",
        "down",
        "and",
        "report",
        "the",
        "exact",
        "field",
        "that",
        "failed",
        "with",
        "its",
        "path",
        "so",
        "the",
        "caller",
        "sees",
        "which",
        "key",
        "of",
        "the",
        "payload",
        "was",
        "wrong",
        "instead",
        "of",
        "a",
        "stack",
        "trace",
    ]
)
_NAMES = ("parser", "handler", "session", "request", "config", "reader", "store", "codec")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _code(rng: random.Random, lines: int) -> str:
    """Plausible source lines, as a file read or a diff hunk shows them."""
    out = []
    for _ in range(lines):
        name = rng.choice(_NAMES)
        out.append(
            rng.choice(
                (
                    f"    def {name}_{rng.randint(1, 99)}(self, value: str) -> None:",
                    f"        if not isinstance(value, {name.capitalize()}):",
                    f"            raise ValueError(f'bad {name}: {{value!r}}')",
                    f"        self._{name} = {name}.load(value, strict=True)",
                    f"    # {_text(rng, 7)}",
                    "",
                )
            )
        )
    return "\n".join(out)


def _output(rng: random.Random, lines: int) -> str:
    """Plausible command output."""
    return "\n".join(
        f"tests/test_{rng.choice(_NAMES)}.py::test_{rng.choice(_WORDS)}_{i} "
        + rng.choice(("PASSED", "PASSED", "PASSED", "FAILED"))
        for i in range(lines)
    )


def _tool_content(rng: random.Random, kind: str, path: str) -> list[dict[str, Any]]:
    if kind == "edit":  # a unified diff hunk as text (v1 and v2 diff objects differ)
        old = _code(rng, rng.randint(3, 10)).splitlines()
        new = _code(rng, rng.randint(3, 12)).splitlines()
        text = "\n".join(
            [f"--- {path}", f"+++ {path}", f"@@ -1,{len(old)} +1,{len(new)} @@"]
            + [f"-{line}" for line in old]
            + [f"+{line}" for line in new]
        )
    elif kind == "read":
        text = _code(rng, rng.randint(15, 50))
    elif kind == "execute":
        text = _output(rng, rng.randint(5, 25))
    else:
        text = "\n".join(f"{path}:{rng.randint(1, 400)}: {_text(rng, 6)}" for _ in range(8))
    return [{"type": "content", "content": {"type": "text", "text": text}}]


def generate_updates(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` v2 upserts (wire dicts) of one plausible coding session, deterministic per seed.

    About four in five are ``tool_call_update``: a call is created (title, kind,
    raw input, a location, two ``_meta`` keys), reported in progress one to
    three times (its content replaced: a file excerpt, a diff hunk, command
    output or search matches, as agents report them; a ``_meta`` key patched),
    then finished (raw output, a ``_meta`` key removed). The rest are
    ``agent_message`` upserts of a few sentences and ``session_info_update``
    with a ``_meta`` patch.
    """
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    calls = messages = 0
    while len(out) < n:
        r = rng.random()
        if r < 0.8:
            calls += 1
            ident = f"call_{calls}"
            kind = rng.choice(["read", "read", "edit", "execute", "search"])
            path = f"/work/project/src/{rng.choice(_NAMES)}/{rng.choice(_NAMES)}.py"
            raw_input: dict[str, Any] = (
                {"command": f"pytest -q tests/test_{rng.choice(_NAMES)}.py"}
                if kind == "execute"
                else {"path": path, "limit": 80}
            )
            out.append(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": ident,
                    "title": f"{kind.capitalize()} {path.rsplit('/', 1)[1]}",
                    "kind": kind,
                    "status": "pending",
                    "rawInput": raw_input,
                    "locations": [{"path": path, "line": rng.randint(1, 400)}],
                    "_meta": {"zed.dev/debugMode": rng.random() < 0.5, "acme.dev/trace": ident},
                }
            )
            for step in range(rng.randint(1, 3)):
                out.append(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": ident,
                        "status": "in_progress",
                        "content": _tool_content(rng, kind, path),
                        "_meta": {"zed.dev/progress": (step + 1) / 4},
                    }
                )
            out.append(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": ident,
                    "status": rng.choice(["completed", "completed", "failed"]),
                    "rawOutput": {"lines": rng.randint(1, 400), "truncated": False},
                    "_meta": {"zed.dev/progress": None},
                }
            )
        elif r < 0.95:
            messages += 1
            sentences = [_text(rng, rng.randint(8, 16)).capitalize() + "." for _ in range(3)]
            out.append(
                {
                    "sessionUpdate": "agent_message",
                    "messageId": f"msg_{messages}",
                    "content": [{"type": "text", "text": " ".join(sentences)}],
                }
            )
        else:
            out.append(
                {
                    "sessionUpdate": "session_info_update",
                    "title": _text(rng, 3).capitalize(),
                    "updatedAt": f"2026-10-13T09:{rng.randint(0, 59):02d}:00Z",
                    "_meta": {"acme.dev/turn": len(out)},
                }
            )
    return out[:n]


def _line(session_id: str, update: dict[str, Any]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }
    return orjson.dumps(message) + b"\n"


def streams(n: int, seed: int = 0) -> tuple[list[bytes], list[bytes]]:
    """The v2 lines and the equivalent v1 lines (same count, same order)."""
    updates = generate_updates(n, seed)
    adapter = V2ToV1Adapter()
    v1_converter = make_v1_converter()
    v2_lines: list[bytes] = []
    v1_lines: list[bytes] = []
    for update in updates:
        converted = adapter.convert(parse_session_update(update), session_id="sess_1")
        if len(converted) != 1:
            raise _harness().BenchError(f"{update['sessionUpdate']} has no single v1 equivalent")
        v2_lines.append(_line("sess_1", update))
        v1_lines.append(_line("sess_1", v1_converter.dump(converted[0])))
    if adapter.diagnostics:
        raise _harness().BenchError(f"v2 -> v1 conversion was lossy: {adapter.diagnostics[0]}")
    return v2_lines, v1_lines


def _peer_model() -> Any:
    try:
        from acp.schema import SessionNotification
    except ImportError as exc:
        raise _harness().PeerMissing(
            f"peer agent-client-protocol is missing ({exc}); run `nox -s bench` or install "
            "agent-client-protocol==0.12.1"
        ) from exc
    return SessionNotification


def _loop_ours(lines: Sequence[bytes]) -> None:
    store = SessionStore(strict=True)
    store.feed(b"".join(lines))
    store.close()


def figures(n_events: int, repeat: int) -> list[Figure]:
    """Time the figure on ``n_events`` updates, best of ``repeat`` rounds per chunk.

    Raises:
        PeerMissing: agent-client-protocol cannot be imported.
        BenchError: a stream does not pass its check (never timed as work).
    """
    harness = _harness()
    model = _peer_model()
    version = importlib.metadata.version("agent-client-protocol")
    v2_lines, v1_lines = streams(n_events)
    # check both sides outside the timed loops
    store = SessionStore(strict=True)
    store.feed(b"".join(v2_lines))
    store.close()
    if store.diagnostics:
        raise harness.BenchError(f"ours reported {store.diagnostics[0]}")
    validate = model.model_validate
    for index, line in enumerate(v1_lines):
        try:
            validate(json.loads(line)["params"])
        except Exception as exc:  # pydantic.ValidationError and anything else it raises
            raise harness.BenchError(f"peer {version} rejects v1 line {index + 1}: {exc}") from exc

    def loop_peer(lines: Sequence[bytes]) -> None:
        loads = json.loads
        for line in lines:
            validate(loads(line)["params"])

    cases = ((_loop_ours, v2_lines), (loop_peer, v1_lines))
    ours, peer = harness.best_us_per_item(cases, repeat)
    figure: Figure = harness.Figure.comparison(FIGURE, ours, peer)
    return [figure]


def bench_acp_parse_apply(w: Workload) -> list[Figure]:
    """Parse and apply v2 upserts from NDJSON vs agent-client-protocol parsing v1."""
    return figures(w.n_events, w.repeat)


if __name__ == "__main__":  # pragma: no cover - a quick manual run
    import sys

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    for figure in figures(count, 3):
        print(figure.to_json())
