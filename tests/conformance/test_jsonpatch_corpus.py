"""The RFC 6902 corpora of json-patch/json-patch-tests, read from the spec mirror.

The files are never copied into the repository: they are read at test time from the spec
mirror (``AGENTPROTO_SPEC_MIRROR``, else ``../shared/spec`` next to the repository), else
from the download cache where they are fetched by their pins (:mod:`tests.needs`); without
them the tests skip, saying so. Each case has ``doc`` and ``patch`` and either
``expected`` (the result), ``error`` (the patch must fail with PatchError) or neither (the
patch must apply). Cases marked ``disabled`` are skipped, never counted as passed.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from agentproto._core.errors import PatchError
from agentproto._core.patch.apply import apply_patch, apply_patch_in_place
from tests.needs import find_spec

CORPUS_DIR = "jsonpatch-tests"
CORPUS_FILES = ("tests.json", "spec_tests.json")


MIRROR: Path | None = find_spec(CORPUS_DIR)
"""The folder holding the corpus (the spec mirror or the download cache), if it can be had."""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48].rstrip("-")


def _load_cases() -> list[tuple[str, dict[str, Any]]]:
    """Every case of the corpus files as ``(id, case)``, in file order."""
    if MIRROR is None:
        return []
    cases = []
    for name in CORPUS_FILES:
        with (MIRROR / CORPUS_DIR / name).open(encoding="utf-8") as handle:
            entries = json.load(handle)
        for number, case in enumerate(entries):
            slug = _slug(str(case.get("comment", "")))
            cases.append((f"{name}#{number}" + (f"-{slug}" if slug else ""), case))
    return cases


CASES = _load_cases()


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers compare by value (1 == 1.0), booleans are not numbers."""
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)):
        return isinstance(b, (int, float)) and not isinstance(b, bool) and a == b
    if isinstance(b, (dict, list, int, float)):
        return False
    return bool(a == b)


def refusal_verdict(case: dict[str, Any], error: PatchError) -> tuple[str, str]:
    """A case whose patch was refused (the document checked already)."""
    if "error" in case:
        return "passed", ""
    return "failed", f"unexpected PatchError: {error}"


def result_verdict(case: dict[str, Any], result: Any) -> tuple[str, str]:
    """A case whose patch applied, giving ``result`` (the document checked already)."""
    if "error" in case:
        return "failed", f"no error raised (expected: {case['error']})"
    if "expected" in case and not json_equal(result, case["expected"]):
        return "failed", f"result {result!r} != expected {case['expected']!r}"
    return "passed", ""


def run_case(case: dict[str, Any]) -> tuple[str, str]:
    """Run one case; return ``("passed" | "failed" | "skipped", reason)``."""
    if case.get("disabled"):
        return "skipped", "disabled in the corpus"
    doc = case["doc"]
    before = copy.deepcopy(doc)
    try:
        result = apply_patch(doc, case["patch"])
    except PatchError as error:
        if not json_equal(doc, before):
            return "failed", "the input document was mutated"
        return refusal_verdict(case, error)
    except Exception as error:
        return "failed", f"{type(error).__name__} instead of PatchError: {error}"
    if not json_equal(doc, before):
        return "failed", "the input document was mutated"
    return result_verdict(case, result)


def run_case_in_place(case: dict[str, Any]) -> tuple[str, str]:
    """Run one case through the in-place applier: a failure must roll back completely."""
    if case.get("disabled"):
        return "skipped", "disabled in the corpus"
    doc = copy.deepcopy(case["doc"])
    before = copy.deepcopy(doc)
    try:
        result = apply_patch_in_place(doc, case["patch"])
    except PatchError as error:
        if not json_equal(doc, before):
            return "failed", "a failed patch left the document changed"
        return refusal_verdict(case, error)
    except Exception as error:
        return "failed", f"{type(error).__name__} instead of PatchError: {error}"
    return result_verdict(case, result)


needs_corpus = pytest.mark.spec(CORPUS_DIR)
every_case = pytest.mark.parametrize(
    "case", [case for _, case in CASES] or [None], ids=[i for i, _ in CASES] or ["no-corpus"]
)


def judge(result: tuple[str, str]) -> None:
    """A runner's (outcome, reason): skipped stays skipped, anything but passed fails."""
    outcome, reason = result
    if outcome == "skipped":
        pytest.skip(reason)
    assert outcome == "passed", reason


@needs_corpus
@every_case
def test_jsonpatch_case_in_place(case: dict[str, Any]) -> None:
    """Each corpus case through apply_patch_in_place, failed patches fully rolled back."""
    judge(run_case_in_place(case))


@needs_corpus
@every_case
def test_jsonpatch_case(case: dict[str, Any]) -> None:
    """Each corpus case: the expected result, or PatchError for error cases; disabled ones skip."""
    judge(run_case(case))


@needs_corpus
@pytest.mark.parametrize(
    ("label", "runner"),
    [("jsonpatch-tests", run_case), ("jsonpatch-tests in place", run_case_in_place)],
)
def test_jsonpatch_corpus_summary(label: str, runner: Any) -> None:
    """Every enabled case passes, and every case is counted exactly once."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    for case_id, case in CASES:
        outcome, reason = runner(case)
        counts[outcome] += 1
        if outcome == "failed":
            failures.append(f"{case_id}: {reason}")
    line = (
        f"{label}: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped"
    )
    print(line)
    sys.stderr.write(line + "\n")
    total = len(CASES)
    disabled = sum(1 for _, case in CASES if case.get("disabled"))
    assert total > 0
    assert counts["failed"] == 0, "\n".join(failures)
    assert counts["passed"] + counts["failed"] + counts["skipped"] == total
    assert counts["skipped"] == disabled
    assert counts["passed"] == total - disabled
