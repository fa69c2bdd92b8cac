"""ACP method tables, read off the generated ``METHODS`` table.

Theory of operation
-------------------
The code generator appends to each generated ACP module a ``METHODS`` table: for
every (method, kind) the schema marks with ``x-method``, who handles it
(``"agent"``, ``"client"``, ``"protocol"`` or ``"proxy"``, from ``x-side``), the
names of its params and result types and whether the stable schema has it too.
This module resolves those names in the module into one :class:`MethodTable` per
protocol version; nothing here names a method by hand or guesses from class
names.

A params or result type is a generated class or a union alias
(``SetSessionConfigOptionRequest`` is one of ``IdSetSessionConfigOptionRequest``,
``BooleanSetSessionConfigOptionRequest`` and a catch-all); the converter loads
either. Finding the method of a typed object (:meth:`MethodTable.for_params`)
looks at its class: the class named as a method's params comes first; a member
of a union alias then belongs to that alias's method when no other alias has it
too. An alias that only renames another method's class (``InitializeProxyRequest``
is ``InitializeRequest``) leaves the class to the method it is named for.
A table entry naming a type the module lacks fails the table loudly, so a
regeneration that breaks the table cannot go unnoticed.

The generator also appends ``CAPABILITIES``: for each capability marker of the
agent's ``initialize`` answer that advertises methods, its wire path and the
methods the schema says it advertises (``("session", "delete")`` →
``session/delete``). :attr:`MethodTable.capabilities` holds it, read as is.
"""

from __future__ import annotations

import functools
import importlib
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from agentproto._core.errors import MethodTableError, UsageError

__all__ = [
    "MethodSpec",
    "MethodTable",
    "build_method_table",
    "classes_of",
    "method_table",
]

Kind = Literal["request", "notification"]

_MODULES: dict[int, str] = {1: "agentproto.acp._generated_v1", 2: "agentproto.acp._generated_v2"}
"""The generated module of each protocol version, imported when its table is first built
(so that v1 is loaded only when used)."""


@attrs.frozen(kw_only=True)
class MethodSpec:
    """What the schema says about one JSON-RPC method.

    Attributes:
        method: the JSON-RPC method name.
        kind: ``"request"`` (answered by a response) or ``"notification"``.
        side: who handles it: ``"agent"``, ``"client"``, ``"protocol"``
            (``$/cancel_request``, either side) or ``"proxy"``.
        params: the params type (a generated class or union alias), ``None``
            when the generated code has none (params stay plain JSON).
        result: a request's result type, ``None`` for a notification or when the
            generated code has none (the result stays plain JSON).
        stable: whether the stable schema has the method (the same method and
            kind); ``None`` when the module was generated without a stable
            schema to compare with.
    """

    method: str
    kind: Kind
    side: str
    params: Any = None
    result: Any = None
    stable: bool | None = None


@attrs.frozen(kw_only=True)
class MethodTable:
    """The methods of one ACP protocol version.

    Attributes:
        protocol: the ACP major version (1 or 2).
        requests: request methods by name.
        notifications: notification methods by name (a name may be both a
            request and a notification, e.g. ``mcp/message``).
        capabilities: each agent capability marker that advertises methods (its
            wire path under the ``initialize`` result's ``capabilities``) and the
            agent methods it advertises; empty for a version without markers.
    """

    protocol: int
    requests: Mapping[str, MethodSpec]
    notifications: Mapping[str, MethodSpec]
    capabilities: Mapping[tuple[str, ...], tuple[str, ...]] = attrs.field(factory=dict)
    _by_params: Mapping[Any, MethodSpec] = attrs.field(alias="by_params")
    _by_result: Mapping[Any, MethodSpec] = attrs.field(alias="by_result")

    def for_params(self, cls: type | types.UnionType) -> MethodSpec | None:
        """The method whose params are ``cls``, if any.

        Args:
            cls: the class of a params object (a method's params class, or a
                member of a method's union alias), or the union alias itself.
        """
        return self._by_params.get(cls)

    def for_result(self, cls: type | types.UnionType) -> MethodSpec | None:
        """The request method whose result is ``cls`` (as for :meth:`for_params`), if any."""
        return self._by_result.get(cls)

    def handled_by(self, side: str) -> list[MethodSpec]:
        """Every method (requests first) that ``side`` handles."""
        specs = [*self.requests.values(), *self.notifications.values()]
        return [spec for spec in specs if spec.side == side]


def _entry_type(module: types.ModuleType, key: tuple[str, str], name: Any) -> Any:
    """The generated type a table entry names (``None`` for none)."""
    if name is None:
        return None
    if not isinstance(name, str) or not hasattr(module, name):
        raise MethodTableError(
            f"{module.__name__}.METHODS{key!r} names {name!r}, which the module lacks"
        )
    return getattr(module, name)


def _spec(module: types.ModuleType, key: Any, entry: Any) -> MethodSpec:
    if not (isinstance(key, tuple) and len(key) == 2 and isinstance(entry, Mapping)):
        raise MethodTableError(f"{module.__name__}.METHODS: malformed entry {key!r}")
    method, kind = key
    if not isinstance(method, str) or kind not in ("request", "notification"):
        raise MethodTableError(f"{module.__name__}.METHODS{key!r}: not a (method, kind)")
    if not isinstance(entry.get("side"), str):
        raise MethodTableError(f"{module.__name__}.METHODS{key!r}: no side")
    stable = entry.get("stable")
    return MethodSpec(
        method=method,
        kind=kind,
        side=entry["side"],
        params=_entry_type(module, key, entry.get("params")),
        result=_entry_type(module, key, entry.get("result")),
        stable=stable if isinstance(stable, bool) else None,
    )


def classes_of(tp: Any) -> tuple[type, ...] | None:
    """The classes an instance of ``tp`` may have: ``tp`` itself, or a union's members.

    ``None`` when ``tp`` is not made of classes only (``Any``, a plain JSON type).
    """
    if isinstance(tp, type) and attrs.has(tp):
        return (tp,)
    members = typing.get_args(tp) if isinstance(tp, types.UnionType) else ()
    if members and all(isinstance(m, type) and attrs.has(m) for m in members):
        return members
    return None


def _reverse(specs: list[tuple[Any, Any, MethodSpec]], what: str) -> dict[Any, MethodSpec]:
    """Types → the spec they belong to (see the module docstring for the rule).

    Args:
        specs: (type, the name the table gives it, spec) of each entry.
        what: ``"params"`` or ``"result"``, for the error message.
    """
    own: dict[Any, MethodSpec] = {}
    for tp, name, spec in specs:
        if isinstance(tp, type) and tp.__name__ == name:
            if tp in own:
                raise MethodTableError(f"{name} is the {what} of two methods")
            own[tp] = spec
    shared: dict[Any, list[MethodSpec]] = {}
    for tp, _, spec in specs:
        if isinstance(tp, types.UnionType):
            own.setdefault(tp, spec)
            for member in classes_of(tp) or ():
                shared.setdefault(member, []).append(spec)
    for member, claims in shared.items():
        if member not in own and len(claims) == 1:
            own[member] = claims[0]
    return own


def build_method_table(module: types.ModuleType, protocol: int) -> MethodTable:
    """Build the method table of a generated module from its ``METHODS``.

    Args:
        module: a generated ``_generated_v*`` module.
        protocol: its ACP major version, recorded on the table.

    Raises:
        MethodTableError: the module has no ``METHODS`` table, an entry is
            malformed or names a type the module lacks, or a class is named as
            the params (or result) of two methods.
    """
    table = getattr(module, "METHODS", None)
    if not isinstance(table, Mapping):
        raise MethodTableError(f"{module.__name__} has no METHODS table; regenerate it")
    requests: dict[str, MethodSpec] = {}
    notifications: dict[str, MethodSpec] = {}
    entries = [(_spec(module, key, entry), entry) for key, entry in table.items()]
    for spec, _ in entries:
        (requests if spec.kind == "request" else notifications)[spec.method] = spec
    by_params = _reverse([(s.params, e.get("params"), s) for s, e in entries], "params")
    by_result = _reverse([(s.result, e.get("result"), s) for s, e in entries], "result")
    capabilities = getattr(module, "CAPABILITIES", {})
    for path, methods in capabilities.items():
        if unknown := set(methods) - set(requests) - set(notifications):
            raise MethodTableError(
                f"{module.__name__}.CAPABILITIES{path!r} names methods it lacks: {sorted(unknown)}"
            )
    return MethodTable(
        protocol=protocol,
        requests=types.MappingProxyType(requests),
        notifications=types.MappingProxyType(notifications),
        capabilities=types.MappingProxyType(dict(capabilities)),
        by_params=types.MappingProxyType(by_params),
        by_result=types.MappingProxyType(by_result),
    )


@functools.cache
def method_table(protocol: int = 2) -> MethodTable:
    """The method table of ACP ``protocol`` (1 or 2), built once.

    Raises:
        UsageError: ``protocol`` is not 1 or 2.
        MethodTableError: the generated module is inconsistent.
    """
    module = _MODULES.get(protocol)
    if module is None:
        raise UsageError("acp.unknown-protocol", f"ACP protocol {protocol!r} is not 1 or 2")
    return build_method_table(importlib.import_module(module), protocol)
