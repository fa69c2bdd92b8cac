"""The house's boundaries, checked: what may import what, and what stays private.

DESIGN.md, "Packages by concept, boundaries checked": a module is cut where a concept
ends, never to fit a line count, so sizes are only reported (``nox -s lint`` prints
them). What this module asserts is the boundaries:

* :data:`LAYERS` declares, for each package, the order of its parts from the bottom
  up: a part imports only parts below it (a tuple inside the order groups peers that
  import neither each other); a public module imports anything of its package, and
  no private part imports it. ``TYPE_CHECKING`` imports count: the order is the
  order of the concepts, not of the import statements.
* No import cycle between the parts of a package, and no run-time cycle between
  any two modules at all.
* A ``_name`` is private to its module: no module (generated ones and ``codegen/``
  included) imports another's, nor reads it off another module, nor touches an
  object's ``_attribute`` that its own module never defines.
* The top of ``agui/`` and ``acp/`` holds only ``__init__``, the public modules, the
  sealed ``_generated*`` modules and private subpackages.
* A class is written in one module: a base class from another hand-written module is
  public or shared by several classes, never the other half of one class.
* Source compiled at run time is registered with ``linecache`` in the same function,
  so a traceback through it shows its lines.

The graph is read from the source with :mod:`ast` by :mod:`tests.layout` (nothing is
imported), so the checks hold for the pure and the compiled build alike; the tables
(:data:`~tests.layout.LAYERS`, :data:`~tests.layout.PUBLIC`) live there too.
"""

from __future__ import annotations

import pytest

from tests.layout import (
    LAYERS,
    PUBLIC,
    Import,
    cycles,
    imports,
    modules,
    order_violations,
    part_of,
    private_imports,
    private_reads,
    sizes,
    split_classes,
    top_level_strays,
    unregistered_exec,
)

# --- the checks -------------------------------------------------------------------------


def test_the_tree_is_found() -> None:
    """The walk sees the package and its imports (a moved tree must not make the checks
    vacuous)."""
    names = modules()
    assert "agentproto" in names and "agentproto.agui._reduce" in names
    assert "codegen.loaders" in names
    assert len(imports()) > 300


def test_every_part_is_declared() -> None:
    """Every part of a declared package is in its LAYERS entry, and every entry exists."""
    problems = []
    for package, order in LAYERS.items():
        declared = {
            part for entry in order for part in (entry if isinstance(entry, tuple) else (entry,))
        }
        present = {
            name[len(package) + 1 :].split(".")[0]
            for name in modules()
            if name.startswith(package + ".")
        }
        present -= PUBLIC.get(package, frozenset())
        problems += [f"{package}.{part}: not in LAYERS" for part in sorted(present - declared)]
        problems += [
            f"{package}.{part}: declared but absent" for part in sorted(declared - present)
        ]
    assert not problems, "\n".join(problems)


def test_imports_follow_the_declared_order() -> None:
    """A part imports only parts below it in LAYERS, and no private part imports a public
    module (TYPE_CHECKING imports included)."""
    bad = order_violations(imports())
    assert not bad, "\n".join(bad)


def test_no_cycle_between_parts() -> None:
    """The parts of each package import each other without a cycle (TYPE_CHECKING
    imports included)."""
    edges: dict[str, set[str]] = {}
    for entry in imports():
        a, b = part_of(entry.source), part_of(entry.target)
        if a and b and a != b:
            edges.setdefault(a, set()).add(b)
    found = cycles(edges)
    assert not found, found


def test_no_run_time_cycle_between_modules() -> None:
    """No two modules import each other at run time, directly or around a loop (a
    package's import of its own modules, as ``from P import m``, is not one)."""
    edges: dict[str, set[str]] = {}
    for entry in imports():
        if not entry.typing_only and entry.source != entry.target:
            edges.setdefault(entry.source, set()).add(entry.target)
    found = cycles(edges)
    assert not found, "\n".join(" <-> ".join(component) for component in found)


def test_no_private_name_is_imported() -> None:
    """No module imports another module's ``_name`` (generated modules and codegen
    included)."""
    bad = private_imports(imports())
    assert not bad, "\n".join(bad)


def test_no_private_name_is_read_across_modules() -> None:
    """No module reads another module's ``_name`` or an ``_attribute`` its own code never
    defines."""
    bad = private_reads()
    assert not bad, "\n".join(bad)


def test_the_protocol_packages_hold_only_declared_modules() -> None:
    """The top of agui/ and acp/ holds only __init__, public and generated modules and
    private subpackages."""
    bad = top_level_strays()
    assert not bad, "\n".join(bad)


def test_a_class_is_written_in_one_module() -> None:
    """No class takes half its methods from a private class of another module."""
    bad = split_classes()
    assert not bad, "\n".join(bad)


def test_compiled_source_is_registered_with_linecache() -> None:
    """Every exec of generated source registers it with linecache, so tracebacks show it."""
    bad = unregistered_exec()
    assert not bad, "\n".join(bad)


# --- the checks catch what they are for -------------------------------------------------


def _entry(source: str, target: str, *names: str, typing_only: bool = False) -> Import:
    return Import(source, target, names, 1, typing_only)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("agentproto.agui._protocol.wire", "agentproto.agui._reduce.records"),
        ("agentproto._core.json.codec", "agentproto.agui._protocol.wire"),
        ("agentproto.agui._verify.runs", "agentproto.agui.asgi"),
        ("agentproto.agui._serve.app", "agentproto.agui._http.client"),
        ("agentproto.acp._state.rules", "agentproto.agui._protocol.wire"),
        ("agentproto.agui._verify.runs", "agentproto.agui"),
    ],
)
def test_the_order_check_sees_a_wrong_import(source: str, target: str) -> None:
    """An import upward, between peers, into a public module or across protocols is
    reported."""
    assert order_violations((_entry(source, target),))


def test_the_order_check_lets_a_right_import_through() -> None:
    """Imports downward, inside one part, or from a public module pass."""
    fine = (
        _entry("agentproto.agui._reduce.records", "agentproto.agui._protocol.wire"),
        _entry("agentproto.agui._reduce.records", "agentproto.agui._reduce.conversation"),
        _entry("agentproto.agui.asgi", "agentproto.agui._serve"),
        _entry("agentproto.cli.agui", "agentproto.agui"),
    )
    assert order_violations(fine) == []


def test_the_cycle_finder_finds_a_loop() -> None:
    """A three-module loop is one component; a chain is none."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}}) == []


def test_the_private_check_sees_a_private_name() -> None:
    """``from m import _x`` is reported, ``from m import __version__`` is not."""
    assert private_imports((_entry("a", "b", "_x"),))
    assert private_imports((_entry("a", "b", "__version__", "x"),)) == []


def test_module_sizes_are_reported() -> None:
    """The size report covers every hand-written module (read by ``nox -s lint``)."""
    report = dict((name, lines) for lines, name in sizes())
    assert "agentproto._core.errors" in report
    assert not any(name.endswith("_generated") for name in report)
