"""The package's import graph, read from the source with :mod:`ast` (nothing is imported).

``tests/test_layout.py`` holds the checks over it (its docstring says what they are);
this module holds the tables they check against (:data:`LAYERS`, :data:`PUBLIC`), the
readers, and the size report that ``nox -s lint`` prints (``python -m tests.layout``):
sizes are reported, never asserted.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "sdk"

LAYERS: dict[str, tuple[str | tuple[str, ...], ...]] = {
    "agentproto": ("_core", ("agui", "acp"), "cli"),
    "agentproto._core": (
        "describe",
        "errors",
        "exports",
        "optional",
        "diagnostics",
        "unset",
        "readonly",
        "sse",
        "json",
        "asgi",
        "patch",
        "wire",
        "store",
        "reconnect",
    ),
    "agentproto.agui": (
        "_generated",
        "_generated_loaders",
        "_generated_native",
        "_protocol",
        "_verify",
        "_reduce",
        "_consume",
        "_thread",
        "_produce",
        "_history",
        ("_serve", "_http"),
    ),
    "agentproto.acp": (
        ("_generated_v1", "_generated_v2"),
        ("_generated_loaders_v1", "_generated_loaders_v2"),
        "_protocol",
        "_state",
        "_relay",
        "_rpc",
        "_io",
        "_remote",
        ("_agent", "_client"),
        "_serve",
    ),
}
"""Each package's parts from the bottom up (the dependency order of its concepts)."""

PUBLIC: dict[str, frozenset[str]] = {
    "agentproto": frozenset({"__main__", "stores"}),
    "agentproto.agui": frozenset({"asgi", "quirks", "schema"}),
    "agentproto.acp": frozenset({"agent", "client", "connection", "schema", "schema_v1"}),
}
"""The public modules below each package's ``__init__``: free to import their package."""

INIT_LEVEL: dict[str, str] = {"agentproto": "_core"}
"""A package whose ``__init__`` only re-exports one of its parts sits at that part's level
(``agentproto`` re-exports the errors and diagnostics of ``_core``); any other package's
``__init__`` is public."""

SEALED_PAIRS = frozenset(
    {
        ("agentproto.agui._generated_native", "agentproto.agui._generated_loaders"),
    }
)
"""Generated modules written as one: the second's private names are the first's too."""


@dataclass(frozen=True)
class Import:
    """One import statement's target, as the importing module wrote it."""

    source: str
    target: str
    names: tuple[str, ...]
    line: int
    typing_only: bool


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def generated(self) -> bool:
        return self.path.name.startswith("_generated")


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.with_suffix("").relative_to(base).parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Module]:
    """Every module of the package and of the code generator, parsed."""
    found = {}
    for base, folder in ((SDK, SDK / "agentproto"), (ROOT, ROOT / "codegen")):
        for path in sorted(folder.rglob("*.py")):
            name = _module_name(path, base)
            found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def _typing_blocks(tree: ast.Module) -> set[int]:
    """Ids of the statements inside ``if TYPE_CHECKING:`` blocks."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith(
            "TYPE_CHECKING"
        ):
            for child in node.body:
                inside.update(id(sub) for sub in ast.walk(child))
    return inside


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


@cache
def imports() -> tuple[Import, ...]:
    """Every import of one of our modules, each ``from P import m`` of a module as ``P.m``."""
    known = modules()
    found = []
    for module in known.values():
        typing_only = _typing_blocks(module.tree)
        for node in ast.walk(module.tree):
            flag = id(node) in typing_only
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in known:
                        found.append(Import(module.name, alias.name, (), node.lineno, flag))
            elif isinstance(node, ast.ImportFrom):
                target = _absolute(module, node)
                if target not in known:
                    continue
                plain = []
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    if submodule in known:
                        found.append(Import(module.name, submodule, (), node.lineno, flag))
                    else:
                        plain.append(alias.name)
                if plain:
                    found.append(Import(module.name, target, tuple(plain), node.lineno, flag))
    return tuple(found)


def _where(entry: Import) -> str:
    return f"{entry.source} (line {entry.line}) -> {entry.target}"


def _parts(source: str, target: str) -> tuple[str, str, str] | None:
    """The innermost declared package holding both modules, and each one's part of it."""
    a, b = source.split("."), target.split(".")
    for depth in range(min(len(a), len(b)), 0, -1):
        package = ".".join(a[:depth])
        if package != ".".join(b[:depth]) or package not in LAYERS:
            continue
        if len(a) == depth or len(b) == depth:  # the package's own __init__ on one side
            return package, a[depth] if len(a) > depth else "", b[depth] if len(b) > depth else ""
        if a[depth] == b[depth]:
            return None  # inside one part: its own business
        return package, a[depth], b[depth]
    return None


def _rank(package: str, part: str) -> int | None:
    for rank, entry in enumerate(LAYERS[package]):
        if part == entry or (isinstance(entry, tuple) and part in entry):
            return rank
    return None


def order_violations(entries: tuple[Import, ...]) -> list[str]:
    """The imports against :data:`LAYERS` (see the module docstring)."""
    bad = []
    for entry in entries:
        if not entry.source.startswith("agentproto"):
            continue
        found = _parts(entry.source, entry.target)
        if found is None:
            continue
        package, source, target = found
        public = PUBLIC.get(package, frozenset())
        if source == "" or source in public:
            continue  # the package itself, or one of its public modules
        target = INIT_LEVEL.get(package, "") if target == "" else target
        if target == "" or target in public:
            bad.append(f"{_where(entry)}: a private part imports a public module")
            continue
        ranks = _rank(package, source), _rank(package, target)
        if ranks[0] is None or ranks[1] is None:
            missing = source if ranks[0] is None else target
            bad.append(f"{_where(entry)}: {package}.{missing} is not in LAYERS")
        elif ranks[1] >= ranks[0]:
            bad.append(f"{_where(entry)}: against the declared order of {package}")
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def part_of(module: str) -> str | None:
    """The declared part a module belongs to (``agentproto.agui._reduce``), if any."""
    names = module.split(".")
    for depth in range(len(names) - 1, 0, -1):
        if ".".join(names[:depth]) in LAYERS:
            return ".".join(names[: depth + 1])
    return None


def private_imports(entries: tuple[Import, ...]) -> list[str]:
    """Imports of another module's ``_name`` (dunder names are not private)."""
    bad = []
    for entry in entries:
        if (entry.source, entry.target) in SEALED_PAIRS:
            continue
        for name in entry.names:
            if name.startswith("_") and not name.startswith("__"):
                bad.append(f"{_where(entry)}: imports {name}")
    return bad


def _module_aliases(module: Module) -> dict[str, str]:
    """The names under which a module holds other modules of ours."""
    known = modules()
    aliases = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known and alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, node)
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
    return aliases


def _defined_private(tree: ast.Module) -> set[str]:
    """Every ``_name`` a module defines: functions, classes, assignments, slots, fields."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # __slots__ entries, attrs aliases, getattr() names
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {name for name in names if name.startswith("_")}


def _foreign_modules(module: Module) -> set[str]:
    """The names under which a module holds modules of other libraries (``argparse``)."""
    known = modules()
    names = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (
                    alias.name.split(".")[0] not in ("agentproto", "codegen")
                    or alias.name not in known
                ):
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def private_reads() -> list[str]:
    """``module._name`` of another module of ours, and ``obj._attr`` on an object other
    than ``self``/``cls`` that its own module never defines (an object's own attributes,
    inherited ones included, are its business; another's are not)."""
    bad = []
    for module in modules().values():
        if module.generated:
            continue
        aliases = _module_aliases(module)
        foreign = _foreign_modules(module)
        own = _defined_private(module.tree)
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Attribute):
                continue
            attr = node.attr
            if not attr.startswith("_") or attr.startswith("__"):
                continue
            held = node.value.id if isinstance(node.value, ast.Name) else None
            if held in aliases:
                bad.append(f"{module.name} (line {node.lineno}): reads {aliases[held]}.{attr}")
            elif held in ("self", "cls") or held in foreign or attr in own:
                continue
            else:
                bad.append(f"{module.name} (line {node.lineno}): touches {attr} of another module")
    return bad


def top_level_strays() -> list[str]:
    """Modules at the top of ``agui/`` and ``acp/`` that are not public, generated or
    a subpackage."""
    bad = []
    for package in ("agentproto.agui", "agentproto.acp"):
        folder = SDK.joinpath(*package.split("."))
        for path in sorted(folder.iterdir()):
            if path.name in ("__init__.py", "__pycache__", "py.typed") or path.suffix in (
                ".so",
                ".pyd",
            ):
                continue
            name = path.stem
            if path.is_dir():
                if not (path / "__init__.py").is_file():
                    bad.append(f"{package}.{name}: a folder that is not a package")
                elif not name.startswith("_"):
                    bad.append(f"{package}.{name}: a public subpackage nobody declared")
                continue
            if name in PUBLIC[package] or name.startswith("_generated"):
                continue
            bad.append(f"{package}.{name}: neither public, generated nor a subpackage")
    return bad


def _all_of(module: Module) -> set[str]:
    """The names of a module's literal ``__all__``."""
    names: set[str] = set()
    for node in module.tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
            )
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            names |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return names


def _exported() -> set[tuple[str, str]]:
    """(module, name) of every name the public modules export, star imports included."""
    names = set()
    known = modules()
    for module in known.values():
        if any(part.startswith("_") for part in module.name.split(".")):
            continue
        names |= {(module.name, name) for name in _all_of(module)}
        for node in module.tree.body:
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                star = known.get(_absolute(module, node))
                names |= {(module.name, name) for name in _all_of(star)} if star else set()
    return names


def split_classes() -> list[str]:
    """Classes whose base is the other half of them: a hand-written, unexported class of
    another module of the same part that no other class derives from. (A class built on
    a lower part's class is layering, not a split.)"""
    defined: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for module in modules().values():
        if module.generated or not module.name.startswith("agentproto"):
            continue
        for node in module.tree.body:
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append((module.name, node))
    exported = {name for _, name in _exported()}
    subclasses: dict[tuple[str, str], list[str]] = {}
    for name, places in defined.items():
        for module, node in places:
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id in defined:
                    for home, _ in defined[base.id]:
                        subclasses.setdefault((home, base.id), []).append(f"{module}.{name}")
    bad = []
    for (home, base), children in sorted(subclasses.items()):
        if base in exported or len(children) > 1:
            continue
        (child,) = children
        module = child.rpartition(".")[0]
        if module != home and part_of(module) == part_of(home):
            bad.append(f"{child} takes its methods from {base} in {home}")
    return bad


def unregistered_exec() -> list[str]:
    """Calls of ``exec`` in functions that never register their source with linecache."""
    bad = []
    for module in modules().values():
        if module.generated:
            continue
        for function in ast.walk(module.tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            calls = [
                node
                for node in ast.walk(function)
                if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "exec"
            ]
            if calls and "linecache" not in ast.unparse(function):
                bad.append(f"{module.name}.{function.name} (line {calls[0].lineno})")
    return bad


def sizes() -> Iterator[tuple[int, str]]:
    """(lines, module) of each hand-written module: reported, never asserted."""
    for module in modules().values():
        if not module.generated:
            yield module.path.read_text(encoding="utf-8").count("\n"), module.name


def main() -> None:
    """Print the hand-written modules by size, the largest first."""
    rows = sorted(sizes(), reverse=True)
    print(
        f"{'lines':>6}  module ({len(rows)} hand-written modules, {sum(n for n, _ in rows)} lines)"
    )
    for lines, name in rows:
        print(f"{lines:>6}  {name}")


if __name__ == "__main__":
    main()
