"""History compaction proven on every stream of the mirrored AG-UI corpora and fixtures.

For each stream (and each valid event fixture of the draft, put in a run of its own),
:func:`agentproto.agui.compact_events` compacts the recorded events, and the compacted
events are replayed exactly as the conformance runner replays a stream (SSE frames into a
:class:`~agentproto.agui.Consumer`, the stream's input, version and peer era): the
conversation (messages, activities, state), the run outcomes and the client's verdict must
be those of the original. A stream the consumer refuses as a whole cannot be compacted: it
is counted apart ("not compactable"), never as verified, and compaction must refuse exactly
those. ``test_figures`` prints, per corpus, streams compacted / verified / total, the ones
not compactable, and the size reduction (compact JSON bytes of the compacted streams).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentproto import AgentProtoError, InternalError
from agentproto.agui import compact_events
from tests.conformance import agui_runner as runner
from tests.conformance.agui_runner import Corpus, StreamCase
from tests.jsonsame import same_json
from tests.needs import find_spec, spec_params

FIXTURES = "fixtures"  # the label of the draft's event fixtures
NEEDED = (*runner.CORPUS_FOLDERS, "agui/draft/fixtures")
needs_corpora = pytest.mark.spec(*NEEDED)


@dataclass
class Verdict:
    """What compaction did with one stream."""

    status: str  # "verified" | "not-compactable" | "failed"
    reason: str = ""
    size: tuple[int, int] = (0, 0)  # compact JSON bytes before and after (compacted only)


def _bytes(events: list[Any]) -> int:
    return len(json.dumps(events, ensure_ascii=False, separators=(",", ":")).encode())


def _replayed(case: StreamCase, version: str) -> runner.Observation:
    return runner.observe(case, version, "frames", with_request=False)


def _judge(case: StreamCase, version: str) -> Verdict:
    """Compact one stream and compare the replays."""
    original = _replayed(case, version)
    try:
        result = compact_events(
            case.data["stream"],
            run_input=runner.completed_input(case),
            protocol_version=version,
            peer_version=runner.peer_version(case),
        )
    except InternalError as exc:
        return Verdict("failed", f"compaction's own check failed: {exc}")
    except AgentProtoError as exc:
        if original.outcome == "completed":
            return Verdict("failed", f"refused a stream the consumer accepts: {exc}")
        return Verdict("not-compactable", f"{type(exc).__name__}: {exc}")
    if original.outcome != "completed":
        return Verdict("failed", f"compacted a stream the consumer refuses ({original.error})")
    compacted = StreamCase(case.name, case.path, {**case.data, "stream": result.to_json()})
    replay = _replayed(compacted, version)
    size = (_bytes(case.data["stream"]), _bytes(compacted.data["stream"]))
    if replay.outcome != "completed":
        return Verdict("failed", f"the compacted stream is refused: {replay.error}", size)
    if not same_json(original.conversation, replay.conversation):
        return Verdict(
            "failed",
            f"conversation differs: {replay.conversation} vs {original.conversation}",
            size,
        )
    if original.runs != replay.runs:
        return Verdict("failed", f"run outcomes differ: {replay.runs} vs {original.runs}", size)
    return Verdict("verified", size=size)


# ---- the streams -----------------------------------------------------------------------------


def _fixture_cases(mirror: Path) -> list[StreamCase]:
    """Each valid event fixture of the draft in a run of its own (a run event completes it)."""
    cases = []
    folder = mirror / "agui/draft/fixtures"
    for path in sorted(folder.glob("*Event/valid/*.json")):
        event = json.loads(path.read_text(encoding="utf-8"))
        thread = event.get("threadId") if isinstance(event.get("threadId"), str) else "t-fixture"
        run = event.get("runId") if isinstance(event.get("runId"), str) else "r-fixture"
        opener = {"type": "RUN_STARTED", "threadId": thread, "runId": run}
        closer = {"type": "RUN_FINISHED", "threadId": thread, "runId": run}
        kind = event.get("type")
        stream = (
            [event, closer]
            if kind == "RUN_STARTED"
            else [opener, event]
            if kind in ("RUN_FINISHED", "RUN_ERROR")
            else [opener, event, closer]
        )
        name = f"{path.parent.parent.name}/{path.stem}"
        cases.append(StreamCase(name, path, {"stream": stream, "expect": {}}))
    return cases


def _corpora(root: Path | None) -> list[tuple[Corpus, list[StreamCase]]]:
    """The corpora and the draft's event fixtures under ``root``; none without it (the
    tests that need them are marked, and skip saying why)."""
    if root is None:
        return []
    out = [(corpus, runner.load_streams(corpus)[0]) for corpus in runner.default_corpora(root)]
    out.append((Corpus(FIXTURES, root / "agui/draft/fixtures", "1.0"), _fixture_cases(root)))
    return out


CORPORA = _corpora(find_spec(*NEEDED))


@functools.cache
def _verdicts(label: str) -> dict[str, Verdict]:
    corpus, cases = next((c, cases) for c, cases in CORPORA if c.label == label)
    return {case.name: _judge(case, corpus.protocol_version) for case in cases}


PARAMS = spec_params(
    lambda _: [
        pytest.param(corpus.label, case.name, id=f"{corpus.label}/{case.name}")
        for corpus, cases in CORPORA
        for case in cases
    ],
    *NEEDED,
    width=2,
)


@pytest.mark.parametrize(("label", "name"), PARAMS)
def test_compacted_stream_replays_the_same(label: str, name: str) -> None:
    """The compacted stream replays to the original's conversation and run outcomes, or
    the stream is one the consumer refuses, and compaction refuses it too."""
    verdict = _verdicts(label)[name]
    assert verdict.status != "failed", verdict.reason


@needs_corpora
def test_corpora_and_fixtures_found() -> None:
    """The spec mirror holds the three corpora and the draft's event fixtures."""
    labels = [corpus.label for corpus, cases in CORPORA if cases]
    assert labels == [*(label for label, _, _ in runner.DEFAULT_CORPORA), FIXTURES]


@needs_corpora
def test_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """Per corpus: compacted / verified / total, not compactable, size; nothing grows."""
    lines, grown = [], []
    for corpus, cases in CORPORA:
        verdicts = _verdicts(corpus.label)
        count = {s: sum(v.status == s for v in verdicts.values()) for s in ("verified", "failed")}
        refused = sum(v.status == "not-compactable" for v in verdicts.values())
        compacted = len(cases) - refused
        before = sum(v.size[0] for v in verdicts.values())
        after = sum(v.size[1] for v in verdicts.values())
        saved = 100 * (before - after) / before if before else 0.0
        lines.append(
            f"{corpus.label}: {compacted} compacted, {count['verified']} verified, "
            f"{len(cases)} total; {refused} not compactable (refused by the consumer); "
            f"{before} -> {after} bytes ({saved:.1f}% smaller)"
        )
        grown += [f"{corpus.label}/{n}" for n, v in verdicts.items() if v.size[1] > v.size[0]]
        assert count["failed"] == 0
    with capsys.disabled():
        print()
        print("\n".join(lines))
    assert grown == [], f"compaction made these streams longer: {grown}"
