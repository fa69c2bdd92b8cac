"""Evolution: what a maintainer meets when a published schema changes upstream.

Each case edits a copy of a pinned schema the way an upstream release would, regenerates
into a scratch folder (``evolution.regenerate``) and checks one of the two acceptable
outcomes: zero hand edits and the runtime, imported against the regenerated modules,
treats the new input as the spec says; or a loud failure of generation (or of mypy)
naming what to edit. Never green with changed behaviour.

Regenerations are shared: one edited schema carries several independent changes where
they cannot interfere (a module-scoped fixture each), and one probe run per edited
schema answers every case it carries.

Cases (issue 8, item 5): a new AG-UI event type; a new optional AG-UI field; a new
enum value; a renamed field (one the rules read, one they do not, an overlay-marked ACP
patch field); a new ``session/update`` kind; a patch field whose type changes; an
unclassified nullable field; a new value of an open enum; an untagged union member; a
definition taking the name the naming rule gives a member.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from codegen.generate import sealed_paths
from codegen.sources import ROOT
from tests.codegen.evolution import (
    SOURCES,
    Regen,
    defs,
    names_file_pattern,
    overlay_file,
    pinned_schema,
    probe,
    regenerate,
    runtime_tree,
    target_of,
    typecheck,
)

AGUI = "agui-draft"
ACP = "acp-v2-unstable"


def _mentions(diagnostics: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The diagnostics about ``text`` (in their subject, path or message)."""
    return [
        d for d in diagnostics if any(text in (d[k] or "") for k in ("subject", "path", "message"))
    ]


def _message(result: dict[str, Any], message_id: str) -> dict[str, Any] | None:
    for message in result["messages"] or []:
        if message.get("id") == message_id:
            found: dict[str, Any] = message
            return found
    return None


# ---- the harness itself -------------------------------------------------------------------


@pytest.mark.parametrize("source_name", [AGUI, ACP])
def test_unedited_copy_regenerates_the_sealed_module(source_name: str, tmp_path: Path) -> None:
    """The harness regenerates the sealed modules from an unedited copy (overlay applied).

    Only the provenance differs: the header and the stamp name the copy's sha256. This
    is what makes every other case's outcome the effect of its edit, not of the harness.
    """
    regen = regenerate(source_name, pinned_schema(source_name), tmp_path)
    pinned_sha = SOURCES[source_name].sha256
    module = regen.expect_module()
    sealed_module = ROOT / target_of(source_name)
    made_paths = sealed_paths(module)
    assert [p.name for p in made_paths] == [p.name for p in sealed_paths(sealed_module)]
    for made in made_paths:
        sealed_path = sealed_module.parent / made.relative_to(module.parent)
        fresh = made.read_text(encoding="utf-8").split("\n", 1)
        sealed = sealed_path.read_text(encoding="utf-8").split("\n", 1)
        assert regen.source.sha256 in fresh[0]
        assert fresh[1].count(regen.source.sha256) == sealed[1].count(pinned_sha) == 1  # stamp
        assert fresh[1].replace(regen.source.sha256, pinned_sha) == sealed[1]


# ---- AG-UI: new event type, new optional field, new enum value (one regeneration) ---------


def _add_agui_changes(schema: dict[str, Any]) -> dict[str, Any]:
    """Four independent upstream changes to the AG-UI schema, in one copy.

    A ``PROGRESS`` event, ``TextMessageStartEvent.priority``, a ``narrator`` text role and
    ``RawEvent.source`` renamed ``origin``; no case's stream uses another case's change.
    """
    d = defs(schema)
    assert "PROGRESS" not in d["EventType"]["enum"]
    d["EventType"]["enum"].append("PROGRESS")
    d["ProgressEvent"] = {
        "$anchor": "ProgressEvent",
        "type": "object",
        "allOf": [{"$ref": "#/$defs/BaseEvent"}, {"$ref": "#/$defs/Attributable"}],
        "properties": {"type": {"const": "PROGRESS"}, "progress": {"type": "number"}},
        "required": ["type", "progress"],
        "unevaluatedProperties": False,
    }
    d["Event"]["oneOf"].append({"$ref": "#/$defs/ProgressEvent"})
    raw = d["RawEvent"]["properties"]
    raw["origin"] = raw.pop("source")
    start = d["TextMessageStartEvent"]["properties"]
    assert "priority" not in start
    start["priority"] = {"type": "integer"}
    assert "narrator" not in d["TextMessageRole"]["enum"]
    d["TextMessageRole"]["enum"].append("narrator")
    return schema


@pytest.fixture(scope="module")
def agui_additions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("agui-additions")
    regen = regenerate(AGUI, _add_agui_changes(pinned_schema(AGUI)), work)
    return probe(runtime_tree(work, regen), "agui_additions")


def test_new_agui_event_type_passes_with_a_diagnostic(agui_additions: dict[str, Any]) -> None:
    """A new event type in the schema is known: delivered with a diagnostic, and the run succeeds.

    The regenerated converter parses ``PROGRESS``; the verifier and the reducer have no rule
    for it, so they pass it on, report that nothing applied it, and never raise.
    """
    result = agui_additions["new_event_type"]
    assert result["parse_error"] is None
    assert result["parsed_class"] == "ProgressEvent"
    assert result["error"] is None, f"consuming the stream raised {result['error']}"
    assert "PROGRESS" in result["delivered"]
    assert _mentions(result["diagnostics"], "PROGRESS"), result["diagnostics"]
    assert result["runs"] == ["succeeded"]
    message = _message(result, "m1")
    assert message is not None and message["content"] == "hi"
    assert result["reducer_error"] is None, f"Conversation.apply raised {result['reducer_error']}"
    assert _mentions(result["reducer_diagnostics"], "PROGRESS")


def test_new_optional_agui_field_is_kept_without_diagnostic(
    agui_additions: dict[str, Any],
) -> None:
    """A new optional field is parsed, kept and dumped, and is no tolerated problem."""
    result = agui_additions["new_field"]
    assert result["parse_error"] is None
    assert result["kept"] == {"priority": 7}
    assert result["dump_error"] is None
    assert result["dumped"] == {"type": "TEXT_MESSAGE_START", "messageId": "m1", "priority": 7}
    assert result["error"] is None, f"consuming the stream raised {result['error']}"
    assert _mentions(result["diagnostics"], "priority") == []
    assert result["runs"] == ["succeeded"]
    message = _message(result, "m1")
    assert message is not None and message["content"] == "hi"


def test_new_enum_value_message_is_kept(agui_additions: dict[str, Any]) -> None:
    """A message with a new ``TextMessageRole`` value is kept, never dropped.

    Once in the schema the value is known, so the message is kept with it. The one other
    acceptable reading is the spec's rule for an unknown value in an optional position:
    the value is stripped with a diagnostic naming it and the absent role means
    ``assistant``; the message itself is kept either way.
    """
    result = agui_additions["new_role"]
    assert result["error"] is None, f"consuming the stream raised {result['error']}"
    assert result["runs"] == ["succeeded"]
    assert result["messages_error"] is None
    message = _message(result, "m1")
    assert message is not None, (
        f"the message with role 'narrator' was dropped; diagnostics: {result['diagnostics']}"
    )
    assert message["content"] == "once"
    if message["role"] != "narrator":
        assert message["role"] == "assistant"
        assert _mentions(result["diagnostics"], "narrator")
    assert result["typed_messages_error"] is None, (
        f"reading Conversation.messages raised {result['typed_messages_error']}"
    )


# ---- AG-UI: a renamed field ---------------------------------------------------------------


def test_renamed_field_the_runtime_does_not_read_needs_no_edit(
    agui_additions: dict[str, Any],
) -> None:
    """``RawEvent.source`` renamed ``origin``: no rule reads it, so no edit and the new name works.

    The runtime is generic for this field (wire names come from the generated classes):
    ``origin`` is parsed, kept and dumped with no diagnostic, and the old ``source`` is now
    an unknown property, stripped with a diagnostic naming it (the spec's rule).
    """
    result = agui_additions["renamed_generic_field"]
    assert result["parse_error"] is None
    assert result["dump_error"] is None
    assert result["dumped"] == {"type": "RAW", "event": {"k": 1}, "origin": "vendor"}
    assert result["error"] is None, f"consuming the stream raised {result['error']}"
    assert result["delivered"].count("RAW") == 2
    assert _mentions(result["diagnostics"], "origin") == []
    assert _mentions(result["diagnostics"], "source"), result["diagnostics"]
    assert result["runs"] == ["succeeded"]


_TEXT_EVENTS = (
    "TextMessageStartEvent",
    "TextMessageContentEvent",
    "TextMessageEndEvent",
    "TextMessageChunkEvent",
)


def _rename_message_id(schema: dict[str, Any]) -> dict[str, Any]:
    """Upstream renames ``messageId`` to ``msgId`` on every ``TEXT_MESSAGE_*`` event."""
    d = defs(schema)
    for name in _TEXT_EVENTS:
        definition = d[name]
        definition["properties"]["msgId"] = definition["properties"].pop("messageId")
        definition["required"] = [
            "msgId" if r == "messageId" else r for r in definition.get("required", [])
        ]
    return schema


@pytest.fixture(scope="module")
def agui_rename(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("agui-rename")
    regen = regenerate(AGUI, _rename_message_id(pinned_schema(AGUI)), work)
    if regen.error is not None:
        return {"regen": regen, "typecheck": None, "probe": None}
    tree = runtime_tree(work, regen)
    result = probe(tree, "agui_rename", allow_import_error=True)
    return {"regen": regen, "typecheck": typecheck(tree), "probe": result}


def test_renamed_agui_field_fails_loudly_at_the_runtime_site(agui_rename: dict[str, Any]) -> None:
    """``messageId`` renamed on the text events: mypy names the runtime sites to edit.

    The rename itself is no codegen matter (AG-UI has no overlay; the class simply gets a
    ``msg_id`` field), but the text-message rules (one open message per id, content
    appended to its message) are hand-written around that id, and no generic rule can
    know ``msgId`` is the old ``messageId``. So the loud failure is the typecheck run after
    regeneration, naming each runtime line that reads ``message_id`` from a text event
    (a runtime that refuses to import, naming the field, is as loud). A runtime that
    handles ``msgId`` correctly (the message is built) passes too; one that mishandles it
    while the typecheck passes is green with changed behaviour.
    """
    regen: Regen = agui_rename["regen"]
    if regen.error is not None:
        assert "messageId" in regen.error or "msgId" in regen.error, regen.error
        return
    if "import_error" in agui_rename["probe"]:
        # a runtime that checks the generated fields it relies on when imported
        failure = agui_rename["probe"]["import_error"]
        assert re.search(r"message_?[iI]d", failure["message"]), failure
        return
    result = agui_rename["probe"]["renamed_field"]
    message = _message(result, "m1")
    correct = result["error"] is None and message is not None and message["content"] == "hi"
    if correct:
        return
    checked = agui_rename["typecheck"]
    if checked is None:
        pytest.skip("mypy is not installed here; run `nox -s typecheck` once to create it")
    errors = [line for line in checked.runtime_errors() if "message_id" in line]
    assert checked.status != 0 and errors, (
        "the runtime mishandles the renamed field "
        f"(error {result['error']}, messages {result['messages']}) and mypy does not name "
        f"a runtime site reading 'message_id':\n{checked.output[-3000:]}"
    )
    assert all(re.match(r"^\S*agentproto/\S+\.py:\d+", line) for line in errors), errors


# ---- ACP: a new session/update kind and a new open-enum value (one regeneration) ----------


def _add_acp_changes(schema: dict[str, Any]) -> dict[str, Any]:
    """Upstream adds a ``review_update`` kind and a ``review`` tool kind.

    The new kind's payload has no nullable field, so the overlay has nothing to classify
    and the change stays independent of the patch-field rules (tested apart below).
    """
    d = defs(schema)
    assert "ReviewUpdate" not in d
    d["ReviewUpdate"] = {
        "type": "object",
        "properties": {"reviewId": {"type": "string"}, "verdict": {"type": "string"}},
        "required": ["reviewId"],
    }
    members = d["SessionUpdate"]["anyOf"]
    other = members[-1]
    assert other.get("title") == "other"
    tag = {
        "type": "object",
        "properties": {"sessionUpdate": {"type": "string", "const": "review_update"}},
        "required": ["sessionUpdate"],
    }
    members.insert(len(members) - 1, {**tag, "allOf": [{"$ref": "#/$defs/ReviewUpdate"}]})
    other["not"]["anyOf"].append(copy.deepcopy(tag))
    kinds = d["ToolKind"]["anyOf"]
    assert kinds[-1].get("title") == "unknown"
    assert all(k.get("const") != "review" for k in kinds)
    kinds.insert(len(kinds) - 1, {"type": "string", "const": "review"})
    return schema


@pytest.fixture(scope="module")
def acp_additions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("acp-additions")
    regen = regenerate(ACP, _add_acp_changes(pinned_schema(ACP)), work)
    return probe(runtime_tree(work, regen), "acp_additions")


_REVIEW = {"sessionUpdate": "review_update", "reviewId": "rev-evolution-1", "verdict": "approved"}


def test_new_session_update_kind_is_tolerated(acp_additions: dict[str, Any]) -> None:
    """A new ``sessionUpdate`` kind is kept with a diagnostic, like an unknown kind, never raised.

    Parsed into its new class, it has no rule in the session fold, so the fold takes the
    path of an unknown kind: the update is kept whole and reported, in a bare
    ``SessionState`` and through a ``SessionStore``, strict or tolerant.
    """
    result = acp_additions["new_kind"]
    assert result["parse_error"] is None
    assert result["dumped"] == _REVIEW
    assert result["apply_error"] is None, f"SessionState.apply raised {result['apply_error']}"
    assert _mentions(result["apply_diagnostics"], "review_update"), result["apply_diagnostics"]
    assert result["apply_kept"]
    for mode in ("strict", "tolerant"):
        assert result[f"store_{mode}_error"] is None, result[f"store_{mode}_error"]
        assert _mentions(result[f"store_{mode}_diagnostics"], "review_update")
        assert result[f"store_{mode}_kept"], result[f"store_{mode}_diagnostics"]


def test_new_open_enum_value_is_kept_as_sent(acp_additions: dict[str, Any]) -> None:
    """A new ``ToolKind`` value is kept as sent; only a kind the schema lacks shows as ``other``.

    ``ToolKind`` is open: any string is valid, and a kind a client does not know is
    displayed as ``other``. After regeneration the new value is a kind ACP defines, so it
    is kept and displayed as sent, with no hand edit; a kind still absent from the
    schema is kept as sent and displayed as ``other``.
    """
    result = acp_additions["open_enum"]
    review, teleport = result["review"], result["teleport"]
    for entry in (review, teleport):
        assert entry["parse_error"] is None
        assert entry["apply_error"] is None
    assert (review["kind"], review["dumped_kind"]) == ("review", "review")
    assert review["display_kind"] == "review"
    assert (teleport["kind"], teleport["dumped_kind"]) == ("teleport", "teleport")
    assert teleport["display_kind"] == "other"


# ---- ACP: changes the overlay must catch --------------------------------------------------


def _tool_call_update(schema: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = defs(schema)["ToolCallUpdate"]["properties"]
    return found


def _regen_acp(tmp_path: Path, schema: dict[str, Any]) -> str:
    return regenerate(ACP, schema, tmp_path).expect_failure()


def test_patch_field_type_change_names_overlay_entry_and_pointer(tmp_path: Path) -> None:
    """``ToolCallUpdate.title`` no longer admits null: generation fails naming the entry.

    The overlay's claim (``title`` is a three-state patch field) needs ``null``; the
    message names the overlay file, the entry (class and property) and the schema
    pointer that changed.
    """
    schema = pinned_schema(ACP)
    title = _tool_call_update(schema)["title"]
    assert title["type"] == ["string", "null"]
    title["type"] = "string"
    error = _regen_acp(tmp_path, schema)
    assert overlay_file(ACP) in error, error
    assert "ToolCallUpdate" in error and "title" in error, error
    assert "/$defs/ToolCallUpdate/properties/title" in error, error


def test_renamed_patch_field_names_the_overlay_entry(tmp_path: Path) -> None:
    """An overlay-marked patch field renamed upstream (``title`` → ``label``) fails loudly.

    The overlay classifies ``ToolCallUpdate.title``, which no longer exists: the claim is
    stale and no generic rule may carry it over to ``label``, so generation stops naming
    the overlay file and the stale entry (and may name the unclassified ``label`` too).
    """
    schema = pinned_schema(ACP)
    properties = _tool_call_update(schema)
    properties["label"] = properties.pop("title")
    error = _regen_acp(tmp_path, schema)
    assert overlay_file(ACP) in error, error
    assert "ToolCallUpdate" in error and "title" in error, error


def test_unclassified_nullable_field_names_class_property_and_overlay(tmp_path: Path) -> None:
    """A new nullable field on an ACP update class, unclassified, stops generation.

    Whether ``null`` means "clear" (a patch field) or "absent" is what the schema cannot
    say and the overlay must; a nullable field it does not classify is reported with its
    class, property and the overlay file to edit.
    """
    schema = pinned_schema(ACP)
    properties = _tool_call_update(schema)
    assert "progress" not in properties
    properties["progress"] = {"type": ["number", "null"]}
    error = _regen_acp(tmp_path, schema)
    assert overlay_file(ACP) in error, error
    assert "ToolCallUpdate" in error and "progress" in error, error


# ---- ACP: naming ---------------------------------------------------------------------------


def _line_to_add(location: str) -> re.Pattern[str]:
    """A names-file line for a union member (``"Union/3" = …``, pointer form accepted)."""
    union, index = location.split("/")
    return re.compile(rf'"[^"\n]*{union}(?:/anyOf)?/{index}"\s*=')


def test_untagged_union_member_names_the_names_file_and_line(tmp_path: Path) -> None:
    """A union member with no tag and no title stops generation with the names-file line to add."""
    schema = pinned_schema(ACP)
    members = defs(schema)["SessionUpdate"]["anyOf"]
    members.append(
        {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    )
    error = _regen_acp(tmp_path, schema)
    assert names_file_pattern(ACP).search(error), error
    assert _line_to_add(f"SessionUpdate/{len(members) - 1}").search(error), error


def test_taken_name_names_the_names_file(tmp_path: Path) -> None:
    """A new definition taking the name the rule gives a member stops generation.

    Upstream adds ``AgentMessageSessionUpdate``, the name the naming rule gives the
    ``agent_message`` member of ``SessionUpdate``; the message names the taken name, the
    member and the names file where it gets another.
    """
    schema = pinned_schema(ACP)
    d = defs(schema)
    assert "AgentMessageSessionUpdate" not in d
    members = d["SessionUpdate"]["anyOf"]
    index = next(
        i
        for i, m in enumerate(members)
        if m.get("properties", {}).get("sessionUpdate", {}).get("const") == "agent_message"
    )
    d["AgentMessageSessionUpdate"] = {
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
    }
    error = _regen_acp(tmp_path, schema)
    assert "AgentMessageSessionUpdate" in error, error
    assert names_file_pattern(ACP).search(error), error
    assert _line_to_add(f"SessionUpdate/{index}").search(error), error
