"""Tests of agentproto._core.readonly: zero-copy read-only JSON views and thaw."""

from __future__ import annotations

import copy
import pickle
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given

from agentproto._core.readonly import JsonMapping, JsonSequence, readonly, thaw
from tests.jsonsame import same_json
from tests.strategies import json_values


def containers(value: Any) -> list[Any]:
    """Every dict/list in ``value``."""
    found, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            found.append(node)
            stack.extend(node)
    return found


@pytest.mark.parametrize("value", ["text", 1, 1.5, True, False, None])
def test_scalars_come_back_unchanged(value: Any) -> None:
    """A scalar is immutable already: readonly returns the value itself."""
    assert readonly(value) is value


def test_objects_and_arrays_become_mapping_and_sequence_views() -> None:
    """A dict becomes a Mapping view and a list a Sequence view, and a view passes through."""
    mapping = readonly({"a": 1})
    sequence = readonly([1, 2])
    assert isinstance(mapping, JsonMapping) and isinstance(mapping, Mapping)
    assert isinstance(sequence, JsonSequence) and isinstance(sequence, Sequence)
    assert readonly(mapping) is mapping


def test_views_do_not_copy() -> None:
    """A view reads the wrapped document itself: a change to it (made here, in the test) shows."""
    doc: dict[str, Any] = {"a": {"b": [1, 2]}}
    view = readonly(doc)
    doc["a"]["b"].append(3)
    assert view["a"]["b"] == [1, 2, 3]


def test_nested_containers_are_wrapped_on_access() -> None:
    """Members and items that are containers come back as views, scalars as themselves."""
    view = readonly({"o": {"k": "v"}, "l": [{"x": 1}, "s"], "n": None})
    assert isinstance(view["o"], JsonMapping)
    assert isinstance(view["l"], JsonSequence)
    assert isinstance(view["l"][0], JsonMapping)
    assert view["l"][1] == "s"
    assert view["n"] is None
    assert all(isinstance(v, (JsonMapping, JsonSequence)) for v in list(view.values())[:2])
    assert isinstance(dict(view.items())["o"], JsonMapping)
    assert isinstance(next(iter(view["l"])), JsonMapping)
    assert isinstance(view.get("o"), JsonMapping)
    assert view.get("missing", 7) == 7


def test_views_equal_the_json_they_wrap() -> None:
    """A view is == to its plain JSON and to a view of equal JSON, and != to other JSON."""
    doc = {"a": [1, {"b": None}], "c": "d"}
    assert readonly(doc) == doc
    assert doc == readonly(doc)
    assert readonly(doc) == readonly(copy.deepcopy(doc))
    assert readonly(doc) != {"a": [1, {"b": None}]}
    assert readonly([1, 2]) == [1, 2]
    assert readonly([1, 2]) != [2, 1]
    assert readonly([1, 2]) != (1, 2)
    assert readonly({"a": 1}) != [1]


def test_views_have_no_way_to_change_the_document() -> None:
    """Item assignment, deletion, list methods and attribute assignment all fail."""
    doc: dict[str, Any] = {"a": [1]}
    view = readonly(doc)
    with pytest.raises(TypeError):
        view["a"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        del view["a"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        view["a"][0] = 2
    with pytest.raises(AttributeError):
        view["a"].append(2)
    with pytest.raises(AttributeError):
        view.update({"b": 1})  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        view._data = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        view.anything = 1  # type: ignore[attr-defined]
    assert doc == {"a": [1]}


def test_views_are_not_hashable() -> None:
    """Like the dicts and lists they wrap, views cannot be hashed."""
    with pytest.raises(TypeError):
        hash(readonly({}))
    with pytest.raises(TypeError):
        hash(readonly([]))


def test_sequence_views_slice_reverse_and_search() -> None:
    """Slices are views, and reversed, index, count and in work on the wrapped items."""
    view = readonly([{"a": 1}, 2, 3, 2])
    assert isinstance(view[1:3], JsonSequence) and view[1:3] == [2, 3]
    assert next(reversed(view)) == 2
    assert isinstance(list(reversed(view))[-1], JsonMapping)
    assert view.index(3) == 2 and view.count(2) == 2
    assert {"a": 1} in view and readonly({"a": 1}) in view
    assert len(view) == 4


def test_mapping_views_behave_as_mappings() -> None:
    """len, iteration, membership, keys and repr behave as for the wrapped dict."""
    view = readonly({"a": 1, "b": 2})
    assert len(view) == 2 and list(view) == ["a", "b"] and "a" in view and "z" not in view
    assert list(view.keys()) == ["a", "b"]
    assert repr(view) == "readonly({'a': 1, 'b': 2})"


def test_thaw_is_an_independent_deep_copy() -> None:
    """thaw returns plain dicts and lists sharing no container with the original."""
    doc = {"a": [1, {"b": [2.0, True, None]}], "c": {"d": "e"}}
    copied = thaw(readonly(doc))
    assert same_json(copied, doc)
    assert type(copied) is dict and type(copied["a"]) is list
    assert not {id(c) for c in containers(copied)} & {id(c) for c in containers(doc)}


def test_thaw_unwraps_views_nested_in_plain_json() -> None:
    """Views held inside plain JSON become plain copies too."""
    inner = {"x": [1]}
    copied = thaw({"v": readonly(inner), "l": [readonly([inner])]})
    assert copied == {"v": {"x": [1]}, "l": [[{"x": [1]}]]}
    assert type(copied["v"]) is dict and type(copied["l"][0]) is list
    assert copied["v"] is not inner and copied["v"]["x"] is not inner["x"]


def test_thaw_keeps_number_types_exact() -> None:
    """1, 1.0 and True stay an int, a float and a bool; scalars come back as themselves."""
    copied = thaw([1, 1.0, True, 10**30])
    assert [type(x) for x in copied] == [int, float, bool, int]
    assert thaw("s") == "s" and thaw(None) is None


def test_thaw_copies_documents_deeper_than_the_recursion_limit() -> None:
    """Nesting past Python's recursion limit is copied without RecursionError."""
    depth = sys.getrecursionlimit() + 100
    doc: Any = {}
    node = doc
    for _ in range(depth):
        node["n"] = [{}]
        node = node["n"][0]
    copied = thaw(readonly(doc))
    node, levels = copied, 0
    while node:
        assert type(node) is dict
        node = node["n"][0]
        levels += 1
    assert levels == depth


def test_copying_or_pickling_a_view_gives_an_independent_view() -> None:
    """copy, deepcopy and pickle round-trips yield equal views over separate data."""
    doc: dict[str, Any] = {"a": [1]}
    view = readonly(doc)
    for other in (copy.copy(view), copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        assert isinstance(other, JsonMapping) and other == view
        doc["a"].append(2)
        assert other != view
        doc["a"].pop()


@given(json_values())
def test_views_equal_and_thaw_to_any_json(value: Any) -> None:
    """For any JSON value, its view equals it and thawing the view gives the same JSON."""
    view = readonly(value)
    assert view == value
    copied = thaw(view)
    assert same_json(copied, value)
    assert not {id(c) for c in containers(copied)} & {id(c) for c in containers(value)}
