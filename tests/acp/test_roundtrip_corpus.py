"""Our ACP v2 round-trip corpus: every upsert and chunk kind, null versus absent.

Each file in ``tests/acp/roundtrip`` is one ``session/update`` update. It must be
listed in the folder's MANIFEST.txt, parse strictly, and dump back to the same
JSON. Patch fields keep the difference between omitted (UNSET) and null (None).
"""

from __future__ import annotations

import json
import typing
from pathlib import Path

import attrs
import pytest

from agentproto import SchemaError
from agentproto.acp import UNSET, SessionUpdate, dump_session_update, parse_session_update
from agentproto.acp import schema as acp
from tests.jsonsame import same_json

CORPUS = Path(__file__).parent / "roundtrip"
LISTED = [
    line
    for line in (CORPUS / "MANIFEST.txt").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
]


def _load(name: str) -> typing.Any:
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


def test_manifest_lists_every_file() -> None:
    """A corpus file that is not in the manifest (or a listed file that is missing) fails."""
    on_disk = sorted(p.name for p in CORPUS.glob("*.json"))
    assert sorted(LISTED) == on_disk


def test_every_update_kind_is_covered() -> None:
    """Every known sessionUpdate kind of the schema has at least one corpus document."""
    known = {
        f.default
        for cls in typing.get_args(SessionUpdate)
        for f in attrs.fields(cls)
        if f.name == "session_update" and isinstance(f.default, str)
    }
    covered = {_load(name)["sessionUpdate"] for name in LISTED}
    assert known - covered == set()


@pytest.mark.parametrize("name", LISTED)
def test_roundtrip(name: str) -> None:
    """Parsing then dumping a corpus document gives the same JSON, types included."""
    doc = _load(name)
    assert same_json(dump_session_update(parse_session_update(doc)), doc)


def test_patch_fields_keep_null_and_absent_apart() -> None:
    """An omitted patch field parses as UNSET and a null one as None, and both dump back."""
    cleared = parse_session_update(_load("tool_call_update-clear.json"))
    absent = parse_session_update(_load("tool_call_update-absent.json"))
    assert isinstance(cleared, acp.ToolCallUpdateSessionUpdate)
    assert isinstance(absent, acp.ToolCallUpdateSessionUpdate)
    for field in ("title", "kind", "status", "content", "locations", "capabilities", "meta"):
        assert getattr(cleared, field) is None, field
        assert getattr(absent, field) is UNSET, field
    assert cleared.raw_output is UNSET  # not in the document: omitted, not cleared


def test_inherit_differs_from_empty_directories() -> None:
    """subagent_update keeps additionalDirectories null (inherit) apart from [] (none)."""
    inherit = parse_session_update(_load("subagent_update-inherit.json"))
    empty = parse_session_update(_load("subagent_update-none.json"))
    assert isinstance(inherit, acp.SubagentUpdateSessionUpdate)
    assert isinstance(empty, acp.SubagentUpdateSessionUpdate)
    assert inherit.additional_directories is None
    assert empty.additional_directories == []


def test_unknown_kind_is_kept_whole() -> None:
    """An unknown sessionUpdate kind parses as OtherSessionUpdate with its members kept."""
    update = parse_session_update(_load("unknown-kind.json"))
    assert isinstance(update, acp.OtherSessionUpdate)
    assert update.extra == {"percent": 40}


def test_status_is_not_a_patch_field() -> None:
    """compaction_update.status is required on every update (not three-state)."""
    with pytest.raises(SchemaError) as info:
        parse_session_update({"sessionUpdate": "compaction_update", "compactionId": "k1"})
    assert (info.value.keyword, info.value.location) == ("required", "")
