"""The sealed loaders module of a generated classes module.

Theory of operation. The wire converter (:mod:`agentproto._core.wire.converter`) knows
how to load and dump every generated class: it builds class loaders and dumpers
from source lines (:mod:`agentproto._core.wire.source`) and every other loader
from a factory call (:mod:`agentproto._core.wire.loaders`). :class:`LoaderWriter` is
that converter with its two ways of making a loader turned into writing one: a
class loader's lines become a function of the module, a factory call becomes an
assignment, and a reference to a loader becomes its name. The decisions (which
check, which factory, which arguments) stay the converter's, so the module and
the run-time compilation give the same loaders by construction.

The module lists its loaders in ``LOADERS`` (every class and every union,
literal or list alias of the classes module) and its dumpers in ``DUMPERS``; the
converter starts from those tables. It refuses to be imported beside a classes
module generated from another schema (``_SCHEMA_SHA256``). With the native loaders
(below) comes ``NUMBER_MEMBERS``: per class, where a document its loader accepted can
hold a number (:meth:`~agentproto._core.wire.converter.WireConverter.number_members`), for
the AG-UI decoder's look for integers orjson rounded.

For the compiled build (``hatch_build.py``) a second module can be written, the
*native* loaders (:func:`native_path`): the same loaders, each class loader reading
and checking into local variables and handing them to a *builder* of the first
module, which makes the object (and counting down the members left, so that
optional fields are not looked up once none is). Compiled code stores into an
interpreted object's slots through a generic attribute lookup, several times slower
than the interpreter's own store; a builder keeps the stores interpreted and the
reads and checks compiled. The native module also holds the checked dumpers again
(``CHECKED_DUMPERS``), which only read. The pure build has no use for the native module (a
builder call costs more than the stores it saves there); the runtime takes it only when
it is compiled.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, get_origin

import attrs

from agentproto._core import describe, errors, unset
from agentproto._core.wire import checks as wirechecks
from agentproto._core.wire import loaders as loaderkit
from agentproto._core.wire.checks import is_union, unwrap_annotated
from agentproto._core.wire.converter import PLAIN_LOADERS, WireConverter
from agentproto._core.wire.source import class_dumper_lines, class_loader_lines, loader_env
from codegen.checked import checked_dumper_lines, checked_name

__all__ = [
    "imported",
    "loaders_module_text",
    "loaders_path",
    "native_path",
    "sibling",
    "sibling_module",
]

_SHARED_FROM = (wirechecks, describe, errors, unset, loaderkit)
"""Where the names shared by every class loader are imported from."""
_LOADER_SIGNATURE = "(d: Any, p: str, c: Context) -> Any"


def loaders_path(classes_path: Path) -> Path:
    """Where the loaders module of a classes module goes: ``_generated_v2.py`` →
    ``_generated_loaders_v2.py``, ``_generated.py`` → ``_generated_loaders.py``."""
    return sibling(classes_path, "loaders")


def native_path(classes_path: Path) -> Path:
    """Where the native loaders of a classes module go: ``_generated.py`` →
    ``_generated_native.py``."""
    return sibling(classes_path, "native")


def sibling(classes: Path, kind: str) -> Path:
    """The ``kind`` module beside a classes module: ``_generated_v2.py`` →
    ``_generated_{kind}_v2.py``, ``_generated.py`` → ``_generated_{kind}.py``."""
    head, _, tail = classes.stem.partition("_generated")
    return classes.with_name(f"{head}_generated_{kind}{tail}{classes.suffix}")


_SLOT = re.compile(r"\bo\.(\w+)")
_CLASS_OF = re.compile(r"\b(\w+)\.__class__")
_CLASS_OF_GOT = re.compile(r"\((\w+ := \w+\.get\([^()]*\))\)\.__class__")
_FROM_NONE = re.compile(r"raise (.+) from None$")
_CONST_FIRST = re.compile(r"if v != (.+) or type\(v\) is not str:$")


def _for_mypyc(line: str) -> str:
    """A line of a loader or checked dumper, made for mypyc: ``x.__class__`` (and
    ``(t := x.get(k)).__class__``) becomes ``type(x)`` (one compiled pointer comparison,
    where ``__class__`` is an attribute lookup), tested before a constant is compared (the
    comparison is then one of two strings); ``raise e from None`` becomes
    ``raise chained(e, None)`` (mypyc drops ``from``)."""
    line = _CLASS_OF.sub(r"type(\1)", _CLASS_OF_GOT.sub(r"type(\1)", line))
    line = _CONST_FIRST.sub(r"if type(v) is not str or v != \1:", line)
    return _FROM_NONE.sub(r"raise chained(\1, None)", line)


def _native_lines(lines: list[str], prefix: str, slots: list[str]) -> list[str]:
    """A class loader's lines, made for mypyc (:func:`_for_mypyc`): the object's
    slots become local variables handed to the builder ``{prefix}build``."""
    build = f"return {prefix}build({', '.join(f'o_{slot}' for slot in slots)})"
    out: list[str] = []
    for line in lines:
        body = line.lstrip()
        indent = line[: len(line) - len(body)]
        if body == f"o: Any = new({prefix}cls)":
            out += [f"{indent}o_{slot}: Any" for slot in slots]
            continue
        if body == "return o":
            out.append(indent + build)
            continue
        out.append(_for_mypyc(_SLOT.sub(r"o_\1", line)))
    return out


def _holds_loader(value: Any) -> bool:
    """Whether a per-class name's value is (or holds) a loader of the module being written."""
    if isinstance(value, _Ref):
        return True
    if isinstance(value, dict | types.MappingProxyType):
        return any(map(_holds_loader, value.values()))
    if isinstance(value, tuple | list | frozenset):
        return any(map(_holds_loader, value))
    return False


def _builder_lines(cls: type, prefix: str, slots: list[str]) -> list[str]:
    """The interpreted function a native loader hands the values of ``cls`` to."""
    parameters = ", ".join(f"o_{slot}: Any" for slot in slots)
    return [
        f"def _build_{cls.__name__}({parameters}) -> Any:",
        f"    o: Any = new({prefix}cls)",
        *(f"    o.{slot} = o_{slot}" for slot in slots),
        "    return o",
    ]


class _Ref:
    """A loader of the module being written, by its name there."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any) -> Any:  # a loader, as far as the converter can tell
        raise AssertionError("a loader being written is never called")


def _render(value: Any) -> str:
    """Python source of a factory argument or table value."""
    if isinstance(value, _Ref):
        return value.name
    if isinstance(value, re.Pattern):
        return f"re.compile({value.pattern!r})"
    if isinstance(value, types.FunctionType):
        return value.__name__  # a loaderkit loader, imported by name
    if isinstance(value, type):
        return "type(None)" if value is type(None) else value.__name__
    if isinstance(value, frozenset):
        items = sorted(map(_render, value))
        return f"frozenset({{{', '.join(items)}}})" if items else "frozenset()"
    if isinstance(value, tuple):
        items = [_render(v) for v in value]
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    if isinstance(value, list):
        return f"[{', '.join(map(_render, value))}]"
    if isinstance(value, dict | types.MappingProxyType):
        pairs = (f"{_render(k)}: {_render(v)}" for k, v in value.items())
        return f"{{{', '.join(pairs)}}}"
    if value is None or isinstance(value, str | int | float | bool):
        return repr(value)
    raise TypeError(f"codegen: cannot write {value!r} into a loaders module")


class LoaderWriter(WireConverter):
    """The converter, writing the loaders it would compile into module source."""

    def __init__(self, namespace: types.ModuleType, *, checked: bool, native: bool) -> None:
        super().__init__(namespace)
        self._write_checked = checked
        self._write_native = native
        self._native: list[str] = []  # the native class loaders
        self._native_checked: list[str] = []  # and checked dumpers
        self._builders: list[str] = []  # and the builders they call
        self._build_names: list[str] = []
        self._table: list[str] = []  # the rows of LOADERS, made by write()
        self._classes: list[type] = []  # every class, in the order of write()
        self._refs: dict[Any, _Ref] = {}
        self._functions: list[str] = []  # class loaders and dumpers
        self._made: list[str] = []  # factory calls, each after what it refers to
        self._names: list[str] = []  # per-class names, after the factory calls
        self._native_names: list[str] = []  # and as the native module has them
        self._shared: dict[str, Any] = {}
        self._checked: list[str] = []  # checked dumpers (codegen/checked.py)
        self._checked_tables: list[str] = []

    def loader(self, tp: Any) -> Any:
        tp = unwrap_annotated(tp)
        ref = self._refs.get(tp)
        if ref is not None:
            return ref
        if attrs.has(tp):
            ref = self._refs[tp] = _Ref(f"_load_{tp.__name__}")
            self._write_class(tp)
            return ref
        made = self._compile_type_loader(tp)
        ref = self._refs[tp] = made if isinstance(made, _Ref) else _Ref(made.__name__)
        return ref

    def _build(self, factory: Callable[..., Any], *args: Any) -> Any:
        name = f"_L{len(self._made)}"
        call = f"{factory.__name__}({', '.join(map(_render, args))})"
        self._made.append(f"{name}: Final = {call}")
        return _Ref(name)

    def _write_class(self, cls: type) -> None:
        prefix = f"_{cls.__name__}_"
        env = loader_env(cls, prefix)
        signature = f"_load_{cls.__name__}{_LOADER_SIGNATURE}"
        lines = class_loader_lines(cls, self.hints(cls), self.value_code, env, signature, prefix)
        self._functions.append("\n".join(lines))
        if self._write_native:
            slots = [field.name for field in attrs.fields(cls)]
            counting = class_loader_lines(
                cls, self.hints(cls), self.value_code, env, signature, prefix, countdown=True
            )
            self._native.append("\n".join(_native_lines(counting, prefix, slots)))
            self._builders.append("\n".join(_builder_lines(cls, prefix, slots)))
            self._build_names.append(f"{prefix}build: Final = _p._build_{cls.__name__}")
        if self._write_checked:
            checked = checked_dumper_lines(self, cls, env, prefix, self._checked_tables)
            self._checked.append("\n".join(checked))
            if self._write_native:
                self._native_checked.append("\n".join(map(_for_mypyc, checked)))
        for key, value in env.items():
            if key.startswith(prefix):
                shown = f"_m.{value.__name__}" if key == f"{prefix}cls" else _render(value)
                annotation = (
                    "Final[dict[str, Any]]" if key.endswith(("_meta", "_item")) else "Final"
                )
                self._names.append(f"{key}: {annotation} = {shown}")
                # the native module's own loaders where the name holds one, else the object
                # of the loaders module (a pattern compiled once, the same tables)
                self._native_names.append(
                    f"{key}: {annotation} = {shown}"
                    if _holds_loader(value)
                    else f"{key}: {annotation} = _p.{key}"
                )
            else:
                self._shared[key] = value

    def write(self, module: str, stamp: str) -> str:
        """The module text, for the classes module named ``module``."""
        # each class once (an alias such as ``InitializeProxyRequest`` names one again)
        classes = list(
            dict.fromkeys(
                v for v in vars(self.namespace).values() if _is_class_of(v, self.namespace)
            )
        )
        self._classes = classes
        aliases = {n: v for n, v in vars(self.namespace).items() if _is_alias(n, v)}
        for value in [*classes, *aliases.values()]:
            self.loader(value)
        dumpers = []
        for cls in classes:
            signature = f"_dump_{cls.__name__}(o: Any) -> dict[str, Any]"
            dumpers.append(
                "\n".join(class_dumper_lines(cls, self.hints(cls), self.is_plain, signature))
            )
        table = [f"    _m.{c.__name__}: _load_{c.__name__}," for c in classes]
        table += [
            f"    _m.{n}: {self._refs[unwrap_annotated(v)].name}," for n, v in aliases.items()
        ]
        self._table = table
        parts = [
            *self._imports(module, stamp),
            *self._functions,
            *self._builders,
            *dumpers,
            *self._checked,
            *self._made,
            *self._names,
            *self._checked_tables,
            "LOADERS: Final[dict[Any, Loader]] = {\n" + "\n".join(table) + "\n}",
            "DUMPERS: Final[dict[type, Dumper]] = {\n"
            + "\n".join(f"    _m.{c.__name__}: _dump_{c.__name__}," for c in classes)
            + "\n}",
            "dv: Final = value_dumper(DUMPERS, dump_foreign)",
        ]
        if self._write_native:  # the protocol whose event decoder looks for rounded integers
            parts.append(
                "NUMBER_MEMBERS: Final[dict[type, tuple[int, tuple[str, ...] | None]]] = {\n"
                + "\n".join(f"    _m.{c.__name__}: {self.number_members(c)!r}," for c in classes)
                + "\n}"
            )
        if self._write_checked:
            parts.append(self._checked_table())
        return "\n\n\n".join(parts) + "\n"

    def _checked_table(self) -> str:
        """``CHECKED_DUMPERS``: the checked dumper of each class (after :meth:`write`)."""
        return (
            "CHECKED_DUMPERS: Final[dict[type, CheckedDumper]] = {\n"
            + "\n".join(f"    _m.{c.__name__}: {checked_name(c)}," for c in self._classes)
            + "\n}"
        )

    def write_native(self, module: str, stamp: str) -> str:
        """The native loaders module (after :meth:`write`), for the classes module
        named ``module``: the class loaders, the checked dumpers and the factory calls
        again, the per-class names and the builders taken from the loaders module, and
        ``LOADERS`` and ``CHECKED_DUMPERS``."""
        loaders = sibling_module(module, "loaders")
        imports = self._imports(module, stamp)
        imports[1] += f"\nfrom agentproto._core.errors import chained\nimport {loaders} as _p"
        imports[2] = imports[2].replace("\nnew = object.__new__", "")  # builders make objects
        return (
            "\n\n\n".join(
                [
                    *imports,
                    *self._native,
                    *self._native_checked,
                    *self._made,
                    *self._native_names,
                    *self._build_names,
                    *self._checked_tables,
                    "LOADERS: Final[dict[Any, Loader]] = {\n" + "\n".join(self._table) + "\n}",
                    *([self._checked_table()] if self._write_checked else []),
                ]
            )
            + "\n"
        )

    def _imports(self, module: str, stamp: str) -> list[str]:
        shared = dict(self._shared)
        shared.pop("new")
        wanted = {
            "Loader": loaderkit.Loader,
            "Dumper": loaderkit.Dumper,
            "CheckedDumper": loaderkit.CheckedDumper,
            "SlowPath": loaderkit.SlowPath,
            "Context": wirechecks.Context,
            "value_dumper": loaderkit.value_dumper,
            "dump_foreign": loaderkit.dump_foreign,
            "check_stamp": loaderkit.check_stamp,
        }
        wanted |= shared
        wanted |= {name: getattr(loaderkit, name) for name in _factory_names(self._made)}
        # loaders referred to by name (the unused ones are dropped from the module)
        wanted |= {f.__name__: f for f in PLAIN_LOADERS.values()}
        by_source: dict[str, list[str]] = {}
        for name, value in wanted.items():
            source = _source_of(value)
            by_source.setdefault(source.__name__, []).append(_as(name, value, source))
        lines = [
            f"from {source} import (\n    " + ",\n    ".join(sorted(names)) + ",\n)"
            for source, names in sorted(by_source.items())
        ]
        package, _, leaf = module.rpartition(".")
        head = [
            "from __future__ import annotations",
            "import re\nfrom typing import Any, Final\n\n"
            + "\n".join(lines)
            + f"\nfrom {package} import {leaf} as _m",
            f'check_stamp(_m, "{stamp}", __name__)\nnew = object.__new__',
        ]
        return head


def _factory_names(made: list[str]) -> set[str]:
    return {line.split(" = ", 1)[1].split("(", 1)[0] for line in made}


def _source_of(value: Any) -> types.ModuleType:
    """The module of :data:`_SHARED_FROM` to import ``value`` from: where it is
    defined, else one that exports it (its ``__all__``), else the first that holds it
    (a public name's ``__module__`` is its public home, not where it is defined)."""
    holding = [s for s in _SHARED_FROM if any(v is value for v in vars(s).values())]
    assert holding, f"codegen: no module to import {value!r} from"
    defined = getattr(value, "__module__", None)
    exporting = [
        s for s in holding if any(getattr(s, n, None) is value for n in getattr(s, "__all__", ()))
    ]
    return next((s for s in holding if s.__name__ == defined), (exporting or holding)[0])


def _as(name: str, value: Any, source: types.ModuleType) -> str:
    """``real`` or ``real as name`` for the attribute of ``source`` that is ``value``."""
    real = next(n for n, v in vars(source).items() if v is value)
    return real if real == name else f"{real} as {name}"


def _is_class_of(value: Any, namespace: types.ModuleType) -> bool:
    return isinstance(value, type) and attrs.has(value) and value.__module__ == namespace.__name__


def _is_alias(name: str, value: Any) -> bool:
    """A public alias the runtime may ask a loader for: a union, literal or list."""
    if name.startswith("_") or isinstance(value, type):
        return False
    return is_union(value) or get_origin(value) in (Literal, list)


def sibling_module(module: str, kind: str) -> str:
    """The dotted name of the ``kind`` module beside the classes module named ``module``."""
    package, _, leaf = module.rpartition(".")
    head, _, tail = leaf.partition("_generated")
    return f"{package}.{head}_generated_{kind}{tail}"


@contextmanager
def imported(path: Path, module: str) -> Iterator[types.ModuleType]:
    """The classes module at ``path``, imported as ``module`` for as long as it is
    needed (whatever was imported under that name before is put back)."""
    spec = importlib.util.spec_from_file_location(module, path)
    assert spec is not None and spec.loader is not None
    namespace = importlib.util.module_from_spec(spec)
    before = sys.modules.get(module)
    sys.modules[module] = namespace
    try:
        spec.loader.exec_module(namespace)
        yield namespace
    finally:
        if before is None:
            del sys.modules[module]
        else:
            sys.modules[module] = before


def loaders_module_text(
    classes_path: Path, module: str, header: str, stamp: str, *, checked: bool, native: bool
) -> tuple[str, str | None]:
    """The sealed loaders module of the classes module at ``classes_path``, and its
    native loaders module (``None`` unless ``native``).

    Args:
        classes_path: the classes module just generated.
        module: its dotted name (``agentproto.agui._generated``).
        header: the provenance line the module starts with.
        stamp: the schema hash both modules carry.
        checked: also write a checked dumper per class and their ``CHECKED_DUMPERS``
            table (codegen/checked.py).
        native: also write the native loaders, and the builders they call.
    """
    with imported(classes_path, module) as namespace:
        writer = LoaderWriter(namespace, checked=checked, native=native)
        text = header + "\n\n" + writer.write(module, stamp)
        if not native:
            return text, None
        return text, header + "\n\n" + writer.write_native(module, stamp)
