"""The checked dumpers of a sealed loaders module.

Theory of operation. Dumping an event and then holding its JSON to the schema (as
``dump_event`` and the encoders do by default) loads the whole JSON back: every
object is built a second time only to be thrown away. A checked dumper writes a
class's JSON and checks each value on the way, so the check costs a class test
per value instead of a second object graph.

It must never accept what the strict loader would refuse, and it need not accept
everything the loader would: whatever it cannot vouch for raises
:class:`~agentproto._core.wire.loaders.SlowPath`, and the caller dumps and checks the
slow way, which gives the verdict and every problem with its location. So:

* a JSON value (a field whose type holds no class) is checked by exactly the lines
  the class loader checks it with (the converter's ``value_code``, with the same
  per-class names), the value itself going into the JSON as the dumper puts it;
* an object must be an instance of exactly its class (not a subclass, not a dict),
  and is written by its own checked dumper;
* a union's member is chosen by the value's class: a class member by identity (a
  union's catch-all member excepted, whose free tag could name another member), a
  list member for a list, the union of its JSON-value members for a scalar.
  Loading the result strictly tries the members the value fits, so a member that
  accepts it is enough;
* members an open class keeps besides its fields go out as they are, unless one
  bears a field's name (the dumper would let it overwrite the field);
* what the rules above do not cover (a JSON-RPC ``params`` member loaded by its
  request's method, lists whose items carry their own constraints or skip invalid
  items) takes the slow way.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

import attrs

from agentproto._core.wire.checks import NONE_TYPES, is_union, strip_none, unwrap_annotated
from agentproto._core.wire.source import loader_fields

if TYPE_CHECKING:
    from codegen.loaders import LoaderWriter

__all__ = ["checked_dumper_lines", "checked_name"]

_SLOW = "raise SlowPath"
_REBINDS = re.compile(r"\s*v = ")


def checked_name(cls: type) -> str:
    """The name of the checked dumper of ``cls`` in its loaders module."""
    return f"_dump_checked_{cls.__name__}"


class _Writer:
    """The lines of one class's checked dumper, and the tables they refer to."""

    def __init__(self, writer: LoaderWriter, env: dict[str, Any], tables: list[str]) -> None:
        self._writer = writer
        self._env = env
        self._tables = tables  # ``name: Final = {...}`` lines, written after every class

    def field(self, field: Any, tp: Any, slot: str, dst: str) -> list[str]:
        """Lines checking the value ``v`` of a field and writing its JSON to ``dst``."""
        meta = field.metadata
        writer = self._writer
        if writer.is_plain(tp):
            if meta.get("skip_invalid_items"):
                return [_SLOW]
            check = writer.value_code(tp, meta, slot, "''", self._env)
            if any(_REBINDS.match(line) for line in check):  # the JSON is the value given
                return ["w = v", *check, f"{dst} = w"]
            return [*check, f"{dst} = v"]
        if meta.get("wire") == "params" and writer.method_loader(tp) is not None:
            return [_SLOW]  # loaded as the class of the request's method
        if "item" in meta or meta.get("skip_invalid_items"):
            return [_SLOW]
        constrained = any(k in meta for k in ("minItems", "minLength"))
        check = writer.constraint_lines(meta, slot, "''", self._env, constrained=constrained)
        return self._value(tp, "v", dst, slot, 0) + check  # the constraints: once ``v`` is a list

    def _value(self, tp: Any, src: str, dst: str, slot: str, depth: int) -> list[str]:
        """Lines checking the Python value ``src`` of type ``tp``, its JSON to ``dst``."""
        tp = unwrap_annotated(tp)
        if attrs.has(tp):
            return [
                f"if {src}.__class__ is not _{tp.__name__}_cls:",
                f"    {_SLOW}",
                f"{dst} = {checked_name(tp)}({src}, c)",
            ]
        if get_origin(tp) is list:
            items = self._items(tp, src, dst, slot, depth)
            return [f"if {src}.__class__ is not list:", f"    {_SLOW}", *items]
        if is_union(tp):
            return self._union(tp, src, dst, slot, depth)
        return [_SLOW]

    def _items(self, tp: Any, src: str, dst: str, slot: str, depth: int) -> list[str]:
        """Lines writing the items of the list ``src`` (known to be a list) to ``dst``."""
        item, out, items = f"i{depth}", f"y{depth}", f"l{depth}"
        inner = self._value(get_args(tp)[0], item, out, slot, depth + 1)
        return [
            f"{items} = []",
            f"for {item} in {src}:",
            *(f"    {line}" for line in inner),
            f"    {items}.append({out})",
            f"{dst} = {items}",
        ]

    def _union(self, tp: Any, src: str, dst: str, slot: str, depth: int) -> list[str]:
        writer = self._writer
        members = [unwrap_annotated(m) for m in get_args(tp) if m not in NONE_TYPES]
        classes = [
            m for m in members if attrs.has(m) and not getattr(m, "__agentproto_other__", False)
        ]
        lists = [m for m in members if get_origin(m) is list and not writer.is_plain(m)]
        plain = [m for m in members if writer.is_plain(m)]
        if len(lists) > 1 or (lists and any(get_origin(m) is list for m in plain)):
            return [_SLOW]  # a list would fit more than one member
        lines: list[str] = []
        pad = ""
        if lists:
            inner = self._items(lists[0], src, dst, slot, depth + 1)
            lines += [f"if {src}.__class__ is list:", *(f"    {line}" for line in inner), "else:"]
            pad = "    "
        rest: list[str]
        if plain:
            loader = f"{slot}_plain{depth}"
            self._env[loader] = writer.loader(plain[0] if len(plain) == 1 else Union[tuple(plain)])  # noqa: UP007
            # scalars only: the dumper would rewrite an object or a list holding one
            rest = [
                f"if {src}.__class__ not in (str, int, float, bool):",
                f"    {_SLOW}",
                f"{loader}({src}, '', c)",
                f"{dst} = {src}",
            ]
        else:
            rest = [_SLOW]
        if classes:
            table = f"{slot}_classes{depth}"
            pairs = ", ".join(f"_{m.__name__}_cls: {checked_name(m)}" for m in classes)
            self._tables.append(f"{table}: Final[dict[type, CheckedDumper]] = {{{pairs}}}")
            fn = f"f{depth}"
            rest = [
                f"{fn} = {table}.get({src}.__class__)",
                f"if {fn} is not None:",
                f"    {dst} = {fn}({src}, c)",
                "else:",
                *(f"    {line}" for line in rest),
            ]
        return lines + [f"{pad}{line}" for line in rest]


def checked_dumper_lines(
    writer: LoaderWriter, cls: type, env: dict[str, Any], prefix: str, tables: list[str]
) -> list[str]:
    """The source of the checked dumper of ``cls``, whose loader was just written
    with the per-class names ``env`` holds (``{prefix}F{i}``: the loader's slots)."""
    hints = writer.hints(cls)
    slots = {f.name: f"{prefix}F{i}" for i, f in enumerate(loader_fields(cls))}
    fields = _Writer(writer, env, tables)
    lines = [f"def {checked_name(cls)}(o: Any, c: Context) -> dict[str, Any]:"]
    lines.append("    d: dict[str, Any] = {}")
    for field in attrs.fields(cls):
        meta = field.metadata
        if meta.get("extra"):
            continue
        wire = meta["wire"]
        tp = strip_none(unwrap_annotated(hints[field.name]))
        body = fields.field(field, tp, slots[field.name], f"d[{wire!r}]")
        lines.append(f"    v = o.{field.name}")
        null = ["if v is None:", f"    d[{wire!r}] = None", "else:"]
        if meta.get("patch"):
            head, pad = ["if v is not UNSET:", *(f"    {line}" for line in null)], "        "
        elif meta.get("required") and meta.get("nullable"):
            head, pad = null, "    "
        elif meta.get("required"):
            head, pad = [], ""
        else:
            head, pad = ["if v is not None:"], "    "
        lines += [f"    {line}" for line in head] + [f"    {pad}{line}" for line in body]
    if not getattr(cls, "__agentproto_closed__", False):
        lines += [  # members the schema leaves open, as the loader keeps them
            "    e = o.extra",
            "    if e:",
            f"        if e.__class__ is not dict or not {prefix}KNOWN.isdisjoint(e):",
            f"            {_SLOW}",
            "        if c.deep is not None:",
            "            c.deep(e, '')",
            "        d.update(e)",
        ]
    lines.append("    return d")
    return lines
