"""Patch limits and hostile patches: every refusal is an atomic PatchError naming its limit."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentproto._core.errors import PatchError
from agentproto._core.patch.apply import (
    DEFAULT_PATCH_LIMITS,
    PatchLimits,
    apply_patch,
    apply_patch_in_place,
)

Applier = Callable[..., Any]
APPLIERS = pytest.mark.parametrize(
    "apply", [apply_patch, apply_patch_in_place], ids=["copy-on-write", "in-place"]
)


def nested(depth: int) -> Any:
    """A value ``depth`` arrays deep (``[]`` is depth 1)."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def refused(apply: Applier, doc: Any, ops: list[Any], **kwargs: Any) -> PatchError:
    """Apply a patch that must fail, and check the document did not change."""
    before = copy.deepcopy(doc)
    with pytest.raises(PatchError) as info:
        apply(doc, ops, **kwargs)
    assert doc == before
    return info.value


@APPLIERS
def test_huge_array_index_is_out_of_range(apply: Applier) -> None:
    """An array index of thousands of digits is an ordinary out-of-range failure, after
    which the operations before it are undone."""
    doc = {"a": [1, 2], "b": 0}
    ops = [{"op": "replace", "path": "/b", "value": 1}, {"op": "add", "path": "/a/" + "9" * 5000}]
    ops[1]["value"] = 3
    err = refused(apply, doc, ops)
    assert err.index == 1 and err.limit is None
    assert "out of range" in str(err)
    for op in ("remove", "replace"):
        refused(apply, doc, [{"op": op, "path": "/a/" + "1" * 30, "value": 0}])


@APPLIERS
def test_operation_count_limit(apply: Applier) -> None:
    """A patch with more operations than max_operations is refused before any applies."""
    ops = [{"op": "add", "path": f"/k{i}", "value": i} for i in range(11)]
    err = refused(apply, {}, ops, limits=PatchLimits(max_operations=10))
    assert err.limit == "max_operations"
    assert "max_operations=10" in str(err) and "PatchLimits.max_operations" in str(err)
    assert apply({}, ops[:10], limits=PatchLimits(max_operations=10)) == {
        f"k{i}": i for i in range(10)
    }


@APPLIERS
def test_copy_bomb_is_refused(apply: Applier) -> None:
    """Copying an array into itself, doubling it 26 times, stops at max_added_nodes,
    quickly and leaving the document as it was."""
    doc = {"b": [0]}
    ops = [{"op": "copy", "from": "/b", "path": "/b/-"} for _ in range(26)]
    start = time.process_time()  # CPU time: other work on the machine does not count
    err = refused(apply, doc, ops)
    assert time.process_time() - start < 5
    assert err.limit == "max_added_nodes"
    assert "PatchLimits.max_added_nodes" in str(err)
    # the same growth under the limit applies
    small = apply({"b": [0]}, ops[:3])
    assert len(str(small)) > 0


@APPLIERS
def test_added_nodes_count_values_recursively(apply: Applier) -> None:
    """max_added_nodes counts every value an add brings, containers and scalars."""
    limits = PatchLimits(max_added_nodes=4)
    assert apply({}, [{"op": "add", "path": "/a", "value": [1, 2, 3]}], limits=limits) == {
        "a": [1, 2, 3]
    }
    err = refused(apply, {}, [{"op": "add", "path": "/a", "value": [1, 2, 3, 4]}], limits=limits)
    assert err.limit == "max_added_nodes" and err.index == 0
    two = [{"op": "add", "path": "/a", "value": [1, 2]}, {"op": "add", "path": "/b", "value": [3]}]
    err = refused(apply, {}, two, limits=limits)
    assert err.index == 1  # the budget is the patch's, not the operation's


@APPLIERS
def test_depth_limit_counts_the_target_location(apply: Applier) -> None:
    """The depth of the target location plus the depth of the value must stay within
    max_depth; at the limit the patch applies."""
    limits = PatchLimits(max_depth=5)
    doc = {"a": {"b": {}}}  # "/a/b" is a container at depth 3
    assert apply(doc, [{"op": "add", "path": "/a/b/c", "value": nested(2)}], limits=limits)
    err = refused(apply, doc, [{"op": "add", "path": "/a/b/c", "value": nested(3)}], limits=limits)
    assert err.limit == "max_depth" and "max_depth=5" in str(err)
    err = refused(apply, doc, [{"op": "replace", "path": "", "value": nested(6)}], limits=limits)
    assert err.limit == "max_depth"


@APPLIERS
def test_depth_limit_applies_to_copy_and_deeper_move(apply: Applier) -> None:
    """copy and move cannot grow the nesting past max_depth either."""
    limits = PatchLimits(max_depth=4)
    doc = {"x": nested(2), "y": {"z": {}}}
    for op in ("copy", "move"):
        err = refused(apply, doc, [{"op": op, "from": "/x", "path": "/y/z/w"}], limits=limits)
        assert err.limit == "max_depth"
    assert apply(doc, [{"op": "move", "from": "/y", "path": "/x/0"}], limits=limits)


@APPLIERS
def test_default_depth_is_the_json_parser_limit(apply: Applier) -> None:
    """By default a patch may not nest the document deeper than the JSON parser reads."""
    limit = DEFAULT_PATCH_LIMITS.max_depth
    ok = apply({}, [{"op": "add", "path": "/a", "value": nested(limit - 1)}])
    assert isinstance(ok["a"], list)
    err = refused(apply, {}, [{"op": "add", "path": "/a", "value": nested(limit)}])
    assert err.limit == "max_depth"


@APPLIERS
def test_deep_values_compare_and_copy_without_recursion(apply: Applier) -> None:
    """Values far deeper than the call stack allows are tested and copied iteratively."""
    deep = 50_000
    limits = PatchLimits(max_depth=deep + 10, max_added_nodes=deep + 10)
    doc = {"v": nested(deep)}
    assert (
        apply(doc, [{"op": "test", "path": "/v", "value": nested(deep)}], limits=limits) is not None
    )
    value = doc["v"]
    with pytest.raises(PatchError):
        apply(doc, [{"op": "test", "path": "/v", "value": nested(deep - 1)}], limits=limits)
    assert doc["v"] is value
    out = apply({}, [{"op": "add", "path": "/w", "value": nested(deep)}], limits=limits)
    assert isinstance(out["w"], list)


def test_in_place_rolls_back_on_any_exception() -> None:
    """Whatever stops an in-place patch (here memory running out while the second
    operation's value is copied), the operations before it are undone."""

    class Exhausting(dict[str, Any]):
        def items(self) -> Any:
            raise MemoryError

    doc = {"a": 1, "b": [1]}
    ops = [
        {"op": "replace", "path": "/a", "value": 2},
        {"op": "add", "path": "/b/-", "value": Exhausting(c=3)},
    ]
    with pytest.raises(MemoryError):
        apply_patch_in_place(doc, ops)
    assert doc == {"a": 1, "b": [1]}
