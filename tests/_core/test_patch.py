"""Tests of agentproto._core.patch.apply: atomic, copy-on-write RFC 6902 JSON Patch."""

from __future__ import annotations

import copy
import types
from collections.abc import Iterator
from typing import Any

import attrs
import jsonpatch
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentproto._core.errors import AgentProtoError, PatchError
from agentproto._core.patch import apply as patch_module
from agentproto._core.patch.apply import apply_patch, apply_patch_in_place, make_patch
from agentproto._core.unset import UNSET
from tests.jsonsame import same_json

# --- helpers ------------------------------------------------------------------


def containers(value: Any) -> Iterator[Any]:
    """Every dict/list in ``value``, depth first."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            yield node
            stack.extend(node)


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def pointer(tokens: tuple[str, ...]) -> str:
    return "".join("/" + escape(t) for t in tokens)


def locations(doc: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every existing location of ``doc`` (root included) with its value."""
    yield prefix, doc
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from locations(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from locations(value, (*prefix, str(i)))


# --- typed operations, shaped like the SDK's generated classes -------------------


@attrs.define(kw_only=True)
class AddOperation:
    op: str = "add"
    path: str
    value: Any


@attrs.define(kw_only=True)
class RemoveOperation:
    op: str = "remove"
    path: str


@attrs.define(kw_only=True)
class ReplaceOperation:
    op: str = "replace"
    path: str
    value: Any


@attrs.define(kw_only=True)
class MoveOperation:
    op: str = "move"
    from_: str
    path: str


@attrs.define(kw_only=True)
class CopyOperation:
    op: str = "copy"
    from_: str
    path: str


@attrs.define(kw_only=True)
class TestOperation:
    __test__ = False  # not a pytest class
    op: str = "test"
    path: str
    value: Any = UNSET


class PlainOp:
    """A non-attrs object with the same attributes."""

    def __init__(self, op: str, path: str, **members: Any) -> None:
        self.op = op
        self.path = path
        for name, value in members.items():
            setattr(self, name, value)


# --- public surface -------------------------------------------------------------


def test_public_names() -> None:
    """The module exports the two appliers, make_patch and the patch limits."""
    assert sorted(patch_module.__all__) == [
        "DEFAULT_PATCH_LIMITS",
        "PatchLimits",
        "apply_patch",
        "apply_patch_in_place",
        "make_patch",
    ]


def test_patch_error_hierarchy() -> None:
    """PatchError is both an AgentProtoError and a ValueError."""
    with pytest.raises(PatchError) as info:
        apply_patch({}, [{"op": "remove", "path": "/x"}])
    assert isinstance(info.value, AgentProtoError)
    assert isinstance(info.value, ValueError)


# --- add ------------------------------------------------------------------------


def test_add_new_object_member() -> None:
    """add creates a missing object member."""
    assert apply_patch({"a": 1}, [{"op": "add", "path": "/b", "value": 2}]) == {"a": 1, "b": 2}


def test_add_replaces_existing_member() -> None:
    """add on an existing object member replaces its value."""
    assert apply_patch({"a": 1}, [{"op": "add", "path": "/a", "value": [2]}]) == {"a": [2]}


def test_add_inserts_into_array() -> None:
    """add at an array index inserts before the element there."""
    doc = {"a": [1, 2, 3]}
    assert apply_patch(doc, [{"op": "add", "path": "/a/1", "value": 9}]) == {"a": [1, 9, 2, 3]}


def test_add_dash_appends() -> None:
    """add at "-" appends to the array."""
    assert apply_patch([1, 2], [{"op": "add", "path": "/-", "value": 3}]) == [1, 2, 3]


def test_add_at_length_appends() -> None:
    """add at index == length appends."""
    assert apply_patch([1, 2], [{"op": "add", "path": "/2", "value": 3}]) == [1, 2, 3]


def test_add_past_length_fails() -> None:
    """add at an index greater than the length fails."""
    with pytest.raises(PatchError):
        apply_patch([1, 2], [{"op": "add", "path": "/3", "value": 3}])


@pytest.mark.parametrize("token", ["01", "00", "-1", "1e0", "+1", " 1", "1 ", "\u0661", "x"])
def test_bad_array_index_fails(token: str) -> None:
    """An array index must be "0" or a decimal without leading zeros."""
    with pytest.raises(PatchError):
        apply_patch([1, 2], [{"op": "add", "path": "/" + token, "value": 3}])
    with pytest.raises(PatchError):
        apply_patch([1, 2], [{"op": "test", "path": "/" + token, "value": 2}])


def test_add_root_replaces_document() -> None:
    """add at the root pointer "" replaces the whole document."""
    assert apply_patch({"a": 1}, [{"op": "add", "path": "", "value": [1]}]) == [1]


def test_add_does_not_create_missing_parents() -> None:
    """add fails when the parent of the target does not exist."""
    with pytest.raises(PatchError):
        apply_patch({}, [{"op": "add", "path": "/a/b", "value": 1}])


def test_add_below_scalar_fails() -> None:
    """add fails when the parent of the target is a scalar."""
    with pytest.raises(PatchError):
        apply_patch({"a": 1}, [{"op": "add", "path": "/a/b", "value": 1}])
    with pytest.raises(PatchError):
        apply_patch("doc", [{"op": "add", "path": "/a", "value": 1}])


def test_add_member_to_array_fails() -> None:
    """A member name is not an array index."""
    with pytest.raises(PatchError):
        apply_patch([1], [{"op": "add", "path": "/bar", "value": 1}])


def test_numeric_token_is_a_member_name_on_objects() -> None:
    """On an object, "0" and "01" are plain member names."""
    result = apply_patch({}, [{"op": "add", "path": "/01", "value": 1}])
    assert result == {"01": 1}


# --- remove ---------------------------------------------------------------------


def test_remove_member() -> None:
    """remove deletes an object member."""
    assert apply_patch({"a": 1, "b": 2}, [{"op": "remove", "path": "/a"}]) == {"b": 2}


def test_remove_array_element_shifts() -> None:
    """remove deletes an array element and shifts the following ones."""
    assert apply_patch([1, 2, 3], [{"op": "remove", "path": "/0"}]) == [2, 3]


@pytest.mark.parametrize("path", ["/missing", "/a/missing", "/list/3", "/list/-", "/a/x/y"])
def test_remove_missing_target_fails(path: str) -> None:
    """remove fails when the target does not exist."""
    with pytest.raises(PatchError):
        apply_patch({"a": {"x": 1}, "list": [1, 2, 3]}, [{"op": "remove", "path": path}])


def test_remove_root_fails() -> None:
    """Removing the whole document is refused: a document cannot be absent."""
    with pytest.raises(PatchError):
        apply_patch({"a": 1}, [{"op": "remove", "path": ""}])


# --- replace --------------------------------------------------------------------


def test_replace_member_and_element() -> None:
    """replace swaps the value of an existing member or element."""
    doc = {"a": 1, "b": [1, 2]}
    ops = [
        {"op": "replace", "path": "/a", "value": "x"},
        {"op": "replace", "path": "/b/1", "value": {"y": None}},
    ]
    assert apply_patch(doc, ops) == {"a": "x", "b": [1, {"y": None}]}


@pytest.mark.parametrize("path", ["/missing", "/b/2", "/b/-", "/missing/x"])
def test_replace_missing_target_fails(path: str) -> None:
    """replace fails when the target does not exist."""
    with pytest.raises(PatchError):
        apply_patch({"a": 1, "b": [1, 2]}, [{"op": "replace", "path": path, "value": 0}])


def test_replace_root() -> None:
    """replace at "" replaces the whole document, even a scalar one."""
    assert apply_patch({"a": 1}, [{"op": "replace", "path": "", "value": 5}]) == 5
    assert apply_patch("s", [{"op": "replace", "path": "", "value": {"b": 2}}]) == {"b": 2}


# --- move -----------------------------------------------------------------------


def test_move_member() -> None:
    """move removes the value at from and adds it at path."""
    doc = {"a": {"b": 1}, "c": {}}
    result = apply_patch(doc, [{"op": "move", "from": "/a/b", "path": "/c/d"}])
    assert result == {"a": {}, "c": {"d": 1}}


def test_move_array_element_uses_index_after_removal() -> None:
    """move indexes the target in the array as it is after the removal."""
    doc = {"foo": ["all", "grass", "cows", "eat"]}
    result = apply_patch(doc, [{"op": "move", "from": "/foo/1", "path": "/foo/3"}])
    assert result == {"foo": ["all", "cows", "eat", "grass"]}


def test_move_to_same_location_is_a_noop() -> None:
    """move with from equal to path changes nothing."""
    doc = {"a": {"b": 1}}
    result = apply_patch(doc, [{"op": "move", "from": "/a", "path": "/a"}])
    assert result == doc
    assert result["a"] is doc["a"]


def test_move_to_same_location_needs_existing_from() -> None:
    """move with from equal to path still fails when from does not exist."""
    with pytest.raises(PatchError):
        apply_patch({}, [{"op": "move", "from": "/a", "path": "/a"}])


@pytest.mark.parametrize(("from_", "path"), [("/a", "/a/b"), ("/a", "/a/b/c"), ("", "/x")])
def test_move_into_own_child_fails(from_: str, path: str) -> None:
    """move fails when path is a proper child of from."""
    with pytest.raises(PatchError) as info:
        apply_patch({"a": {"b": {}}}, [{"op": "move", "from": from_, "path": path}])
    assert info.value.path == path


def test_move_to_prefix_sibling_is_allowed() -> None:
    """A path that merely starts with the same characters as from is not a child."""
    result = apply_patch({"a": 1}, [{"op": "move", "from": "/a", "path": "/ab"}])
    assert result == {"ab": 1}


def test_move_missing_from_fails_with_from_path() -> None:
    """move fails when from does not exist, and the error names from."""
    with pytest.raises(PatchError) as info:
        apply_patch({"a": 1}, [{"op": "move", "from": "/nope", "path": "/b"}])
    assert info.value.path == "/nope"
    assert info.value.index == 0


def test_move_to_root() -> None:
    """move to "" replaces the document with the moved value."""
    assert apply_patch({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": ""}]) == {"b": 1}


# --- copy -----------------------------------------------------------------------


def test_copy_value() -> None:
    """copy adds the value at from to path and keeps the source."""
    result = apply_patch({"a": [1]}, [{"op": "copy", "from": "/a", "path": "/b"}])
    assert result == {"a": [1], "b": [1]}


def test_copy_missing_from_fails() -> None:
    """copy fails when from does not exist."""
    with pytest.raises(PatchError) as info:
        apply_patch({"a": 1}, [{"op": "copy", "from": "/x", "path": "/b"}])
    assert info.value.path == "/x"


def test_copy_then_change_destination_leaves_source() -> None:
    """A write below a copy's destination does not show at its source."""
    doc = {"a": {"b": [1]}}
    ops = [
        {"op": "copy", "from": "/a", "path": "/c"},
        {"op": "add", "path": "/c/b/-", "value": 2},
    ]
    assert apply_patch(doc, ops) == {"a": {"b": [1]}, "c": {"b": [1, 2]}}


def test_copy_then_change_source_leaves_destination() -> None:
    """A write below a copy's source does not show at its destination."""
    doc = {"a": {"b": [1]}}
    ops = [
        {"op": "copy", "from": "/a", "path": "/c"},
        {"op": "add", "path": "/a/b/-", "value": 2},
    ]
    assert apply_patch(doc, ops) == {"a": {"b": [1, 2]}, "c": {"b": [1]}}


def test_copy_of_container_already_copied_in_this_patch_does_not_alias() -> None:
    """Copying a container this patch already copied, then writing, keeps both sides apart."""
    doc = {"a": {"b": {"c": 1}}}
    ops = [
        {"op": "add", "path": "/a/b/d", "value": 2},  # /a and /a/b are now copies
        {"op": "copy", "from": "/a", "path": "/z"},
        {"op": "replace", "path": "/z/b/c", "value": 10},
        {"op": "replace", "path": "/a/b/d", "value": 20},
    ]
    result = apply_patch(doc, ops)
    assert result == {"a": {"b": {"c": 1, "d": 20}}, "z": {"b": {"c": 10, "d": 2}}}
    assert doc == {"a": {"b": {"c": 1}}}


def test_copy_into_own_child_is_allowed() -> None:
    """copy, unlike move, may put a value below its own source."""
    doc = {"a": {"b": 1}}
    result = apply_patch(doc, [{"op": "copy", "from": "/a", "path": "/a/c"}])
    assert result == {"a": {"b": 1, "c": {"b": 1}}}
    assert doc == {"a": {"b": 1}}


def test_copy_root_into_itself() -> None:
    """copy from "" stores a snapshot of the document, not a cycle."""
    result = apply_patch({"a": 1}, [{"op": "copy", "from": "", "path": "/self"}])
    assert result == {"a": 1, "self": {"a": 1}}


# --- test -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "value"),
    [
        (1, 1.0),
        (1.0, 1),
        ({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]}),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        (None, None),
        ("x", "x"),
        (True, True),
        (10**20, 10**20),
    ],
)
def test_test_passes_on_json_equal_values(doc: Any, value: Any) -> None:
    """test passes for JSON-equal values: numbers by value, objects regardless of key order."""
    assert apply_patch({"v": doc}, [{"op": "test", "path": "/v", "value": value}]) == {"v": doc}


@pytest.mark.parametrize(
    ("doc", "value"),
    [
        (True, 1),
        (1, True),
        (False, 0),
        (0, False),
        (1.0, True),
        ([True], [1]),
        ({"a": False}, {"a": 0}),
        ([1, 2], [2, 1]),
        ({"a": 1}, {"a": 1, "b": 2}),
        (10, "10"),
        (None, 0),
        (None, False),
        ("", None),
        ([], {}),
        ({}, []),
    ],
)
def test_test_fails_on_different_values(doc: Any, value: Any) -> None:
    """test fails when values differ; booleans are not numbers and array order matters."""
    with pytest.raises(PatchError):
        apply_patch({"v": doc}, [{"op": "test", "path": "/v", "value": value}])


def test_test_whole_document() -> None:
    """test at "" compares the whole document."""
    doc = {"foo": 1}
    assert apply_patch(doc, [{"op": "test", "path": "", "value": {"foo": 1}}]) is doc


def test_test_missing_location_fails() -> None:
    """test fails when the location does not exist, even for the value null."""
    with pytest.raises(PatchError):
        apply_patch({}, [{"op": "test", "path": "/a", "value": None}])


# --- pointers -------------------------------------------------------------------


def test_pointer_unescaping() -> None:
    """~1 unescapes to "/" and ~0 to "~", with ~01 meaning "~1"."""
    doc = {"a/b": 1, "m~n": 2, "~1": 3}
    ops = [
        {"op": "test", "path": "/a~1b", "value": 1},
        {"op": "test", "path": "/m~0n", "value": 2},
        {"op": "test", "path": "/~01", "value": 3},
        {"op": "add", "path": "/~0~1", "value": 4},
    ]
    assert apply_patch(doc, ops) == {"a/b": 1, "m~n": 2, "~1": 3, "~/": 4}


@pytest.mark.parametrize("path", ["a", "/a~2", "/a~", "/~", "/~a", "#/a"])
def test_invalid_pointer_fails(path: str) -> None:
    """A pointer must start with "/" and use only the escapes ~0 and ~1."""
    with pytest.raises(PatchError) as info:
        apply_patch({"a": 1}, [{"op": "add", "path": path, "value": 1}])
    assert info.value.path == path


def test_empty_tokens_are_member_names() -> None:
    """ "/" names the member "" and "/a/" the member "" of /a."""
    result = apply_patch({"a": {}}, [{"op": "add", "path": "/", "value": 1}])
    assert result == {"a": {}, "": 1}
    result = apply_patch({"a": {}}, [{"op": "add", "path": "/a/", "value": 1}])
    assert result == {"a": {"": 1}}


# --- malformed operations -------------------------------------------------------


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "spam", "path": "/a"},
        {"path": "/a", "value": 1},
        {"op": "add", "value": 1},
        {"op": "add", "path": None, "value": 1},
        {"op": "add", "path": 1, "value": 1},
        {"op": "add", "path": "/a"},
        {"op": "replace", "path": "/a"},
        {"op": "test", "path": "/a"},
        {"op": "copy", "path": "/a"},
        {"op": "move", "path": "/a"},
        {"op": "move", "path": "/a", "from": None},
        {"op": "Add", "path": "/a", "value": 1},
    ],
)
def test_malformed_operation_fails(operation: dict[str, Any]) -> None:
    """Unknown ops, missing or non-string path/from and a missing value are errors."""
    with pytest.raises(PatchError) as info:
        apply_patch({"a": 1}, [operation])
    assert info.value.index == 0
    assert isinstance(info.value.path, str)


def test_extra_members_are_ignored() -> None:
    """Members an operation does not use are ignored."""
    ops = [
        {"op": "remove", "path": "/a", "value": "ignored", "from": "/nope", "spurious": 1},
        {"op": "add", "path": "/b", "value": 1, "from": 7},
    ]
    assert apply_patch({"a": 1}, ops) == {"b": 1}


def test_null_value_is_a_value() -> None:
    """A value of null is present, unlike a missing value."""
    assert apply_patch({}, [{"op": "add", "path": "/a", "value": None}]) == {"a": None}


def test_non_dict_mapping_operations() -> None:
    """Any mapping with wire keys is accepted as an operation."""
    op = types.MappingProxyType({"op": "add", "path": "/a", "value": 1})
    assert apply_patch({}, [op]) == {"a": 1}


def test_empty_patch_returns_input() -> None:
    """An empty patch returns the input document itself."""
    doc = {"a": [1]}
    assert apply_patch(doc, []) is doc
    assert apply_patch(doc, ()) is doc


# --- typed operations -----------------------------------------------------------


def test_typed_operations() -> None:
    """Objects with op/path/value/from_ attributes are applied like wire operations."""
    doc = {"a": {"b": 1}, "list": [1, 2]}
    ops = [
        AddOperation(path="/a/c", value=2),
        ReplaceOperation(path="/a/b", value=10),
        MoveOperation(from_="/a/c", path="/moved"),
        CopyOperation(from_="/list", path="/copied"),
        RemoveOperation(path="/list/0"),
        TestOperation(path="/copied", value=[1.0, 2]),
    ]
    result = apply_patch(doc, ops)
    assert result == {"a": {"b": 10}, "list": [2], "moved": 2, "copied": [1, 2]}


def test_typed_and_wire_operations_mix() -> None:
    """One patch may mix typed and wire operations."""
    ops = [AddOperation(path="/a", value=1), {"op": "test", "path": "/a", "value": 1}]
    assert apply_patch({}, ops) == {"a": 1}


def test_plain_object_operations() -> None:
    """Any object with the right attributes works, not only attrs classes."""
    ops = [PlainOp("add", "/a", value=[]), PlainOp("copy", "/b", from_="/a")]
    assert apply_patch({}, ops) == {"a": [], "b": []}


def test_typed_operation_with_unset_value_fails() -> None:
    """A typed operation whose value is UNSET lacks its value."""
    with pytest.raises(PatchError) as info:
        apply_patch({"a": 1}, [TestOperation(path="/a")])
    assert info.value.index == 0


def test_typed_operation_missing_from_fails() -> None:
    """A typed move without a from_ attribute fails."""
    with pytest.raises(PatchError):
        apply_patch({"a": 1}, [PlainOp("move", "/b")])


# --- atomicity, immutability, sharing ---------------------------------------------


def test_failing_second_operation_leaves_input_unchanged() -> None:
    """A failing 2nd operation leaves the input equal to its earlier deep copy and names index 1."""
    doc = {"a": {"b": [1, 2]}, "c": {"d": 1}}
    before = copy.deepcopy(doc)
    ops = [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "remove", "path": "/c/missing"},
    ]
    with pytest.raises(PatchError) as info:
        apply_patch(doc, ops)
    assert info.value.index == 1
    assert info.value.path == "/c/missing"
    assert same_json(doc, before)


def test_error_carries_index_and_path() -> None:
    """PatchError names the failing operation's index and path."""
    ops = [
        {"op": "add", "path": "/x", "value": 1},
        {"op": "test", "path": "/x", "value": 1},
        {"op": "test", "path": "/x", "value": True},
    ]
    with pytest.raises(PatchError) as info:
        apply_patch({}, ops)
    assert (info.value.index, info.value.path) == (2, "/x")
    assert "operation 2" in str(info.value)


def test_input_is_never_mutated() -> None:
    """A successful patch leaves the input document and the operation values untouched."""
    doc = {"a": {"b": [1, {"c": 2}]}, "d": [[]]}
    value = {"v": [1]}
    ops = [
        {"op": "add", "path": "/a/b/1/e", "value": 3},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "add", "path": "/d/0/-", "value": 1},
        {"op": "add", "path": "/new", "value": value},
        {"op": "add", "path": "/new/v/-", "value": 2},
        {"op": "move", "from": "/d/0", "path": "/a/moved"},
    ]
    before = copy.deepcopy(doc)
    value_before = copy.deepcopy(value)
    result = apply_patch(doc, ops)
    assert same_json(doc, before)
    assert same_json(value, value_before)
    assert result == {
        "a": {"b": [{"c": 2, "e": 3}], "moved": [1]},
        "d": [],
        "new": {"v": [1, 2]},
    }


def test_untouched_subtrees_are_shared() -> None:
    """Subtrees off every touched path are the very objects of the input."""
    doc: dict[str, Any] = {
        "a": {"b": {"c": 1}, "x": [1, 2]},
        "d": {"e": [3]},
        "f": [{"g": 1}, {"h": 2}],
    }
    ops = [
        {"op": "replace", "path": "/a/b/c", "value": 2},
        {"op": "add", "path": "/f/1/i", "value": 3},
    ]
    result = apply_patch(doc, ops)
    assert result["d"] is doc["d"]
    assert result["a"]["x"] is doc["a"]["x"]
    assert result["f"][0] is doc["f"][0]
    # The containers on the touched paths are new.
    assert result is not doc
    assert result["a"] is not doc["a"]
    assert result["a"]["b"] is not doc["a"]["b"]
    assert result["f"] is not doc["f"]
    assert result["f"][1] is not doc["f"][1]


def test_containers_copied_once_per_patch() -> None:
    """Several writes under one container copy it once: later ops reuse the patch's copy."""
    doc: dict[str, Any] = {"a": {"b": {}}}
    ops = [{"op": "add", "path": f"/a/b/k{i}", "value": i} for i in range(50)]
    result = apply_patch(doc, ops)
    new = [c for c in containers(result) if all(c is not o for o in containers(doc))]
    assert len(new) == 3  # root, /a, /a/b
    assert result["a"]["b"] == {f"k{i}": i for i in range(50)}


def test_replace_in_large_document_copies_only_the_path() -> None:
    """A one-op replace copies only the containers along its path, whatever the document size."""
    doc = {f"k{i}": {"items": [{"n": j} for j in range(20)]} for i in range(500)}
    result = apply_patch(doc, [{"op": "replace", "path": "/k7/items/3/n", "value": -1}])
    assert result["k7"]["items"][3] == {"n": -1}
    assert doc["k7"]["items"][3] == {"n": 3}
    for key, value in doc.items():
        if key != "k7":
            assert result[key] is value
    for j, item in enumerate(doc["k7"]["items"]):
        if j != 3:
            assert result["k7"]["items"][j] is item


def test_values_added_are_shared_not_copied() -> None:
    """Operation values are stored as they are, without a deep copy."""
    value = {"big": list(range(100))}
    result = apply_patch({}, [{"op": "add", "path": "/v", "value": value}])
    assert result["v"] is value


# --- make_patch -----------------------------------------------------------------


def test_make_patch_round_trip() -> None:
    """make_patch produces wire operations that turn old into new."""
    old = {"a": [1, 2, 3], "b": {"c": True}, "d": "x"}
    new = {"a": [1, 3, 4], "b": {"c": 1}, "e": None}
    ops = make_patch(old, new)
    assert all(isinstance(op, dict) and "op" in op for op in ops)
    assert same_json(apply_patch(old, ops), new)
    assert make_patch(old, old) == []


# --- Hypothesis properties ------------------------------------------------------

keys = st.one_of(st.text(alphabet="ab~/0-", max_size=3), st.text(max_size=4))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=12,
)
json_containers = st.one_of(
    st.lists(json_values, max_size=4), st.dictionaries(keys, json_values, max_size=4)
)


def draw_add_target(draw: st.DrawFn, doc: Any) -> str:
    """A pointer where add may write in ``doc`` ("" replaces the document)."""
    targets = [tokens for tokens, value in locations(doc) if isinstance(value, (dict, list))]
    choice = draw(st.sampled_from([*targets, None]))
    if choice is None:
        return ""
    parent = next(v for t, v in locations(doc) if t == choice)
    if isinstance(parent, dict):
        key = draw(st.one_of(keys, st.sampled_from(sorted(parent) or [""])))
    else:
        key = draw(st.sampled_from(["-", *(str(i) for i in range(len(parent) + 1))]))
    return pointer((*choice, key))


@st.composite
def valid_operation(draw: st.DrawFn, doc: Any) -> dict[str, Any]:
    """One operation that applies to ``doc``."""
    where = list(locations(doc))
    inner = [tokens for tokens, _ in where if tokens]
    kinds = ["add", "replace", "test", "copy"]
    if inner:
        kinds += ["remove", "move"]
    kind = draw(st.sampled_from(kinds))
    if kind == "add":
        path = draw_add_target(draw, doc)
        return {"op": "add", "path": path, "value": draw(json_values)}
    if kind == "replace":
        tokens = draw(st.sampled_from([t for t, _ in where]))
        return {"op": "replace", "path": pointer(tokens), "value": draw(json_values)}
    if kind == "test":
        tokens, value = draw(st.sampled_from(where))
        return {"op": "test", "path": pointer(tokens), "value": copy.deepcopy(value)}
    if kind == "remove":
        return {"op": "remove", "path": pointer(draw(st.sampled_from(inner)))}
    if kind == "copy":
        tokens = draw(st.sampled_from([t for t, _ in where]))
        return {"op": "copy", "from": pointer(tokens), "path": draw_add_target(draw, doc)}
    from_tokens = draw(st.sampled_from(inner))
    removed = jsonpatch.apply_patch(doc, [{"op": "remove", "path": pointer(from_tokens)}])
    path = draw_add_target(draw, removed)
    assume(not (path.startswith(pointer(from_tokens) + "/")))
    return {"op": "move", "from": pointer(from_tokens), "path": path}


@st.composite
def doc_and_valid_patch(draw: st.DrawFn, max_ops: int = 6) -> tuple[Any, list[dict[str, Any]]]:
    """A JSON document and a patch that applies to it, op by op per jsonpatch."""
    doc = draw(json_containers)
    ops: list[dict[str, Any]] = []
    current = doc
    for _ in range(draw(st.integers(min_value=0, max_value=max_ops))):
        op = draw(valid_operation(current))
        current = jsonpatch.apply_patch(current, [op])
        ops.append(op)
    return doc, ops


@st.composite
def failing_operation(draw: st.DrawFn, doc: Any) -> dict[str, Any]:
    """One operation that cannot apply to ``doc``."""
    where = list(locations(doc))
    kind = draw(st.sampled_from(["test", "remove", "replace", "move", "add"]))
    if kind == "test":
        tokens, value = draw(st.sampled_from(where))
        # No finite value equals a list that contains it.
        return {"op": "test", "path": pointer(tokens), "value": [value]}
    if kind == "add":
        # A missing intermediate member or an index past the end.
        holders = [(t, v) for t, v in where if isinstance(v, (dict, list))]
        tokens, value = draw(st.sampled_from(holders or [((), doc)]))
        if isinstance(value, list):
            return {"op": "add", "path": pointer((*tokens, str(len(value) + 1))), "value": 1}
        if isinstance(value, dict):
            key = "missing" + "x" * max((len(k) for k in value), default=0)
            return {"op": "add", "path": pointer((*tokens, key, "child")), "value": 1}
        return {"op": "add", "path": "/a/b", "value": 1}
    # A location that does not exist: a member absent from an object, an index
    # past the end of an array, or a token below a scalar.
    tokens, value = draw(st.sampled_from(where))
    if isinstance(value, dict):
        missing: tuple[str, ...] = (
            *tokens,
            "missing" + "x" * max((len(k) for k in value), default=0),
        )
    elif isinstance(value, list):
        missing = (*tokens, str(len(value)))
    else:
        missing = (*tokens, "0")
    if kind == "remove":
        return {"op": "remove", "path": pointer(missing)}
    if kind == "replace":
        return {"op": "replace", "path": pointer(missing), "value": 1}
    return {"op": "move", "from": pointer(missing), "path": "/anywhere"}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_failing_operation_is_atomic(data: st.DataObject) -> None:
    """A patch whose k-th operation fails raises PatchError with index k and changes nothing."""
    doc, prefix = data.draw(doc_and_valid_patch())
    current = jsonpatch.apply_patch(doc, prefix)
    bad = data.draw(failing_operation(current))
    suffix = data.draw(st.lists(st.sampled_from([bad, {"op": "add", "path": "", "value": 1}])))
    before = copy.deepcopy(doc)
    with pytest.raises(PatchError) as info:
        apply_patch(doc, [*prefix, bad, *suffix])
    assert info.value.index == len(prefix)
    assert info.value.path in (bad["path"], bad.get("from"))
    assert same_json(doc, before)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_matches_jsonpatch(data: st.DataObject) -> None:
    """Valid patches give jsonpatch's result on a deep copy and leave the input unchanged."""
    doc, ops = data.draw(doc_and_valid_patch())
    before = copy.deepcopy(doc)
    expected = jsonpatch.apply_patch(copy.deepcopy(doc), ops)
    result = apply_patch(doc, ops)
    assert same_json(result, expected)
    assert same_json(doc, before)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_untouched_subtrees_keep_identity(data: st.DataObject) -> None:
    """Subtrees no operation touches are shared, and only path containers are copied."""
    others = data.draw(st.dictionaries(st.text(max_size=3), json_values, max_size=4))
    inner, inner_ops = data.draw(doc_and_valid_patch())
    # Every operation of the patch works under /target (never at the root of doc).
    ops = []
    for op in inner_ops:
        moved = dict(op, path="/target" + op["path"])
        if "from" in op:
            moved["from"] = "/target" + op["from"]
        ops.append(moved)
    doc = {**{"o" + k: v for k, v in others.items()}, "target": inner}
    op_values = [op["value"] for op in ops if "value" in op]
    result = apply_patch(doc, ops)
    assert same_json(result, {**doc, "target": jsonpatch.apply_patch(inner, inner_ops)})
    for key, value in doc.items():
        if key != "target":
            assert result[key] is value
    # Containers that are neither from the input nor from an operation value are
    # copies; a copy is made at most once per container on an operation's path(s).
    known = {id(c) for c in containers(doc)}
    for value in op_values:
        known.update(id(c) for c in containers(value))
    copies = {id(c) for c in containers(result) if id(c) not in known}
    bound = 1 + sum(op["path"].count("/") + op.get("from", "").count("/") for op in ops)
    assert len(copies) <= bound


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, json_values)
def test_property_make_patch_round_trips(old: Any, new: Any) -> None:
    """apply_patch(old, make_patch(old, new)) equals new."""
    assert same_json(apply_patch(old, make_patch(old, new)), new)


# ---- in place ---------------------------------------------------------------------------


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_in_place_failure_rolls_back(data: st.DataObject) -> None:
    """In place, a patch whose k-th operation fails is undone: the document is as before."""
    doc, prefix = data.draw(doc_and_valid_patch())
    current = jsonpatch.apply_patch(doc, prefix)
    bad = data.draw(failing_operation(current))
    owned = copy.deepcopy(doc)
    before = copy.deepcopy(doc)
    with pytest.raises(PatchError) as info:
        apply_patch_in_place(owned, [*prefix, bad])
    assert info.value.index == len(prefix)
    assert same_json(owned, before)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_in_place_matches_jsonpatch(data: st.DataObject) -> None:
    """In place, valid patches give jsonpatch's result and share nothing with the patch."""
    doc, ops = data.draw(doc_and_valid_patch())
    expected = jsonpatch.apply_patch(copy.deepcopy(doc), ops)
    ops_before = copy.deepcopy(ops)
    result = apply_patch_in_place(copy.deepcopy(doc), ops)
    assert same_json(result, expected)
    op_containers = {id(c) for op in ops if "value" in op for c in containers(op["value"])}
    assert not op_containers & {id(c) for c in containers(result)}
    assert same_json(ops, ops_before)


def test_in_place_changes_the_given_document() -> None:
    """apply_patch_in_place edits the document it is given and returns it."""
    doc: dict[str, Any] = {"items": [1, 2, 3], "n": 0}
    items = doc["items"]
    result = apply_patch_in_place(doc, [{"op": "replace", "path": "/n", "value": 5}])
    assert result is doc
    assert doc == {"items": [1, 2, 3], "n": 5}
    assert doc["items"] is items
