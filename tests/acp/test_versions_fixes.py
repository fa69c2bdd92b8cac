"""v1 ↔ v2 adapters, checked against the official v1 SDK: diffs, slash commands, the ``main``
plan, terminals, withheld kinds and message metadata v1 cannot hold."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto import UsageError
from agentproto.acp import (
    SessionState,
    V1ToV2Adapter,
    V2ToV1Adapter,
    dump_session_update,
    schema,
    schema_v1,
)
from agentproto.acp._relay.content import terminal_text
from agentproto.acp._relay.gitpatch import make_patch, read_sections, whole_texts
from agentproto.acp._relay.versions import V1_KINDS
from tests.acp.acp_updates import updates
from tests.acp.test_convert_v1_v2 import V1, v1, v2


def to_v2(adapter: V1ToV2Adapter, obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [dump_session_update(u) for u in adapter.convert(v1(obj))]


def to_v1(adapter: V2ToV1Adapter, obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [V1.dump(u) for u in adapter.convert(v2(obj))]


def codes(adapter: V1ToV2Adapter | V2ToV1Adapter) -> list[str]:
    return [d.code for d in adapter.diagnostics]


def call(**members: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit", **members}


def text_item(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


EDIT = {"type": "diff", "path": "/w/a.txt", "oldText": "one\ntwo\n", "newText": "one\n2\n"}
CREATE = {"type": "diff", "path": "/w/new.txt", "newText": "hello"}

# ---- 1. diffs --------------------------------------------------------------------------------


def test_v1_edit_diff_becomes_a_v2_diff_with_changes_and_a_git_patch() -> None:
    """A v1 diff (path, oldText, newText) becomes a v2 diff: a ``modify`` change and the
    file's whole text as a ``git_patch``; nothing is reported."""
    adapter = V1ToV2Adapter()
    (out,) = to_v2(adapter, call(content=[EDIT]))
    assert out["content"] == [
        {
            "type": "diff",
            "changes": [{"operation": "modify", "path": "/w/a.txt", "fileType": "text"}],
            "patch": {
                "format": "git_patch",
                "text": "diff --git /w/a.txt /w/a.txt\n--- /w/a.txt\n+++ /w/a.txt\n"
                "@@ -1,2 +1,2 @@\n one\n-two\n+2\n",
            },
        }
    ]
    assert adapter.diagnostics == []


def test_v1_diff_without_old_text_is_an_added_file() -> None:
    """A v1 diff with no ``oldText`` creates the file: an ``add`` change and a creation patch."""
    (out,) = to_v2(V1ToV2Adapter(), call(content=[CREATE]))
    (item,) = out["content"]
    assert item["changes"] == [{"operation": "add", "path": "/w/new.txt", "fileType": "text"}]
    assert item["patch"]["text"] == (
        "diff --git /w/new.txt /w/new.txt\nnew file mode 100644\n--- /dev/null\n"
        "+++ /w/new.txt\n@@ -0,0 +1,1 @@\n+hello\n\\ No newline at end of file\n"
    )


def test_a_v1_diff_no_longer_clears_the_tool_calls_content() -> None:
    """A v1 update whose content is a diff leaves the v2 client holding that diff, not ``[]``."""
    adapter = V1ToV2Adapter()
    state = SessionState()
    for obj in [
        call(content=[text_item("thinking")]),
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [EDIT]},
    ]:
        for update in adapter.convert(v1(obj)):
            state.apply(update)
    (item,) = state.tool_calls["c1"].content
    assert item.changes[0].path == "/w/a.txt"


def _git_apply(folder: Path) -> None:
    """``git apply`` of ``folder/p.patch`` there, outside any repository (a temporary
    folder may lie inside one, e.g. a nox session's, where git would apply relative to
    that repository's root)."""
    subprocess.run(
        ["git", "apply", "--unsafe-paths", "-p0", str(folder / "p.patch")],
        cwd=folder,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(folder.parent)},
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("x", "y"),
        ("", "q\n"),
        ("a\n", ""),
        ("same\n", "same\n"),
        ("crlf\r\nx\r\n", "crlf\r\ny\r\n"),
        ("a\rb\x0cc\u2028d\n", "a\rB\x0cc\u2028d\n"),
    ],
)
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_applies_the_patch_a_v1_diff_becomes(tmp_path: Path, old: str, new: str) -> None:
    """Git itself applies the patch text made from a v1 diff and gets the new text."""
    target = tmp_path / "dir with space" / "f é.txt"
    target.parent.mkdir()
    target.write_bytes(old.encode())
    patch = make_patch(str(target), old, new)
    if old == new:
        assert patch is None
        return
    assert patch is not None
    (tmp_path / "p.patch").write_bytes(patch.encode())
    _git_apply(tmp_path)
    assert target.read_bytes() == new.encode()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_applies_a_creation_patch(tmp_path: Path) -> None:
    """A creation patch made from a v1 diff without ``oldText`` creates the file under git."""
    target = tmp_path / "made.txt"
    (tmp_path / "p.patch").write_text(make_patch(str(target), None, "a\nb") or "")
    _git_apply(tmp_path)
    assert target.read_text() == "a\nb"


@pytest.mark.parametrize("item", [EDIT, CREATE, {**EDIT, "oldText": "", "_meta": {"k": 1}}])
def test_v1_diff_survives_the_round_trip_through_v2(item: dict[str, Any]) -> None:
    """v1 diff → v2 diff → v1 diff gives the same path, texts and ``_meta`` back."""
    (as_v2,) = V1ToV2Adapter().convert(v1(call(content=[item])))
    back = V2ToV1Adapter()
    (out,) = [V1.dump(u) for u in back.convert(as_v2)]
    assert out["content"] == [item]
    assert back.diagnostics == []


def test_v2_diff_v1_cannot_show_as_a_diff_is_sent_as_text_and_reported() -> None:
    """A v2 diff that does not carry whole files (a move, a patch with partial context) reaches
    v1 as text content holding the patch, with a ``lossy-conversion`` diagnostic."""
    partial = "diff --git /w/a /w/a\n--- /w/a\n+++ /w/a\n@@ -7,2 +7,2 @@\n x\n-y\n+z\n"
    adapter = V2ToV1Adapter()
    (out,) = to_v1(
        adapter,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "content": [
                {
                    "type": "diff",
                    "changes": [{"operation": "modify", "path": "/w/a"}],
                    "patch": {"format": "git_patch", "text": partial},
                },
                {"type": "diff", "changes": [{"operation": "move", "oldPath": "/a", "path": "/b"}]},
            ],
        },
    )
    assert out["content"] == [text_item(partial), text_item("move /a -> /b")]
    assert codes(adapter) == ["lossy-conversion", "lossy-conversion"]


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("meta", [{"a": 2**70}, {"a": _nested(300)}], ids=["big-int", "deep"])
def test_v2_content_holding_values_orjson_cannot_encode_converts(meta: Any) -> None:
    """A diff item whose ``_meta`` holds an integer beyond 64 bits or nests deeper than
    orjson encodes converts, its loss reported once (it was a TypeError from orjson)."""
    adapter = V2ToV1Adapter()
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "content": [{"type": "diff", "changes": [], "_meta": meta}],
    }
    to_v1(adapter, update)
    to_v1(adapter, update)
    assert codes(adapter) == ["lossy-conversion"]


def test_a_malformed_patch_is_read_as_nothing() -> None:
    """Patch text that is not a git patch reads as ``None``; a hunk shorter than its header
    says is malformed too; neither raises."""
    assert read_sections("garbage\n") is None
    assert read_sections("diff --git /a /a\n--- /a\n+++ /a\n@@ -1,3 +1,3 @@\n x\n") is None
    (section,) = read_sections("diff --git /a /a\ndeleted file mode 100644\n") or []
    assert whole_texts(section) is None


# ---- 2. slash commands -----------------------------------------------------------------------


COMMANDS_V1 = {
    "sessionUpdate": "available_commands_update",
    "availableCommands": [
        {"name": "plan", "description": "Make a plan", "input": {"hint": "what to plan"}},
        {"name": "clear", "description": "Clear", "_meta": {"k": 1}},
    ],
}


def test_v1_slash_commands_get_the_v2_command_type() -> None:
    """Every v1 command reaches v2 with ``type: "command"`` (its input with ``type: "text"``),
    none is dropped."""
    adapter = V1ToV2Adapter()
    (out,) = to_v2(adapter, COMMANDS_V1)
    assert out["availableCommands"] == [
        {
            "type": "command",
            "name": "plan",
            "description": "Make a plan",
            "input": {"type": "text", "hint": "what to plan"},
        },
        {"type": "command", "name": "clear", "description": "Clear", "_meta": {"k": 1}},
    ]
    assert adapter.diagnostics == []


def test_v2_commands_lose_their_type_in_v1_and_unknown_kinds_are_reported() -> None:
    """v2 → v1 strips the command and input types; a command of a kind v1 lacks is dropped with
    a diagnostic, an input of a kind v1 lacks is left out with one."""
    (as_v2,) = V1ToV2Adapter().convert(v1(COMMANDS_V1))
    assert [V1.dump(u) for u in V2ToV1Adapter().convert(as_v2)] == [COMMANDS_V1]
    adapter = V2ToV1Adapter()
    (out,) = to_v1(
        adapter,
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"type": "_macro", "name": "m", "description": "M"},
                {"type": "command", "name": "c", "description": "C", "input": {"type": "_form"}},
            ],
        },
    )
    assert out["availableCommands"] == [{"name": "c", "description": "C"}]
    assert codes(adapter) == ["not-convertible", "not-convertible"]


# ---- 3. the main plan ------------------------------------------------------------------------

ENTRIES = [{"content": "a", "priority": "high", "status": "pending"}]


def test_v1_plan_is_the_v2_plan_main_and_back() -> None:
    """A v1 plan becomes the v2 plan ``main``; that plan, updated or removed, goes back to v1 as
    a ``plan`` (removal as an empty one); any other plan stays a ``plan_update``."""
    (out,) = to_v2(V1ToV2Adapter(), {"sessionUpdate": "plan", "entries": ENTRIES})
    assert out["plan"]["planId"] == "main"
    adapter = V2ToV1Adapter()
    main = {"type": "items", "planId": "main", "entries": ENTRIES}
    assert to_v1(adapter, {"sessionUpdate": "plan_update", "plan": main, "_meta": {"k": 1}}) == [
        {"sessionUpdate": "plan", "entries": ENTRIES, "_meta": {"k": 1}}
    ]
    assert to_v1(adapter, {"sessionUpdate": "plan_removed", "planId": "main"}) == [
        {"sessionUpdate": "plan", "entries": []}
    ]
    other = {"sessionUpdate": "plan_update", "plan": {**main, "planId": "side"}}
    assert to_v1(adapter, other) == [other]


# ---- 4. terminals ----------------------------------------------------------------------------

TERMINAL = {"type": "terminal", "terminalId": "t1"}


def test_v1_terminal_content_is_not_taken_for_a_v2_terminal() -> None:
    """A v1 terminal (client-owned) is never sent as a v2 terminal (agent-owned): it is left
    out with a diagnostic naming it, and the rest of the content is kept."""
    adapter = V1ToV2Adapter()
    (out,) = to_v2(adapter, call(content=[text_item("run"), TERMINAL]))
    assert out["content"] == [text_item("run")]
    assert codes(adapter) == ["not-convertible"]
    assert "'t1'" in adapter.diagnostics[0].message


def test_stateful_v2_to_v1_shows_a_terminal_as_its_transcript() -> None:
    """Stateful, a v2 terminal in tool call content reaches v1 as text: its output, decoded and
    cleaned; each output chunk resends the tool call's content."""
    adapter = V2ToV1Adapter()
    first = to_v1(
        adapter,
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [TERMINAL]},
    )
    assert first[0]["content"] == [text_item("")]
    data = base64.b64encode("\x1b[32mok\x1b[0m é".encode()).decode()
    (later,) = to_v1(
        adapter, {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": data}
    )
    assert later == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "content": [text_item("ok é")],
    }
    assert adapter.diagnostics == []


def test_a_loss_is_reported_once_per_entity_not_on_every_resend() -> None:
    """A tool call showing a diff v1 cannot hold and a terminal: every output chunk resends the
    whole content, the diff lost again, but reported once; the same diff in another tool call,
    or another lost diff in the same one, is a loss of its own."""
    moved = {"type": "diff", "changes": [{"operation": "move", "oldPath": "/a", "path": "/b"}]}
    deleted = {"type": "diff", "changes": [{"operation": "delete", "path": "/c"}]}
    adapter = V2ToV1Adapter()
    update = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [moved, TERMINAL]}
    to_v1(adapter, update)
    chunk = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "aGk="}
    resent = [to_v1(adapter, chunk) for _ in range(3)]
    assert [out[0]["content"] for out in resent] == [
        [text_item("move /a -> /b"), text_item("hi" * n)] for n in (1, 2, 3)
    ]
    assert codes(adapter) == ["lossy-conversion"]
    to_v1(adapter, update | {"toolCallId": "c2"})
    to_v1(adapter, update | {"content": [moved, deleted, TERMINAL]})
    assert codes(adapter) == ["lossy-conversion"] * 3


def test_a_v1_terminal_loss_is_reported_once_per_tool_call() -> None:
    """A v1 agent resends a tool call's content, a client terminal in it, on every update:
    the terminal is left out each time but reported once per tool call; another terminal,
    or the same one in another tool call, is reported again."""
    terminal = {"type": "terminal", "terminalId": "term-1"}
    adapter = V1ToV2Adapter()
    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "Run tests",
        "content": [terminal],
    }
    to_v2(adapter, update)
    for status in ("in_progress", "in_progress", "completed"):
        resent = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": status}
        (out,) = to_v2(adapter, resent | {"content": [terminal]})
        assert out["content"] == []
    assert codes(adapter) == ["not-convertible"]
    to_v2(adapter, update | {"toolCallId": "c2"})
    other = {"type": "terminal", "terminalId": "term-2"}
    to_v2(adapter, {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [other]})
    assert codes(adapter) == ["not-convertible"] * 3


def test_terminal_traffic_no_tool_call_shows_is_reported() -> None:
    """A terminal update for a terminal no tool call shows yet cannot reach v1: reported."""
    adapter = V2ToV1Adapter()
    assert to_v1(adapter, {"sessionUpdate": "terminal_update", "terminalId": "t9"}) == []
    assert codes(adapter) == ["not-convertible"]


def test_stateless_v2_to_v1_rejects_terminal_content() -> None:
    """Stateless, a v2 terminal in tool call content is left out with a diagnostic."""
    adapter = V2ToV1Adapter(stateful=False)
    (out,) = to_v1(
        adapter,
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "content": [TERMINAL, text_item("x")],
        },
    )
    assert out["content"] == [text_item("x")]
    assert codes(adapter) == ["not-convertible"]


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"\x1b[1;31mred\x1b[0m\n", "red\n"),
        (b"10%\r50%\r100%\r\ndone\n", "100%\ndone\n"),
        (b"\x1b]0;title\x07ok\x08!\n", "ok!\n"),
        (b"bad \xff byte\tx", "bad \ufffd byte\tx"),
        (None, ""),
    ],
)
def test_terminal_bytes_become_plain_text(raw: bytes | None, text: str) -> None:
    """Escape sequences and control characters are removed, a carriage return overwrites the
    line, invalid UTF-8 is replaced."""
    assert terminal_text(None if raw is None else bytearray(raw)) == text


def test_a_multibyte_character_split_across_chunks_is_decoded_whole() -> None:
    """Chunks are joined as bytes before decoding, so a split UTF-8 sequence stays one char."""
    adapter = V2ToV1Adapter()
    to_v1(adapter, {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [TERMINAL]})
    raw = "é".encode()
    for part in (raw[:1], raw[1:]):
        data = base64.b64encode(part).decode()
        (out,) = to_v1(
            adapter, {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": data}
        )
    assert out["content"] == [text_item("é")]


# ---- 5. withheld kinds -----------------------------------------------------------------------

COMPACTION = {"sessionUpdate": "compaction_update", "compactionId": "k", "status": "in_progress"}


def test_kinds_an_older_v1_peer_lacks_are_withheld_one_diagnostic_each() -> None:
    """With ``peer_kinds``, a converted update of another kind is not sent: one ``withheld``
    diagnostic per update."""
    adapter = V2ToV1Adapter(peer_kinds=V1_KINDS - {"compaction_update"})
    assert to_v1(adapter, COMPACTION) == []
    assert to_v1(adapter, {**COMPACTION, "status": "completed"}) == []
    assert codes(adapter) == ["withheld", "withheld"]
    assert to_v1(V2ToV1Adapter(), COMPACTION) != []


def test_peer_kinds_must_be_v1_kinds() -> None:
    """Naming a kind the v1 schema lacks is a usage error."""
    with pytest.raises(UsageError):
        V2ToV1Adapter(peer_kinds={"terminal_update"})


# ---- 6. message metadata ---------------------------------------------------------------------


def test_message_metadata_v1_cannot_hold_is_reported() -> None:
    """A v2 message upsert carrying only ``_meta`` sends nothing to v1, and says why."""
    adapter = V2ToV1Adapter()
    assert to_v1(adapter, {"sessionUpdate": "agent_message", "messageId": "m", "_meta": {}}) == []
    assert codes(adapter) == ["lossy-conversion"]
    assert "_meta" in adapter.diagnostics[0].message


def test_clearing_message_fields_v1_never_held_is_no_loss() -> None:
    """A message upsert whose ``_meta`` is ``null`` (a replay that knows no metadata) clears
    what v1 never held: its content goes out, and no loss is reported."""
    adapter = V2ToV1Adapter()
    update = {"sessionUpdate": "agent_message", "messageId": "m", "_meta": None}
    sent = to_v1(adapter, {**update, "content": [{"type": "text", "text": "hi"}]})
    assert len(sent) == 1
    assert codes(adapter) == []


# ---- the official v1 SDK accepts what V2ToV1Adapter sends ------------------------------------

SESSION = [
    {"sessionUpdate": "user_message", "messageId": "u", "content": [{"type": "text", "text": "q"}]},
    {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "m",
        "content": {"type": "text", "text": "a"},
    },
    {
        "sessionUpdate": "agent_thought",
        "messageId": "th",
        "content": [{"type": "text", "text": "t"}],
    },
    {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Edit", "kind": "edit"},
    {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "status": "paused",
        "content": [
            text_item("x"),
            TERMINAL,
            {
                "type": "diff",
                "changes": [{"operation": "add", "path": "/w/n"}],
                "patch": {"format": "git_patch", "text": make_patch("/w/n", None, "n\n")},
            },
            {"type": "diff", "changes": [{"operation": "delete", "path": "/w/d"}]},
        ],
        "_meta": {"a": 1},
    },
    {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c", "content": text_item("y")},
    {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "ls"},
    {"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "aGk="},
    {
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": "main", "entries": ENTRIES},
    },
    {
        "sessionUpdate": "plan_update",
        "plan": {"type": "markdown", "planId": "p2", "content": "# P"},
    },
    {"sessionUpdate": "plan_removed", "planId": "p2"},
    {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [
            {
                "type": "command",
                "name": "c",
                "description": "C",
                "input": {"type": "text", "hint": "h"},
            }
        ],
    },
    {"sessionUpdate": "session_info_update", "title": "T", "_meta": {"k": None}},
    {"sessionUpdate": "usage_update", "used": 1, "size": 10},
    COMPACTION,
    {"sessionUpdate": "subagent_update", "sessionId": "child"},
    {"sessionUpdate": "session_message", "messageId": "sm"},
    {"sessionUpdate": "state_update", "state": "idle"},
    {"sessionUpdate": "notice", "severity": "info", "title": "T", "message": "hi"},
    {"sessionUpdate": "_vendor_thing", "x": 1},
]


def _sdk_kinds(acp_schema: Any) -> frozenset[str]:
    """The ``sessionUpdate`` tags the v1 SDK's notification model accepts."""
    union = acp_schema.SessionNotification.model_fields["update"].annotation
    tags = set()
    for member in typing.get_args(union):
        (tag,) = typing.get_args(member.model_fields["session_update"].annotation)
        tags.add(tag)
    return frozenset(tags)


@pytest.mark.parametrize("stateful", [True, False], ids=["stateful", "stateless"])
def test_the_official_v1_sdk_accepts_every_converted_update(stateful: bool) -> None:
    """Every notification V2ToV1Adapter sends, told what the SDK knows, validates against the
    official v1 Python SDK's models; whatever it does not send is reported."""
    acp_schema = pytest.importorskip("acp.schema")
    adapter = V2ToV1Adapter(stateful=stateful, peer_kinds=V1_KINDS & _sdk_kinds(acp_schema))
    sent = 0
    for obj in SESSION:
        before = len(adapter.diagnostics)
        notes = adapter.convert_notification(
            schema.UpdateSessionNotification(session_id="s", update=v2(obj))
        )
        for note in notes:
            acp_schema.SessionNotification.model_validate(V1.dump(note))
            sent += 1
        assert notes or len(adapter.diagnostics) > before, obj
    assert sent > 10 if stateful else sent > 5


# ---- properties ------------------------------------------------------------------------------

lines_of_text = st.lists(
    st.sampled_from(["a", "b", "", " x", "é", "\\", '"', "\t", "\r", "c\rd", "\x0c", "\u2028"]),
    max_size=6,
).map(lambda parts: "\n".join(parts))
paths = st.sampled_from(["/w/a.txt", "/w/sp ace", '/w/q"uote', "/w/é", "/w/tab\there"])


@settings(max_examples=300, deadline=None)
@given(paths, st.none() | lines_of_text, lines_of_text)
def test_a_patch_reads_back_to_the_texts_it_was_made_from(
    path: str, old: str | None, new: str
) -> None:
    """Whatever the texts and path, the patch of a change reads back to the same two texts."""
    patch = make_patch(path, old, new)
    if patch is None:
        assert old == new
        return
    (section,) = read_sections(patch) or []
    assert (section.old_path, section.new_path) == (None if old is None else path, path)
    assert whole_texts(section) == (old, new)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='@-+ \\\n"diff --git/devnul0123456789,', max_size=80))
def test_reading_any_text_as_a_patch_never_raises(text: str) -> None:
    """The patch reader takes any text: sections, or ``None`` for malformed text."""
    sections = read_sections(text)
    for section in sections or ():
        whole_texts(section)


@settings(max_examples=200, deadline=None)
@given(st.lists(updates, max_size=12), st.booleans())
def test_any_v2_updates_reach_v1_as_valid_v1_updates(items: list[Any], stateful: bool) -> None:
    """Whatever v2 updates arrive, V2ToV1Adapter raises nothing, every v1 update it sends loads
    back as v1, and relayed through V1ToV2Adapter it applies to a v2 session."""
    to_old, to_new, state = V2ToV1Adapter(stateful=stateful), V1ToV2Adapter(), SessionState()
    for update in items:
        for old in to_old.convert(update):
            V1.load(V1.dump(old), schema_v1.SessionUpdate)
            for new in to_new.convert(old):
                state.apply(new)
