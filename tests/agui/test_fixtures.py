"""The upstream AG-UI schema fixtures, read from the spec mirror.

Valid documents must round-trip exactly (``dump(parse(doc))`` is ``doc``); invalid
ones must be rejected in strict mode with exactly the ``keyword`` and
``instanceLocation`` their ``.expect.json`` names.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentproto import SchemaError
from agentproto.agui import make_converter, schema
from tests.jsonsame import same_json
from tests.needs import find_spec, spec_params

PREFIX = "agui/draft/fixtures"
CONVERTER = make_converter()
pytestmark = pytest.mark.spec(PREFIX)


def _cases() -> list[tuple[str, str, Path]]:
    root = find_spec(PREFIX)
    if root is None:
        return []  # every test here is marked: they skip, saying why
    cases = []
    for path in sorted((root / PREFIX).glob("*/*/*.json")):
        if path.name.endswith(".expect.json"):
            continue
        definition, kind = path.parts[-3], path.parts[-2]
        cases.append((definition, kind, path))
    return cases


CASES = _cases()
PARAMS = spec_params(
    lambda _: [pytest.param(d, k, p, id=f"{d}/{k}/{p.stem}") for d, k, p in CASES], PREFIX, width=3
)


def check(definition: str, kind: str, path: Path) -> str | None:
    """None when the fixture behaves as filed, else why not."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    target: Any = getattr(schema, definition)
    if kind == "valid":
        try:
            dumped = CONVERTER.dump(CONVERTER.load(doc, target))
        except SchemaError as exc:
            return f"valid document rejected: {exc}"
        return None if same_json(dumped, doc) else f"round trip changed it: {dumped!r}"
    expect = json.loads(path.with_suffix("").with_suffix(".expect.json").read_text())
    try:
        CONVERTER.load(doc, target)
    except SchemaError as exc:
        got = (exc.keyword, exc.location)
        want = (expect["keyword"], expect["instanceLocation"])
        return None if got == want else f"rejected with {got}, expected {want}"
    return "invalid document accepted"


def test_fixture_folder_has_documents() -> None:
    """The mirror holds the fixture set this suite is written for (valid and invalid)."""
    kinds = {kind for _, kind, _ in CASES}
    assert kinds == {"valid", "invalid"}
    assert len(CASES) >= 177


@pytest.mark.parametrize(("definition", "kind", "path"), PARAMS)
def test_fixture(definition: str, kind: str, path: Path) -> None:
    """Each fixture is accepted and round-trips, or is rejected exactly as filed."""
    problem = check(definition, kind, path)
    assert problem is None, problem


def test_fixture_summary() -> None:
    """All fixtures pass; prints the `fixtures: N passed, M failed` line."""
    failures = [(p, why) for d, k, p in CASES if (why := check(d, k, p)) is not None]
    line = f"fixtures: {len(CASES) - len(failures)} passed, {len(failures)} failed"
    print(line)
    print(line, file=sys.stderr)
    assert not failures, failures
