"""The ACP v2 top-level ``_meta`` metadata patch rule (seeds/acp-v2-meta-patches.md)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto._core.errors import SchemaError
from agentproto._core.unset import UNSET, Unset
from agentproto.acp._state import meta as _meta
from agentproto.acp._state.meta import (
    Meta,
    apply_meta_update,
    combine_meta,
    patch_meta_in_place,
    resync_meta,
)
from tests.jsonsame import same_json

Patch = Meta | Unset | None

# --- strategies --------------------------------------------------------------------------------

# A few keys, so that patches and stored metadata collide often; two of them need escaping in a
# JSON Pointer.
KEYS = st.sampled_from(["a", "b", "c", "zed.dev/debugMode", "acme.dev/review", "x~y"])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False, width=16)
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)
# A value a key may store: anything but a top-level null (a nested null is data).
stored_values = json_values.filter(lambda value: value is not None)

stored_metas: st.SearchStrategy[Meta | None] = st.none() | st.dictionaries(
    KEYS, stored_values, max_size=5
)
patch_objects: st.SearchStrategy[Meta] = st.dictionaries(
    KEYS, st.none() | stored_values, max_size=5
)
patches: st.SearchStrategy[Patch] = st.just(UNSET) | st.none() | patch_objects

# Cheaper variants for the long runs: the rule never looks inside a value, so a few distinct
# values (a nested null among them) exercise it as well as arbitrary JSON does.
light_values = st.sampled_from([0, 1, True, "s", [], [None], {"x": None}, {"x": 1}])
light_metas: st.SearchStrategy[Meta | None] = st.none() | st.dictionaries(
    KEYS, light_values, max_size=5
)
light_patches: st.SearchStrategy[Patch] = (
    st.just(UNSET) | st.none() | st.dictionaries(KEYS, st.none() | light_values, max_size=5)
)


# --- helpers -----------------------------------------------------------------------------------


def reference_apply(stored: Meta | None, update: Patch) -> Meta | None:
    """The rule as the RFD words it, without the copy-avoiding shortcuts."""
    result: Meta = dict(stored or {})
    if update is None:
        result = {}
    elif isinstance(update, dict):
        for key, value in update.items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = value
    return result or None


def apply_all(stored: Meta | None, updates: Iterable[Patch]) -> Meta | None:
    """Apply patches in receive order, as live delivery and replay do."""
    for update in updates:
        stored = apply_meta_update(stored, update)
    return stored


# --- the conformance table of the RFD ---------------------------------------------------------

NO_METADATA = None

CONFORMANCE = [
    pytest.param({"a": 1, "b": 2}, UNSET, {"a": 1, "b": 2}, id="omitted"),
    pytest.param({"a": 1, "b": 2}, None, NO_METADATA, id="null"),
    pytest.param({"a": 1, "b": 2}, {}, {"a": 1, "b": 2}, id="empty-object"),
    pytest.param({"a": 1, "b": 2}, {"a": 3}, {"a": 3, "b": 2}, id="replace-key"),
    pytest.param({"a": 1, "b": 2}, {"a": None}, {"b": 2}, id="remove-key"),
    pytest.param(NO_METADATA, {"a": None}, NO_METADATA, id="remove-on-first-update"),
    pytest.param({"a": {"x": 1, "y": 2}}, {"a": {"x": 3}}, {"a": {"x": 3}}, id="no-nested-merge"),
    pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="array-replaced"),
    pytest.param(NO_METADATA, {"a": {"x": None}}, {"a": {"x": None}}, id="nested-null-is-data"),
]


@pytest.mark.parametrize(("stored", "incoming", "expected"), CONFORMANCE)
def test_conformance_table(stored: Meta | None, incoming: Patch, expected: Meta | None) -> None:
    """Each row of the RFD's conformance table gives the stored metadata it lists."""
    assert apply_meta_update(stored, incoming) == expected


@pytest.mark.parametrize(("stored", "incoming", "expected"), CONFORMANCE)
def test_conformance_table_with_empty_stored_object(
    stored: Meta | None, incoming: Patch, expected: Meta | None
) -> None:
    """Stored metadata with no keys behaves exactly like no metadata."""
    if stored is NO_METADATA:
        stored = {}
    assert apply_meta_update(stored, incoming) == expected


def test_rfd_worked_example() -> None:
    """The RFD's example: a null key is removed, a value replaced whole, a new key added."""
    stored = {"zed.dev/progress": 0.5, "acme.dev/review": {"state": "pending"}}
    update = {
        "zed.dev/progress": None,
        "acme.dev/review": {"reviewer": "sam"},
        "proxy.dev/route": "edge",
    }
    assert apply_meta_update(stored, update) == {
        "acme.dev/review": {"reviewer": "sam"},
        "proxy.dev/route": "edge",
    }


# --- more cases the RFD asks for --------------------------------------------------------------


def test_unknown_keys_are_kept_untouched() -> None:
    """Keys nobody here knows are stored, kept and removed like any other, values untouched."""
    opaque = {"deep": {"nested": [None, {"x": None}]}, "": 0}
    stored = apply_meta_update(None, {"vendor.example/💡": opaque, "": False, "a/b~c": []})
    assert stored == {"vendor.example/💡": opaque, "": False, "a/b~c": []}
    assert stored is not None
    assert stored["vendor.example/💡"] is opaque
    later = apply_meta_update(stored, {"other.dev/x": 1})
    assert later == {"vendor.example/💡": opaque, "": False, "a/b~c": [], "other.dev/x": 1}
    assert apply_meta_update(later, {"": None, "a/b~c": None}) == {
        "vendor.example/💡": opaque,
        "other.dev/x": 1,
    }


def test_clear_followed_by_object() -> None:
    """A clear then an object leaves only the object's keys, whatever was stored before."""
    stored = {"a": 1, "b": 2}
    assert apply_all(stored, [None, {"c": 3}]) == {"c": 3}
    assert apply_all(stored, [None, {"a": None, "c": 3}]) == {"c": 3}


def test_clear_followed_by_object_is_not_the_object_alone() -> None:
    """Combining a clear and an object keeps the clear: the object alone would keep old keys."""
    assert combine_meta(None, {"c": 3}) == [None, {"c": 3}]
    assert apply_all({"a": 1}, combine_meta(None, {"c": 3})) == {"c": 3}
    assert apply_meta_update({"a": 1}, {"c": 3}) == {"a": 1, "c": 3}


def test_replay_does_not_reset_stale_metadata() -> None:
    """Replay applies patches as live delivery does, so keys it does not remove survive."""
    live: list[Patch] = [{"a": 1}, {"b": 2}, {"a": None, "c": 3}]
    expected = {"b": 2, "c": 3}
    assert apply_all(None, live) == expected
    stale = {"a": 0, "old": True}
    assert apply_all(stale, live) == {"old": True, "b": 2, "c": 3}


def test_replay_over_stale_metadata_with_resync_removes_stale_keys() -> None:
    """A resync patch built from what the client holds removes its stale keys."""
    stale = {"a": 0, "old": True}
    current = {"b": 2, "c": 3}
    [patch] = resync_meta(stale, current)
    assert patch == {"a": None, "old": None, "b": 2, "c": 3}
    assert apply_meta_update(stale, patch) == current


def test_replay_keeping_removals_reproduces_metadata() -> None:
    """Replaying the original updates in order from nothing reproduces the stored metadata."""
    updates: list[Patch] = [{"a": 1, "b": 2}, UNSET, {"a": None}, {"c": {"x": None}}, {}]
    live = apply_all(None, updates)
    assert live == {"b": 2, "c": {"x": None}}
    without_removal: list[Patch] = [{"a": 1, "b": 2}, UNSET, {"c": {"x": None}}, {}]
    assert apply_all(None, without_removal) == {"a": 1, "b": 2, "c": {"x": None}}


# --- identity, normalisation and immutability --------------------------------------------------


def test_nothing_changed_returns_stored_itself() -> None:
    """A patch that changes nothing returns the very dict that was stored."""
    stored = {"a": 1, "b": [1, {"x": 2.5}]}
    assert apply_meta_update(stored, UNSET) is stored
    assert apply_meta_update(stored, {}) is stored
    assert apply_meta_update(stored, {"absent": None}) is stored
    assert apply_meta_update(stored, {"a": 1, "b": [1, {"x": 2.5}]}) is stored


def test_value_of_another_json_type_is_a_change() -> None:
    """``true``, ``1`` and ``1.0`` are different JSON values: swapping them is a change."""
    stored = {"a": 1}
    assert apply_meta_update(stored, {"a": True}) == {"a": True}
    result = apply_meta_update(stored, {"a": 1.0})
    assert result is not stored
    assert result is not None
    assert type(result["a"]) is float


def test_empty_metadata_is_no_metadata() -> None:
    """Stored metadata left without keys is reported as ``None``."""
    assert apply_meta_update({}, UNSET) is None
    assert apply_meta_update({}, {}) is None
    assert apply_meta_update({"a": 1}, {"a": None}) is None
    assert apply_meta_update(None, {}) is None
    assert apply_meta_update(None, UNSET) is None


def test_inputs_are_never_mutated() -> None:
    """No function changes the dicts it is given."""
    stored = {"a": 1, "b": {"x": [1]}}
    update = {"a": None, "b": {"y": 2}, "c": 3}
    stored_before, update_before = copy.deepcopy(stored), copy.deepcopy(update)
    result = apply_meta_update(stored, update)
    assert result == {"b": {"y": 2}, "c": 3}
    assert result is not stored
    combine_meta(stored, update)
    combine_meta(None, update)
    resync_meta(stored, {"c": 3})
    resync_meta(stored, {"c": 3}, clear_first=True)
    assert stored == stored_before
    assert update == update_before


# --- bad types ---------------------------------------------------------------------------------

NOT_A_PATCH = [[], ["a"], "a", 0, 1.5, True, False, (), {1, 2}]


@pytest.mark.parametrize("update", NOT_A_PATCH)
def test_patch_of_wrong_type_is_a_schema_error(update: Any) -> None:
    """A ``_meta`` patch that is not omitted, null or an object fails the "type" check at /_meta."""
    with pytest.raises(SchemaError) as info:
        apply_meta_update({"a": 1}, update)
    assert (info.value.keyword, info.value.location) == ("type", "/_meta")


@pytest.mark.parametrize("stored", [*NOT_A_PATCH, UNSET])
def test_stored_of_wrong_type_is_a_schema_error(stored: Any) -> None:
    """Stored metadata that is not None or an object fails the "type" check at the root."""
    with pytest.raises(SchemaError) as info:
        apply_meta_update(stored, {"a": 1})
    assert (info.value.keyword, info.value.location) == ("type", "")


@pytest.mark.parametrize("bad", NOT_A_PATCH)
def test_combine_of_wrong_type_is_a_schema_error(bad: Any) -> None:
    """``combine_meta`` rejects a patch of the wrong type, in either position."""
    for first, second in ((bad, {"a": 1}), ({"a": 1}, bad), (UNSET, bad)):
        with pytest.raises(SchemaError) as info:
            combine_meta(first, second)
        assert (info.value.keyword, info.value.location) == ("type", "/_meta")


@pytest.mark.parametrize("bad", [*NOT_A_PATCH, UNSET])
def test_resync_of_wrong_type_is_a_schema_error(bad: Any) -> None:
    """``resync_meta`` rejects metadata that is not None or an object, in either position."""
    for known, current in ((bad, {"a": 1}), ({"a": 1}, bad)):
        with pytest.raises(SchemaError) as info:
            resync_meta(known, current)
        assert (info.value.keyword, info.value.location) == ("type", "")


def test_resync_rejects_null_in_current_metadata() -> None:
    """Metadata holding a null key is not stored metadata: as a patch the null would remove it."""
    with pytest.raises(SchemaError) as info:
        resync_meta(None, {"ok": 1, "a/b~c": None})
    assert (info.value.keyword, info.value.location) == ("type", "/a~1b~0c")


# --- resync_meta -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("known", "current", "expected"),
    [
        pytest.param({"a": 1}, None, [None], id="current-none"),
        pytest.param({"a": 1}, {}, [None], id="current-empty-sends-null-not-empty-object"),
        pytest.param(None, None, [None], id="both-empty"),
        pytest.param({}, {}, [None], id="both-empty-objects"),
        pytest.param(None, {"a": 1}, [{"a": 1}], id="client-holds-none"),
        pytest.param({}, {"a": 1}, [{"a": 1}], id="client-holds-empty"),
        pytest.param({"a": 1, "b": 2}, {"b": 3, "c": 4}, [{"a": None, "b": 3, "c": 4}], id="stale"),
        pytest.param({"a": 1}, {"a": 1}, [{"a": 1}], id="same"),
    ],
)
def test_resync_cases(
    known: Meta | None, current: Meta | None, expected: list[Meta | None]
) -> None:
    """Resync sends null when empty, the object alone to an empty client, else stale keys nulled."""
    assert resync_meta(known, current) == expected


def test_resync_clear_first_is_the_two_update_form() -> None:
    """``clear_first`` sends ``_meta: null`` then the current object, whatever the client holds."""
    assert resync_meta({"a": 1}, {"b": 2}, clear_first=True) == [None, {"b": 2}]
    assert resync_meta(None, {"b": 2}, clear_first=True) == [None, {"b": 2}]
    assert resync_meta({"a": 1}, None, clear_first=True) == [None]


def test_resync_returns_new_dicts() -> None:
    """The patches are new dicts, so the sender may keep mutating its own metadata."""
    current = {"a": 1}
    for known in (None, {"b": 1}):
        for clear_first in (False, True):
            assert all(
                patch is not current
                for patch in resync_meta(known, current, clear_first=clear_first)
            )


@settings(max_examples=300)
@given(known=stored_metas, current=stored_metas, clear_first=st.booleans())
def test_resync_property(known: Meta | None, current: Meta | None, clear_first: bool) -> None:
    """Applying the resync patches in order to the known metadata gives the current metadata."""
    result = resync_meta(known, current, clear_first=clear_first)
    assert 1 <= len(result) <= 2
    assert {} not in result
    assert same_json(apply_all(known, result), current or None)


@settings(max_examples=300)
@given(data=st.data(), known=stored_metas, current=stored_metas)
def test_resync_property_for_any_subset_held(
    data: st.DataObject, known: Meta | None, current: Meta | None
) -> None:
    """The one-object resync also fits a client that holds only some of the known keys."""
    held_keys = data.draw(st.sets(st.sampled_from(sorted(known or {})))) if known else set()
    held = {key: value for key, value in (known or {}).items() if key in held_keys}
    assert same_json(apply_all(held, resync_meta(known, current)), current or None)


# --- apply_meta_update against the reference ---------------------------------------------------


@settings(max_examples=300)
@given(stored=stored_metas, update=patches)
def test_apply_matches_reference_and_mutates_nothing(stored: Meta | None, update: Patch) -> None:
    """``apply_meta_update`` equals the rule as worded, stores no null and mutates nothing."""
    stored_before, update_before = copy.deepcopy(stored), copy.deepcopy(update)
    result = apply_meta_update(stored, update)
    assert same_json(result, reference_apply(stored, update))
    assert result != {}
    assert result is None or None not in result.values()
    assert stored == stored_before
    assert update == update_before


@settings(max_examples=300)
@given(stored=stored_metas, update=patches)
def test_patch_in_place_matches_apply(stored: Meta | None, update: Patch) -> None:
    """``patch_meta_in_place`` gives what ``apply_meta_update`` gives, changing the stored
    dict itself when it held keys, and never the patch."""
    update_before = copy.deepcopy(update)
    expected = apply_meta_update(copy.deepcopy(stored), update)
    owned = copy.deepcopy(stored)
    result = patch_meta_in_place(owned, update)
    assert same_json(result, expected)
    assert update == update_before
    if owned and result is not None and isinstance(update, dict):
        assert result is owned


@pytest.mark.parametrize("bad", [[], "x", 1])
def test_patch_in_place_checks_before_changing(bad: Any) -> None:
    """A patch of the wrong type is a SchemaError from the check and from the patching,
    and the stored dict is left as it was."""
    stored = {"a": 1}
    for call in (lambda: _meta.check_meta_patch(bad), lambda: patch_meta_in_place(stored, bad)):
        with pytest.raises(SchemaError) as info:
            call()
        assert info.value.location == "/_meta"
    assert stored == {"a": 1}


# --- combine_meta ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        pytest.param(UNSET, UNSET, [UNSET], id="unset-unset"),
        pytest.param(UNSET, {"a": 1}, [{"a": 1}], id="unset-object"),
        pytest.param(UNSET, None, [None], id="unset-null"),
        pytest.param({"a": 1}, UNSET, [{"a": 1}], id="object-unset"),
        pytest.param(None, UNSET, [None], id="null-unset"),
        pytest.param({"a": 1}, None, [None], id="object-null"),
        pytest.param(None, None, [None], id="null-null"),
        pytest.param(None, {"a": 1, "b": None}, [None, {"a": 1}], id="null-object-drops-removals"),
        pytest.param(None, {"b": None}, [None], id="null-only-removals"),
        pytest.param(None, {}, [None], id="null-empty-object"),
        pytest.param(
            {"a": 1, "b": None, "c": 3},
            {"a": None, "c": 4, "d": 5},
            [{"a": None, "b": None, "c": 4, "d": 5}],
            id="object-object-keeps-removals",
        ),
    ],
)
def test_combine_cases(first: Patch, second: Patch, expected: list[Patch]) -> None:
    """Two patches coalesce into one, except a clear followed by an object, which stays two."""
    assert combine_meta(first, second) == expected


def _check_combine(stored: Meta | None, first: Patch, second: Patch) -> None:
    stored_before = copy.deepcopy(stored)
    first_before, second_before = copy.deepcopy(first), copy.deepcopy(second)
    combined = combine_meta(first, second)
    assert 1 <= len(combined) <= 2
    if len(combined) == 2:
        assert combined[0] is None
        assert isinstance(combined[1], dict)
        assert combined[1]
        assert None not in combined[1].values()
    expected = apply_meta_update(apply_meta_update(stored, first), second)
    assert same_json(apply_all(stored, combined), expected)
    assert (stored, first, second) == (stored_before, first_before, second_before)


@settings(max_examples=300)
@given(stored=stored_metas, first=patches, second=patches)
def test_combine_property(stored: Meta | None, first: Patch, second: Patch) -> None:
    """Applying the combined patches equals applying the two patches, on any stored metadata."""
    _check_combine(stored, first, second)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None)
@given(stored=light_metas, first=light_patches, second=light_patches)
def test_combine_property_slow(stored: Meta | None, first: Patch, second: Patch) -> None:
    """The combine property over 10 000 examples: same effect as the two patches in order."""
    _check_combine(stored, first, second)


@settings(max_examples=300)
@given(stored=stored_metas, updates=st.lists(patches, max_size=6))
def test_combine_folds_a_sequence(stored: Meta | None, updates: list[Patch]) -> None:
    """Folding a run of updates pairwise with combine_meta keeps their effect."""
    pending: list[Patch] = []
    for update in updates:
        if not pending:
            pending = [update]
            continue
        pending = [*pending[:-1], *combine_meta(pending[-1], update)]
    assert same_json(apply_all(stored, pending), apply_all(stored, updates))


# --- public names ------------------------------------------------------------------------------


def test_public_names() -> None:
    """The module exports exactly the metadata patch API."""
    names = "Meta apply_meta_update check_meta_patch combine_meta patch_meta_in_place resync_meta"
    assert sorted(_meta.__all__) == names.split()


def test_values_of_any_depth_are_compared() -> None:
    """A deep value replacing an equal one (nothing changes) or one differing at the bottom
    is compared without RecursionError (the comparison recursed a frame a level)."""

    def deep(leaf: Any) -> Any:
        value = leaf
        for _ in range(5_000):
            value = [value]
        return value

    stored = {"a": deep(0)}
    assert apply_meta_update(stored, {"a": deep(0)}) is stored
    changed = apply_meta_update(stored, {"a": deep(0.0)})
    assert changed is not stored and changed is not None and changed["a"] is not stored["a"]
