"""The AG-UI conformance corpora (draft, 1.1, 1.0) through the real consumer, plus the matcher.

The corpora are read from the spec mirror (``AGENTPROTO_SPEC_MIRROR``, else
``../shared/spec``) or the download cache (:mod:`tests.needs`), never copied. One test per
stream per corpus (ids ``agui-draft/<name>``); streams excepted in
``agui_exceptions.toml`` are strict xfails, so an exception that stops being needed fails
the suite. ``nox -s conformance`` runs the same check with the runner's report
(:mod:`tests.conformance.agui_runner`).
"""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import agui_runner as runner
from tests.conformance.agui_runner import (
    ConfigError,
    Corpus,
    Evidence,
    Observation,
    Phrase,
    StreamCase,
    check,
    event_absent_mismatch,
    event_path_mismatch,
    json_equal,
    resolve_dotted,
    split_expected,
    subset_mismatch,
    wording_mismatch,
)
from tests.needs import spec_params, spec_root

# ---- the corpora --------------------------------------------------------------------------


CORPORA = runner.CORPUS_FOLDERS
needs_corpora = pytest.mark.spec(*CORPORA)


def _corpora() -> list[Corpus]:
    """The three corpora; the test skips when they cannot be had (tests/needs.py)."""
    return runner.default_corpora(spec_root(*CORPORA))


def _collect(root: Path) -> list[Any]:
    """``(corpus, case)`` params for every stream of the pinned corpora under ``root``."""
    exceptions = runner.load_exceptions()
    params = []
    for corpus in runner.default_corpora(root):
        cases, _ = runner.load_streams(corpus)
        for case in cases:
            marks = []
            if case.name in exceptions:
                marks.append(pytest.mark.xfail(strict=True, reason=exceptions[case.name]))
            params.append(pytest.param(corpus, case, id=f"{corpus.label}/{case.name}", marks=marks))
    return params


PARAMS = spec_params(_collect, *CORPORA, width=2)


@functools.cache
def _phrases() -> dict[str, Phrase]:
    return runner.load_phrases()


@functools.cache
def _corpus_result(label: str) -> runner.CorpusResult:
    corpus = next(c for c in _corpora() if c.label == label)
    return runner.run_corpus(corpus, _phrases(), runner.load_exceptions())


def _result(corpus: Corpus, name: str) -> runner.StreamResult:
    return next(s for s in _corpus_result(corpus.label).streams if s.name == name)


@pytest.mark.parametrize(("corpus", "case"), PARAMS)
def test_stream(corpus: Corpus, case: StreamCase) -> None:
    """Each stream meets every base expectation, alike fed per frame, whole or in chunks."""
    result = _result(corpus, case.name)
    assert not result.failures, "\n".join(f"{f.key}: {f.reason}" for f in result.failures)


@needs_corpora
def test_corpora_found() -> None:
    """The spec material holds the three AG-UI corpora, each with streams."""
    for corpus in _corpora():
        assert runner.load_streams(corpus)[0], corpus.folder


@needs_corpora
def test_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """The runner's per-corpus lines, with corpus listings that match their manifests."""
    results = [_corpus_result(label) for label, _, _ in runner.DEFAULT_CORPORA]
    out = io.StringIO()
    runner.report(results, out)
    with capsys.disabled():
        print()
        for result in results:
            print(result.summary_line())
    problems = [f"{r.corpus.label}: {p}" for r in results for p in r.problems]
    assert not problems, problems


@needs_corpora
def test_every_phrase_entry_is_used() -> None:
    """Every phrase-map entry is needed by some stream of the mirrored corpora."""
    needed = {
        key
        for corpus in _corpora()
        for case in runner.load_streams(corpus)[0]
        for key in runner.phrases_needed(case)
    }
    assert sorted(set(_phrases()) - needed) == []


@needs_corpora
def test_every_exception_names_a_stream() -> None:
    """Every exception names a stream of the mirrored corpora."""
    names = {case.name for corpus in _corpora() for case in runner.load_streams(corpus)[0]}
    assert sorted(set(runner.load_exceptions()) - names) == []


# ---- subset matching ----------------------------------------------------------------------


def test_subset_object_compares_named_keys_only() -> None:
    """An object matches when every named key matches, whatever else it holds."""
    assert subset_mismatch({"id": "m1"}, {"id": "m1", "role": "user", "extra": [1]}) is None


def test_subset_missing_key_fails() -> None:
    """A named key that is absent fails, with its pointer in the reason."""
    reason = subset_mismatch({"a": {"b": 1}}, {"a": {}})
    assert reason is not None and reason.startswith("/a/b: missing")


def test_subset_arrays_need_the_same_length() -> None:
    """Arrays must have exactly as many elements as expected."""
    assert subset_mismatch([1, 2], [1, 2, 3]) is not None
    assert subset_mismatch([{"id": "a"}], [{"id": "a", "x": 1}]) is None


def test_subset_recurses_into_array_elements() -> None:
    """Objects inside arrays are themselves subset-matched, element by element in order."""
    expected = [{"id": "a"}, {"id": "b", "content": "hi"}]
    assert subset_mismatch(expected, [{"id": "a"}, {"id": "b", "content": "hi", "r": 1}]) is None
    reason = subset_mismatch(expected, [{"id": "b", "content": "hi"}, {"id": "a"}])
    assert reason is not None and reason.startswith("/0/id")


def test_subset_scalars_are_json_equal() -> None:
    """Scalars compare as JSON: true is not 1, 1 equals 1.0, null only equals null."""
    assert subset_mismatch(1, True) is not None
    assert subset_mismatch(0, False) is not None
    assert subset_mismatch(1, 1.0) is None
    assert subset_mismatch(None, None) is None
    assert subset_mismatch(None, 0) is not None
    assert json_equal({"a": [1, "x"]}, {"a": [1.0, "x"]})


def test_subset_root_state_shapes() -> None:
    """A root-level array, a falsy number and null are matched as whole values."""
    assert subset_mismatch(["only-this"], ["only-this"]) is None
    assert subset_mismatch(["only-this"], {"0": "only-this"}) is not None
    assert subset_mismatch(0, 0) is None
    assert subset_mismatch(None, {}) is not None


def test_empty_subset_matches_anything_of_its_kind() -> None:
    """An empty object expectation asserts nothing beyond being an object."""
    assert subset_mismatch({}, {"x": 1}) is None
    assert subset_mismatch({}, []) is not None


# ---- event paths --------------------------------------------------------------------------

EVENTS = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/a", "value": "drop-me"}]},
    {"type": "STATE_SNAPSHOT", "snapshot": None},
]


def test_dotted_paths_index_arrays_with_digits() -> None:
    """Digit segments index arrays, other segments name object keys."""
    assert resolve_dotted(EVENTS[1], "delta.0.op") == "remove"
    assert resolve_dotted(EVENTS[1], "delta.1.op") is runner._MISSING
    assert resolve_dotted({"0": "key"}, "0") == "key"


def test_event_path_value_must_exist_and_equal() -> None:
    """An event path names the delivered event by index and must hold exactly that value."""
    assert event_path_mismatch(EVENTS, "1.delta.0.value", "drop-me") is None
    assert event_path_mismatch(EVENTS, "1.delta.0.value", "other") is not None
    assert event_path_mismatch(EVENTS, "0.outcome", None) is not None


def test_event_path_null_is_a_value() -> None:
    """A present ``null`` satisfies an expected null, an absent key does not."""
    assert event_path_mismatch(EVENTS, "2.snapshot", None) is None
    assert event_path_mismatch(EVENTS, "0.snapshot", None) is not None


def test_event_path_beyond_delivered_fails() -> None:
    """An index past the delivered events fails rather than matching nothing."""
    reason = event_path_mismatch(EVENTS, "5.type", "RUN_FINISHED")
    assert reason is not None and "not delivered" in reason


def test_event_absent_path() -> None:
    """An absent path passes; a present one (even null) fails; an undelivered event fails."""
    assert event_absent_mismatch(EVENTS, "0.outcome") is None
    assert event_absent_mismatch(EVENTS, "2.snapshot") is not None
    assert event_absent_mismatch(EVENTS, "3.outcome") is not None


def test_event_path_needs_an_index() -> None:
    """A key that does not start with an event index is a malformed expectation."""
    with pytest.raises(ValueError):
        event_path_mismatch(EVENTS, "type", "RUN_STARTED")


# ---- wording: tokens and phrases ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens", "prose"),
    [
        (
            "No active text message found with ID 'orphan-content-m1'",
            ("orphan-content-m1",),
            "No active text message found with ID",
        ),
        (
            "First TEXT_MESSAGE_CHUNK must have a messageId",
            ("TEXT_MESSAGE_CHUNK", "messageId"),
            "First must have a",
        ),
        ("/delta/0", ("/delta/0",), ""),
        ("/messages/0/content/1", ("/messages/0/content/1",), ""),
        ("FUTURE_EVENT", ("FUTURE_EVENT",), ""),
        ("1.1", ("1.1",), ""),
        ("s-run-finished-active-subagent-1", ("s-run-finished-active-subagent-1",), ""),
        ("activity-delta-missing-never-created", ("activity-delta-missing-never-created",), ""),
        ("delta", ("delta",), ""),
        ('expected \\"reasoning\\"', ("reasoning",), "expected"),
        ("does not match the open stream's role", (), "does not match the open stream's role"),
        ("carry the input's threadId", ("threadId",), "carry the input's"),
        ("DROPS non-text parts", (), "DROPS non-text parts"),
        ("dropping SUBAGENT_STARTED", ("SUBAGENT_STARTED",), "dropping"),
        ("expected object, received array", (), "expected object, received array"),
    ],
)
def test_split_expected(text: str, tokens: tuple[str, ...], prose: str) -> None:
    """Ids, pointers, event types, versions and field names are tokens; the rest is prose."""
    split = split_expected(text)
    assert split.tokens == tokens
    assert split.prose == prose
    assert split.needs_phrase == bool(prose)


def test_apostrophe_is_not_a_quote() -> None:
    """A possessive apostrophe does not open a quoted token."""
    assert split_expected("the input's threadId and 'x-1'").tokens == ("threadId", "x-1")


PHRASES = {
    "No active text message found with ID 'orphan-content-m1'": Phrase(
        "No active text message found with ID 'orphan-content-m1'", ("text.not-open",), "test"
    )
}


def test_wording_token_must_appear_verbatim() -> None:
    """A token-only string matches when the token is in the message, subject or path."""
    assert (
        wording_mismatch(
            "/futureProp", Evidence("unknown-field", "stripped", path="/futureProp"), {}
        )
        is None
    )
    assert (
        wording_mismatch("FUTURE_EVENT", Evidence("x", "dropped", subject="FUTURE_EVENT"), {})
        is None
    )
    assert (
        wording_mismatch("/futureProp", Evidence("unknown-field", "stripped /other"), {})
        is not None
    )


def test_wording_token_is_case_sensitive() -> None:
    """Verbatim means verbatim: case differences do not match."""
    assert wording_mismatch("FUTURE_EVENT", Evidence("x", "future_event"), {}) is not None


def test_wording_phrase_needs_a_map_entry() -> None:
    """A string with prose and no phrase-map entry fails as unmapped."""
    reason = wording_mismatch("that was not started", Evidence("step.not-open", "x"), {})
    assert reason is not None and "unmapped phrase" in reason


def test_wording_phrase_needs_a_listed_code_and_its_tokens() -> None:
    """A mapped phrase matches only our codes it lists, and still needs its tokens verbatim."""
    text = "No active text message found with ID 'orphan-content-m1'"
    good = Evidence("text.not-open", "TEXT_MESSAGE_CONTENT for 'orphan-content-m1' not open")
    assert wording_mismatch(text, good, PHRASES) is None
    wrong_code = Evidence("tool.not-open", "orphan-content-m1")
    assert "maps to" in (wording_mismatch(text, wrong_code, PHRASES) or "")
    wrong_id = Evidence("text.not-open", "message 'orphan-content-m2' not open")
    assert "not in" in (wording_mismatch(text, wrong_id, PHRASES) or "")


def test_phrase_map_rejects_token_only_entries(tmp_path: Path) -> None:
    """The phrase map holds prose only: an entry that is just tokens is a configuration error."""
    path = tmp_path / "p.toml"
    path.write_text('[phrases."FUTURE_EVENT"]\ncodes = ["x"]\nwhy = "y"\n', encoding="utf-8")
    with pytest.raises(ConfigError):
        runner.load_phrases(path)


def test_phrase_map_entries_need_a_reason(tmp_path: Path) -> None:
    """Every phrase-map entry says why its codes match."""
    path = tmp_path / "p.toml"
    path.write_text('[phrases."that was not started"]\ncodes = ["x"]\nwhy = ""\n', encoding="utf-8")
    with pytest.raises(ConfigError):
        runner.load_phrases(path)


def test_shipped_phrase_map_loads() -> None:
    """The reviewed phrase map is well formed."""
    assert runner.load_phrases()


# ---- exceptions ---------------------------------------------------------------------------


def test_exceptions_only_from_client_specific_groups(tmp_path: Path) -> None:
    """Only era-* streams and the admitted-gap stream may be excepted."""
    path = tmp_path / "e.toml"
    path.write_text('[streams]\nconformant-run-is-quiet = "too strict"\n', encoding="utf-8")
    with pytest.raises(ConfigError):
        runner.load_exceptions(path)
    path.write_text(
        '[streams]\nera-0-0-39-flattens-content = "r"\nunknown-enum-value-role-fatal = "r"\n',
        encoding="utf-8",
    )
    assert set(runner.load_exceptions(path)) == {
        "era-0-0-39-flattens-content",
        "unknown-enum-value-role-fatal",
    }


def test_exceptions_need_a_reason(tmp_path: Path) -> None:
    """An exception without a one-line reason is refused."""
    path = tmp_path / "e.toml"
    path.write_text('[streams]\nera-0-0-39-flattens-content = ""\n', encoding="utf-8")
    with pytest.raises(ConfigError):
        runner.load_exceptions(path)


def test_shipped_exceptions_load() -> None:
    """The exceptions file is well formed and names only client-specific streams."""
    assert all(runner.exceptable(name) for name in runner.load_exceptions())


# ---- check() on hand-made observations ---------------------------------------------------


class _Diag:
    def __init__(
        self, code: str, message: str, path: str | None = None, subject: str | None = None
    ):
        self.code, self.message, self.path, self.subject, self.index = (
            code,
            message,
            path,
            subject,
            0,
        )


def _obs(**kwargs: Any) -> Observation:
    base: dict[str, Any] = {
        "outcome": "completed",
        "delivered": [{"type": "RUN_STARTED"}, {"type": "RUN_FINISHED"}],
        "conversation": {
            "messages": [{"id": "m1", "role": "assistant", "content": "hi"}],
            "state": {},
        },
    }
    base.update(kwargs)
    return Observation(**base)


def test_check_outcome_and_event_types() -> None:
    """``outcome`` compares the consumer's verdict; ``eventTypes`` the exact delivered order."""
    assert (
        check({"outcome": "completed", "eventTypes": ["RUN_STARTED", "RUN_FINISHED"]}, _obs(), {})
        == []
    )
    keys = [f.key for f in check({"outcome": "failed", "eventTypes": ["RUN_STARTED"]}, _obs(), {})]
    assert keys == ["outcome", "eventTypes"]


def test_check_no_warnings_counts_request_diagnostics() -> None:
    """``noWarnings`` fails on a warning from the stream or from building the request."""
    assert check({"noWarnings": True}, _obs(), {}) == []
    assert check({"noWarnings": True}, _obs(request_diagnostics=[_Diag("x", "y")]), {})


def test_check_warnings_any_diagnostic_may_say_it() -> None:
    """Each expected warning needs one diagnostic saying it; an empty list asserts nothing."""
    obs = _obs(
        diagnostics=[_Diag("a", "one"), _Diag("unknown-event-dropped", "d", subject="FUTURE_EVENT")]
    )
    assert check({"warnings": ["FUTURE_EVENT"]}, obs, {}) == []
    assert check({"warnings": ["OTHER_EVENT"]}, obs, {})
    assert check({"warnings": []}, _obs(), {}) == []


def test_check_run_error() -> None:
    """``runError`` needs a failed run, and a string must be part of its RUN_ERROR message."""
    obs = _obs(runs=[("failed", "run-error-first: the agent was unreachable"), ("succeeded", None)])
    assert check({"runError": True}, obs, {}) == []
    assert check({"runError": "the agent was unreachable"}, obs, {}) == []
    assert check({"runError": "other"}, obs, {})
    assert check({"runError": True}, _obs(runs=[("succeeded", None)]), {})


def test_check_messages_state_and_count() -> None:
    """``messages``/``state`` are subset matches and ``messageCount`` is exact."""
    assert check({"messageCount": 1, "messages": [{"id": "m1"}], "state": {}}, _obs(), {}) == []
    assert [f.key for f in check({"messageCount": 2, "messages": []}, _obs(), {})] == [
        "messageCount",
        "messages",
    ]


def test_check_request_keys() -> None:
    """``request`` is a subset match on the sent input; ``requestAbsentPaths`` must be absent."""
    obs = _obs(request={"threadId": "t", "runId": "r", "messages": [], "protocolVersion": "1.0"})
    assert check({"request": {"messages": []}}, obs, {}) == []
    assert [f.key for f in check({"requestAbsentPaths": ["protocolVersion"]}, obs, {})] == [
        "requestAbsentPaths"
    ]


def test_check_unknown_expect_key_fails() -> None:
    """An expectation key the runner does not know is reported, never silently passed."""
    assert [f.key for f in check({"futureKey": 1}, _obs(), {})] == ["futureKey"]


def test_consistency_reports_a_feeding_that_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A different verdict when the same bytes are fed whole or in chunks is a failure."""
    case = StreamCase("s", Path("s.json"), {"stream": [], "expect": {}})
    corpus = Corpus("c", Path("."), "1.0")
    reference = _obs()

    def fake(case: StreamCase, version: str, feeding: str, **_: Any) -> Observation:
        return _obs(outcome="failed") if feeding == "random" else _obs()

    monkeypatch.setattr(runner, "observe", fake)
    failures = runner._consistency(case, corpus, reference)
    assert [f.key for f in failures] == ["chunking"]
    assert "random" in failures[0].reason and "outcome" in failures[0].reason


def test_stale_exception_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """An excepted stream that meets every expectation is stale, never counted as passed."""
    case = StreamCase(
        "era-x", Path("era-x.json"), {"stream": [], "expect": {"outcome": "completed"}}
    )
    corpus = Corpus("c", Path("."), "1.0")
    monkeypatch.setattr(runner, "observe", lambda *a, **k: _obs())
    result = runner.run_stream(case, corpus, {}, {"era-x": "reason"})
    assert result.status == "stale"
    summary = runner.CorpusResult(corpus, [result], [])
    assert summary.summary_line() == "c: 0 passed, 1 failed, 0 excepted"
    assert not summary.ok
