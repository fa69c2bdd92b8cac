"""ACP method tables, read off the generated classes.

Theory of operation
-------------------
The code generator stamps every request, response and notification params class
with ``__agentproto_method__`` (the JSON-RPC method) and ``__agentproto_side__``
(who handles the method: ``"agent"``, ``"client"``, ``"protocol"`` or
``"proxy"``). This module turns those stamps into one :class:`MethodTable` per
protocol version; nothing here names a method by hand.

A stamped class is classified by its name: ``…Request`` is a request's params,
``…Response`` its result, ``…Notification`` a notification's params. A request
and its result are paired by method; when only one of the pair is stamped (the
generator cannot stamp a union alias such as ``SetSessionConfigOptionRequest``),
the other is looked up in the module by the counterpart name, and ``None`` is
recorded when there is none (the connection then passes that side untyped).
A stamped class that fits none of the rules fails the table loudly, so a
regeneration that breaks the convention cannot go unnoticed.

Stability: the generated modules are built from the *unstable* schemas only and
carry no mark of which methods the stable schema also has. The hook is the class
attribute ``__agentproto_stable__`` (``True``/``False``): when the generator
emits it, :attr:`MethodSpec.stable` reports it; until then it is ``None``
("not known").
"""

from __future__ import annotations

import functools
import types
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from agentproto._core.errors import AgentProtoError, UsageError
from agentproto.acp import _generated_v1, _generated_v2

__all__ = [
    "MethodSpec",
    "MethodTable",
    "MethodTableError",
    "build_method_table",
    "method_table",
]

Kind = Literal["request", "notification"]

_SUFFIXES = ("Request", "Response", "Notification")
_STABLE_HOOK = "__agentproto_stable__"
_MODULES: dict[int, types.ModuleType] = {1: _generated_v1, 2: _generated_v2}


class MethodTableError(AgentProtoError, RuntimeError):
    """The generated module's stamps do not make a consistent method table."""


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
        stable: whether the stable schema has the method; ``None`` while the
            generated code does not say (see the module documentation).
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
    """

    protocol: int
    requests: Mapping[str, MethodSpec]
    notifications: Mapping[str, MethodSpec]
    _by_params: Mapping[type, MethodSpec] = attrs.field(alias="by_params")
    _by_result: Mapping[type, MethodSpec] = attrs.field(alias="by_result")

    def for_params(self, cls: type) -> MethodSpec | None:
        """The method whose params class is ``cls`` (exactly), if any."""
        return self._by_params.get(cls)

    def for_result(self, cls: type) -> MethodSpec | None:
        """The request method whose result class is ``cls`` (exactly), if any."""
        return self._by_result.get(cls)

    def handled_by(self, side: str) -> list[MethodSpec]:
        """Every method (requests first) that ``side`` handles."""
        specs = [*self.requests.values(), *self.notifications.values()]
        return [spec for spec in specs if spec.side == side]


def _stamped(module: types.ModuleType) -> list[type]:
    """The classes of ``module`` that carry a method stamp, in name order."""
    found = [
        value
        for name, value in vars(module).items()
        if isinstance(value, type)
        and value.__name__ == name
        and "__agentproto_method__" in value.__dict__
    ]
    return sorted(found, key=lambda cls: cls.__name__)


def _suffix(cls: type) -> str:
    for suffix in _SUFFIXES:
        if cls.__name__.endswith(suffix) and cls.__name__ != suffix:
            return suffix
    raise MethodTableError(
        f"{cls.__module__}.{cls.__name__} carries a method stamp but its name ends in none "
        f"of {', '.join(_SUFFIXES)}"
    )


def _stability(*types_: Any) -> bool | None:
    marks = {getattr(tp, _STABLE_HOOK) for tp in types_ if hasattr(tp, _STABLE_HOOK)}
    if len(marks) > 1:
        raise MethodTableError(f"{types_!r} disagree on {_STABLE_HOOK}")
    return marks.pop() if marks else None


def _counterpart(module: types.ModuleType, cls: type, suffix: str, other: str) -> Any:
    """The type named like ``cls`` with ``other`` for ``suffix``, or ``None``."""
    return getattr(module, cls.__name__[: -len(suffix)] + other, None)


def _request_spec(
    module: types.ModuleType, method: str, request: type | None, response: type | None
) -> MethodSpec:
    present = [cls for cls in (request, response) if cls is not None]
    sides = {cls.__dict__["__agentproto_side__"] for cls in present}
    if len(sides) != 1:
        raise MethodTableError(f"{method!r}: request and response name different sides {sides}")
    params: Any = request
    result: Any = response
    if request is None and response is not None:
        params = _counterpart(module, response, "Response", "Request")
    if response is None and request is not None:
        result = _counterpart(module, request, "Request", "Response")
    return MethodSpec(
        method=method,
        kind="request",
        side=sides.pop(),
        params=params,
        result=result,
        stable=_stability(*present),
    )


def build_method_table(module: types.ModuleType, protocol: int) -> MethodTable:
    """Build the method table of a generated module.

    Args:
        module: a generated ``_generated_v*`` module.
        protocol: its ACP major version, recorded on the table.

    Raises:
        MethodTableError: a stamped class has a name the rules do not know, or
            two classes claim the same method and kind.
    """
    pairs: dict[str, dict[str, type]] = {}
    notifications: dict[str, MethodSpec] = {}
    for cls in _stamped(module):
        method = cls.__dict__["__agentproto_method__"]
        suffix = _suffix(cls)
        if suffix == "Notification":
            if method in notifications:
                raise MethodTableError(f"{method!r}: two notification params classes")
            notifications[method] = MethodSpec(
                method=method,
                kind="notification",
                side=cls.__dict__["__agentproto_side__"],
                params=cls,
                stable=_stability(cls),
            )
            continue
        pair = pairs.setdefault(method, {})
        if suffix in pair:
            raise MethodTableError(f"{method!r}: two {suffix} classes")
        pair[suffix] = cls
    requests = {
        method: _request_spec(module, method, pair.get("Request"), pair.get("Response"))
        for method, pair in pairs.items()
    }
    by_params = {
        spec.params: spec
        for spec in [*requests.values(), *notifications.values()]
        if isinstance(spec.params, type)
    }
    by_result = {spec.result: spec for spec in requests.values() if isinstance(spec.result, type)}
    return MethodTable(
        protocol=protocol,
        requests=types.MappingProxyType(requests),
        notifications=types.MappingProxyType(notifications),
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
    return build_method_table(module, protocol)
