"""The sealed rules module of the ACP v2 classes module: every derived upsert rule, written out.

Theory of operation. An ACP upsert rule (how a ``tool_call_update`` patches the tool
call a client keeps) is straight-line code over the fields of its class, derived
from the entity kind's description (``sdk/agentproto/acp/_state/entities.py``). The
runtime's rule writer (:mod:`agentproto.acp._state.upserts`) writes that code as
text; this module imports the same description and writer, builds the entity kinds
against the classes module just generated, and writes each rule's text as a
function of the sealed module ``_generated_rules_v2.py``, with two tables: ``RULES``
(the rule of each class) and ``SOURCE_SHA256`` (the sha256 of each text). At import,
the runtime (:mod:`agentproto.acp._state.rules`) takes its rules from ``RULES`` and
refuses the module when a text is not what its writer gives now, so an edit to a
description, a state record or the writer fails loudly until the module is
regenerated. The module also refuses a classes module generated from another
schema (``check_stamp``), like the loaders module.

The runtime is imported before the classes module just generated is swapped in
(:func:`~codegen.loaders.imported`), and, the first time, with an empty rules module
in place of the sealed one: that is the module being written, and a stale copy must
not stop the regeneration that replaces it. When the runtime cannot be imported, or
its descriptions do not fit the new classes, the module is written without rules and
a note says why: the runtime compiles a rule the module lacks, and ``--check``
reports the module out of date until a second run writes them (the runtime's own
error, at import, names the description to edit).
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegen.loaders import imported, sibling_module

if TYPE_CHECKING:
    from agentproto.acp._state.upserts import UpsertSource

__all__ = ["RULES_FOR", "rules_module_text", "rules_path"]

RULES_FOR = "agentproto.acp._generated_v2"
"""The classes module the runtime's entity descriptions describe (a test holds this to
the module ``agentproto.acp._state.entities`` imports)."""

_RUNTIME = ("agentproto.acp._state.entities", "agentproto.acp._state.upserts")
_IMPORTED_FROM = (
    "typing",
    "agentproto._core.unset",
    "agentproto.acp._state.meta",
    "agentproto.acp._state.entities",
    "agentproto.acp._state.upserts",
)
"""Where the names the rule code refers to are imported from: the first that holds each."""


def rules_path(classes_path: Path) -> Path:
    """Where the rules module of a classes module goes: ``_generated_v2.py`` →
    ``_state/_generated_rules_v2.py``, inside the part whose rules they are (it imports
    the entity descriptions, and the rules module of that part imports it)."""
    head, _, tail = classes_path.stem.partition("_generated")
    return classes_path.parent / "_state" / f"{head}_generated_rules{tail}{classes_path.suffix}"


def _runtime() -> tuple[types.ModuleType, types.ModuleType]:
    """The runtime's entity descriptions and rule writer (see the module documentation).

    Raises:
        Exception: whatever importing the runtime raised.
    """
    package, _, leaf = sibling_module(RULES_FOR, "rules").rpartition(".")
    rules = f"{package}._state.{leaf}"
    if "agentproto.acp" not in sys.modules:
        stub = types.ModuleType(rules)
        vars(stub).update(RULES={}, SOURCE_SHA256={})
        sys.modules[rules] = stub
    entities, upserts = (importlib.import_module(name) for name in _RUNTIME)
    return entities, upserts


def _sources(classes_path: Path, module: str) -> tuple[list[UpsertSource], str | None]:
    """The source of every upsert rule of the classes module at ``classes_path``, and a
    note when there are none for a reason the maintainer must act on."""
    try:
        entities, upserts = _runtime()
    except Exception as exc:  # the runtime's own import error is the maintainer's to read
        return [], f"the runtime does not import ({type(exc).__name__}: {exc})"
    with imported(classes_path, module) as namespace:
        try:
            kinds = entities.build_kinds(entities.union_members(namespace.SessionUpdate))
        except Exception as exc:  # a description the new classes no longer fit
            return [], f"{type(exc).__name__}: {exc}"
        pairs = upserts.upsert_classes(kinds, namespace).items()
        return [upserts.upsert_source(kind, cls) for cls, kind in pairs], None


def _imports(sources: list[UpsertSource]) -> list[str]:
    """The import lines of the module: what the tables need, and every name the rule
    code refers to, from the first module of :data:`_IMPORTED_FROM` that holds it.

    Raises:
        LookupError: a name none of those modules holds.
    """
    by_module: dict[str, set[str]] = {
        "typing": {"Final"},
        "agentproto.acp._state.upserts": {"Rule"},
        "agentproto._core.wire.loaders": {"check_stamp"},
    }
    names: dict[str, Any] = {}
    for source in sources:
        names.update(source.names)
    for name, value in names.items():
        home = next(
            (h for h in _IMPORTED_FROM if vars(importlib.import_module(h)).get(name) is value),
            None,
        )
        if home is None:
            raise LookupError(f"codegen: the rule code names {name!r}, which nothing imports")
        by_module.setdefault(home, set()).add(name)
    # the standard library first, then the runtime's modules
    typing_names = ", ".join(sorted(by_module.pop("typing")))
    return [f"from typing import {typing_names}\n"] + [
        f"from {home} import (\n    " + ",\n    ".join(sorted(held)) + ",\n)"
        for home, held in sorted(by_module.items())
    ]


def rules_module_text(
    classes_path: Path, module: str, header: str, stamp: str
) -> tuple[str, str | None] | None:
    """The sealed rules module of the classes module at ``classes_path`` (``None`` for a
    classes module other than :data:`RULES_FOR`), and a note when it holds no rules
    for a reason the maintainer must act on.

    Args:
        classes_path: the classes module just generated.
        module: its dotted name.
        header: the provenance line the module starts with.
        stamp: the schema hash the module carries.

    Raises:
        LookupError: the rule code names something no module it may import from holds.
    """
    if module != RULES_FOR:
        return None
    sources, note = _sources(classes_path, module)
    package, _, leaf = module.rpartition(".")
    parts = [
        "from __future__ import annotations",
        "\n".join(_imports(sources)) + f"\nfrom {package} import {leaf} as _m",
        f'check_stamp(_m, "{stamp}", __name__)',
        *(source.text.rstrip("\n") for source in sources),
        "RULES: Final[dict[type, Rule]] = {\n"
        + "".join(f"    _m.{s.cls.__name__}: {s.function},\n" for s in sources)
        + "}",
        "SOURCE_SHA256: Final[dict[type, str]] = {\n"
        + "".join(f'    _m.{s.cls.__name__}: "{s.sha256}",\n' for s in sources)
        + "}",
    ]
    return header + "\n\n" + "\n\n\n".join(parts) + "\n", note
