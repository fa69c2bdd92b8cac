"""``agentproto.cli._text``: previews are bounded and cost only what they show."""

from __future__ import annotations

import json
import time
from typing import Any

from agentproto.cli._text import clip, preview


def _nested(depth: int) -> Any:
    value: Any = []
    for level in range(depth - 1):
        value = {"k": value} if level % 2 else [value]
    return value


def test_short_values_show_whole_as_compact_json() -> None:
    """A value that fits is its compact JSON (a string as itself, newlines escaped)."""
    value = {"a": [1, 2.5, None, True], "b": "x"}
    assert preview(value) == json.dumps(value, separators=(",", ":"))
    assert preview("two\nlines") == "two\\nlines"
    assert preview(10**40) == str(10**40)


def test_long_values_are_cut_to_the_width() -> None:
    """Past the width the preview is cut and ends with an ellipsis."""
    for value in ("x" * 1000, ["y" * 10] * 100, {str(i): i for i in range(100)}):
        shown = preview(value, 40)
        assert len(shown) == 40 and shown.endswith("…")


def test_deep_values_do_not_recurse() -> None:
    """A value nested far past the recursion limit previews without an exception."""
    deep = _nested(5000)
    assert preview(deep, 30).startswith("[{")
    assert preview(_nested(3), 100) == '{"k":[[]]}'


def test_huge_values_cost_only_what_is_shown() -> None:
    """A 10 MB string or a list of a million items previews in far less than a full dump."""
    big = "z" * 10_000_000
    many = list(range(1_000_000))
    start = time.process_time()  # CPU time: other work on the machine does not count
    for _ in range(100):
        assert len(preview(big, 50)) == 50
        assert len(preview([big], 50)) == 50
        assert len(preview(many, 50)) == 50
    assert time.process_time() - start < 1.0  # one json.dumps of `many` alone takes ~0.1 s


def test_clip_takes_pieces_only_as_far_as_needed() -> None:
    """clip stops reading its pieces once the text goes past the width."""
    taken: list[int] = []

    def pieces() -> Any:
        for number in range(1000):
            taken.append(number)
            yield "abcd"

    assert clip(pieces(), 10, "...") == "abcdabc..."
    assert len(taken) == 3
