"""The prefilter of schema patterns: never accepts what the pattern rejects."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto._core.wire.prefilter import prefilter
from agentproto.agui import schema

JSON_POINTER = "^(/([^/~]|~[01])*)*$"

# --- random patterns over a small alphabet -------------------------------------------

_atoms = st.sampled_from(["a", "b", "/", "~", "0", ".", "[ab]", "[^a]", "[~0]", r"\d", "(?:ab)"])
_quantifiers = st.sampled_from(["", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,2}", "{0,}"])


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    quantified = st.tuples(inner, _quantifiers).map(lambda t: f"({t[0]}){t[1]}")
    alternated = st.tuples(inner, inner).map(lambda t: f"{t[0]}|{t[1]}")
    sequence = st.lists(inner, min_size=2, max_size=3).map("".join)
    return quantified | alternated | sequence


_patterns = st.recursive(st.tuples(_atoms, _quantifiers).map("".join), _extend, max_leaves=8)
_anchored = st.tuples(st.sampled_from(["", "^"]), _patterns, st.sampled_from(["", "$"])).map(
    "".join
)
_subjects = st.text(alphabet="ab/~01x", max_size=12)


@settings(max_examples=400)
@given(_anchored, st.lists(_subjects, min_size=1, max_size=20))
def test_the_prefilter_accepts_nothing_the_pattern_rejects(
    pattern: str, subjects: list[str]
) -> None:
    """A string the prefilter matches, the pattern matches too (soundness)."""
    fast = re.compile(prefilter(pattern))
    full = re.compile(pattern)
    for subject in subjects:
        if fast.search(subject) is not None:
            assert full.search(subject) is not None, (pattern, prefilter(pattern), subject)


_one_characters = st.sampled_from(["a", "/", "~", ".", "[ab]", "[^a]", "[^/~]", r"\d", r"\."])


@settings(max_examples=300)
@given(
    _one_characters,
    st.lists(_patterns, min_size=1, max_size=2),
    st.booleans(),
    st.lists(_subjects, min_size=1, max_size=20),
)
def test_an_unrolled_alternation_accepts_nothing_the_pattern_rejects(
    single: str, others: list[str], first: bool, subjects: list[str]
) -> None:
    """``^(X|B)*$`` with ``X`` one character: the unrolled prefilter stays sound."""
    branches = [single, *others] if first else [*others, single]
    pattern = f"^({'|'.join(branches)})*$"
    fast = re.compile(prefilter(pattern))
    full = re.compile(pattern)
    for subject in subjects:
        if fast.search(subject) is not None:
            assert full.search(subject) is not None, (pattern, prefilter(pattern), subject)


# --- the schema's patterns ---------------------------------------------------------


def test_json_pointer_pattern_becomes_non_capturing_possessive_and_unrolled() -> None:
    """The patch operations' path pattern: groups non-capturing, quantifiers possessive,
    and the runs of plain characters of a segment taken in one loop."""
    assert prefilter(JSON_POINTER) == "^(?:/(?:[^/~]*+(?:(?:~[01])[^/~]*+)*+))*+$"


@pytest.mark.parametrize(
    ("pattern", "unrolled"),
    [
        ("(a|b)*", "(?:a*+(?:(?:b)a*+)*+)"),
        ("(ab|c|d)*", "(?:c*+(?:(?:ab|d)c*+)*+)"),  # the first one-character alternative
        (r"(x|\d)*", r"(?:x*+(?:(?:\d)x*+)*+)"),
        ("([^|]|a)*", "(?:[^|]*+(?:(?:a)[^|]*+)*+)"),  # a | in a class separates nothing
        ("((a|b)*c|d)*", "(?:d*+(?:(?:(?:a*+(?:(?:b)a*+)*+)c)d*+)*+)"),  # inner ones first
    ],
)
def test_a_repeated_alternation_with_a_one_character_branch_is_unrolled(
    pattern: str, unrolled: str
) -> None:
    """``(X|B)*`` becomes ``X*(BX*)*``, the same strings, all possessive."""
    assert prefilter(pattern) == unrolled


@pytest.mark.parametrize(
    ("pattern", "kept"),
    [
        ("(ab|cd)*", "(?:ab|cd)*+"),  # no one-character alternative
        ("(a|b)+", "(?:a|b)++"),  # at least one: not the same strings unrolled
        ("(a|b){2}", "(?:a|b){2}+"),
        ("(?P<n>a|b)*", "(?P<n>a|b)*+"),  # a named group is left as it is
        (r"(\b|ab)*", r"(?:\b|ab)*+"),  # \b matches no character
        ("((a|b)*|cd)*", "(?:(?:a*+(?:(?:b)a*+)*+)|cd)*+"),  # the inner one only
        ("(?#a|(b)(a|b)", "(?#a|(b)(?:a|b)"),  # a comment is text
    ],
)
def test_other_groups_are_not_unrolled(pattern: str, kept: str) -> None:
    """Only a ``*`` repeat of a plain group with a one-character branch is unrolled."""
    assert prefilter(pattern) == kept


@given(st.lists(st.text(alphabet="ab/~01 é\n", max_size=6), max_size=4))
def test_json_pointer_prefilter_decides_exactly_as_the_pattern(tokens: list[str]) -> None:
    """Valid and invalid pointers alike get the pattern's own answer (no slow fallback)."""
    fast = re.compile(prefilter(JSON_POINTER))
    full = re.compile(JSON_POINTER)
    for subject in ("".join(tokens), "/" + "/".join(tokens)):
        assert (fast.search(subject) is None) == (full.search(subject) is None), subject


def test_every_agui_schema_pattern_has_a_compiling_prefilter() -> None:
    """Each pattern the generated AG-UI classes carry rewrites into a valid expression."""
    import attrs

    patterns = {
        field.metadata["pattern"]
        for cls in vars(schema).values()
        if attrs.has(cls)
        for field in attrs.fields(cls)
        if "pattern" in field.metadata
    }
    assert patterns, "the schema no longer has patterns: this test checks nothing"
    for pattern in patterns:
        re.compile(prefilter(pattern))


# --- what is left as it is ---------------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",  # a backreference numbers the groups
        "(?P<n>a)(?P=n)",
        "(?=a)a*",  # lookarounds
        "(?!a)b*",
        "(?<=a)b*",
        "(?<!a)b*",
        "(a)?(?(1)b|c)",  # a conditional
        "(?x) a * ",  # verbose
        "a*?b+?",  # lazy only: nothing to change
        "a*+b?+",  # possessive already
        "[",  # not a pattern at all
    ],
)
def test_unsafe_or_unchanged_patterns_are_returned_as_they_are(pattern: str) -> None:
    """Where the rewrite could change what matches (or has nothing to do), no rewrite."""
    assert prefilter(pattern) == pattern


def test_lazy_and_possessive_quantifiers_stay_and_the_greedy_ones_beside_them_change() -> None:
    """A lazy or possessive quantifier is one token: kept, while greedy ones still change."""
    assert prefilter("a*?b*") == "a*?b*+"
    assert prefilter("a++b{2,}?c?") == "a++b{2,}?c?+"


def test_a_comment_is_copied_as_it_is() -> None:
    """Quantifier characters inside (?#...) are comment text, not quantifiers."""
    assert prefilter("(?#x*)a*") == "(?#x*)a*+"


def test_literal_braces_and_classes_are_not_quantifiers() -> None:
    """A brace that is no repeat count and quantifier characters in a class stay literal."""
    assert prefilter("a{x}[*+?(]") == "a{x}[*+?(]"
    assert prefilter(r"\(x\)*") == r"\(x\)*+"
    assert prefilter("[]a]{2,3}") == "[]a]{2,3}+"


@pytest.mark.parametrize(
    "pattern",
    ["([)(]|a)*", "((?#)|a)*", "a(?#(b)(c|d)*", "(?i)(a|B)*", r"(\)|\()*", "([]a]|b)*", "(|)*"],
)
def test_odd_patterns_are_rewritten_soundly_or_left(pattern: str) -> None:
    """Patterns that are easy to misread: no exception, and nothing accepted more."""
    fast = re.compile(prefilter(pattern))
    full = re.compile(pattern)
    for subject in ["", "a", "B", "()", ")(", "]a", "[:", "cd", "ab", "bcd", "d)"]:
        if fast.fullmatch(subject) is not None:
            assert full.fullmatch(subject) is not None, (pattern, subject)
