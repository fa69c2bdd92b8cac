"""Capabilities: what an agent declares about itself, read, written and queried.

Theory of operation. The draft's capabilities page gives an ``AgentCapabilities``
declaration (the generated :class:`~agentproto.agui.schema.AgentCapabilities`)
these obligations, which this module keeps:

* **Omitted means undeclared, not unsupported.** :meth:`Capabilities.supports`
  answers ``True``, ``False`` (declared so) or ``None`` (undeclared); a consumer
  must not read the absence of a declaration as the absence of the capability.
* **Unrecognised members are not a reason to reject.** A newer agent's
  declaration may carry a group or field this schema lacks: it is stripped and
  reported (``unknown-field``), never fatal. A *known* field holding a value the
  schema rejects is malformed, and a malformed declaration is not used: it is a
  :class:`~agentproto.SchemaError` listing every problem.
* **A rejected or absent declaration never prevents a run.**
  :meth:`Capabilities.read` never raises on the document: what it cannot
  validate reads as an agent that declared nothing, with a
  ``capabilities.rejected`` diagnostic.
* **Open objects stay open.** ``identity.metadata`` and ``custom`` keep every key
  and value untouched.
* **Declarations are informative.** Nothing here checks a stream against a
  declaration; the event stream stays authoritative.

Two flags are "only meaningful when" another is true (the schema's own words):
``execution.sandboxed`` needs ``execution.codeExecution``, and
``humanInTheLoop.approveWithEdits`` needs ``humanInTheLoop.interrupts``. Where the
prerequisite is declared ``False`` the flag means nothing, so :meth:`supports`
answers ``False``, and a declaration saying ``true`` there gets a
``capabilities.not-meaningful`` diagnostic. Subagent names are unique names
(``SubagentInfo.name``): a repeated one gets ``capabilities.duplicate-subagent``.

The flag paths are the schema's own: every boolean field of every group,
found by walking the generated classes, in wire names (``"multimodal.input.image"``).
"""

from __future__ import annotations

import logging
import typing
from collections.abc import Mapping
from typing import Any, Final

import attrs

from agentproto._core.diagnostics import Diagnostic, log_diagnostics
from agentproto._core.errors import DecodeError, SchemaError, UsageError
from agentproto._core.readonly import readonly, thaw
from agentproto.agui import _generated
from agentproto.agui._generated import AgentCapabilities, SubagentInfo, Tool
from agentproto.agui._protocol.wire import CONVERTER

__all__ = [
    "CAPABILITY_FLAGS",
    "Capabilities",
    "dump_capabilities",
    "parse_capabilities",
]

_logger = logging.getLogger("agentproto.agui")


def _boolean_paths(cls: type, prefix: str) -> dict[str, tuple[str, ...]]:
    """Every boolean field under ``cls``: wire path -> the Python attribute names to it."""
    hints = typing.get_type_hints(cls, vars(_generated))
    found: dict[str, tuple[str, ...]] = {}
    for field in attrs.fields(cls):
        wire = field.metadata.get("wire")
        if wire is None:
            continue
        members = [m for m in typing.get_args(hints[field.name]) if m is not type(None)]
        if members == [bool]:
            found[prefix + wire] = (field.name,)
        elif len(members) == 1 and attrs.has(members[0]):
            for path, names in _boolean_paths(members[0], f"{prefix}{wire}.").items():
                found[path] = (field.name, *names)
    return found


_PATHS: Final = _boolean_paths(AgentCapabilities, "")
CAPABILITY_FLAGS: Final = tuple(_PATHS)
"""Every flag :meth:`Capabilities.supports` answers for: the schema's boolean
fields, as dotted wire paths (``"reasoning.streaming"``, ``"multimodal.input.pdf"``)."""

# flag -> the flag it is "only meaningful when" true (the schema descriptions say so)
_PREREQUISITES: Final = {
    "execution.sandboxed": "execution.codeExecution",
    "humanInTheLoop.approveWithEdits": "humanInTheLoop.interrupts",
}
if _gone := {flag for pair in _PREREQUISITES.items() for flag in pair} - set(_PATHS):
    raise ImportError(f"capability flags gone from the schema: {sorted(_gone)}")


def parse_capabilities(
    document: Any, *, diagnostics: list[Diagnostic] | None = None
) -> AgentCapabilities:
    """Read an agent's declaration (decoded JSON) into the typed class.

    Unrecognised groups and fields are stripped, never fatal (a newer agent's
    declaration must not bounce off this consumer); each is an ``unknown-field``
    diagnostic with its path, put in ``diagnostics`` when given, else logged at
    WARNING on the ``agentproto.agui`` logger. The open objects
    (``identity.metadata``, ``custom``) are kept as they are.

    Args:
        document: the declaration, as decoded JSON (a dict).
        diagnostics: where to report what was stripped.

    Returns:
        the typed declaration.

    Raises:
        SchemaError: a known field carries a value the schema rejects (a string
            where a boolean belongs, a subagent without ``name``, ...); its
            ``problems`` list every one, each at its wire location.
        DecodeError: the document nests deeper than the parser's depth limit.
    """
    found: list[Diagnostic] = [] if diagnostics is None else diagnostics
    loaded: AgentCapabilities = CONVERTER.load(document, AgentCapabilities, diagnostics=found)
    if diagnostics is None:
        log_diagnostics(found, _logger)
    return loaded


def dump_capabilities(capabilities: AgentCapabilities) -> dict[str, Any]:
    """The wire JSON of a declaration, held to the schema first.

    Args:
        capabilities: the typed declaration (only what the agent declares is set).

    Returns:
        a new ``dict`` in wire names, absent fields left out; it parses back to an
        equal declaration.

    Raises:
        SchemaError: a field holds a value the schema rejects; ``problems`` lists
            every one.
    """
    wire: dict[str, Any] = thaw(CONVERTER.dump(capabilities))
    CONVERTER.load(wire, AgentCapabilities)
    return wire


@attrs.frozen
class Capabilities:
    """What an agent declared, with the queries a client gates features on.

    Build it with :meth:`read` (from JSON; never fails a run) or from a typed
    declaration (``Capabilities(declaration)``).

    Attributes:
        declaration: the typed declaration; an empty one when nothing was declared
            or the declaration was rejected.
    """

    declaration: AgentCapabilities = attrs.field(factory=AgentCapabilities)

    @classmethod
    def read(cls, document: Any, *, diagnostics: list[Diagnostic] | None = None) -> Capabilities:
        """A declaration read the way a consumer must: never in the way of a run.

        ``None`` (no declaration obtained) and a malformed declaration both read as
        an agent that declared nothing; a rejected one is reported as a
        ``capabilities.rejected`` diagnostic naming the problems. Stripped unknown
        members and the checks of :meth:`check` are reported too.

        Args:
            document: the declaration as decoded JSON, or ``None``.
            diagnostics: where to report; when ``None``, each is logged at WARNING
                on the ``agentproto.agui`` logger.
        """
        found: list[Diagnostic] = []
        if document is None:
            result = cls()
        else:
            try:
                result = cls(parse_capabilities(document, diagnostics=found))
            except (SchemaError, DecodeError) as exc:  # what cannot be validated is not used
                problems = exc.problems if isinstance(exc, SchemaError) else (exc,)
                found.append(
                    Diagnostic(
                        code="capabilities.rejected",
                        message="the declaration is not used (read as one declaring"
                        f" nothing): {'; '.join(str(problem) for problem in problems)}",
                        path=getattr(exc, "location", None),
                    )
                )
                result = cls()
        found += result.check()
        if diagnostics is None:
            log_diagnostics(found, _logger)
        else:
            diagnostics += found
        return result

    def supports(self, flag: str) -> bool | None:
        """Whether the agent declared ``flag``: ``True``, ``False``, or ``None``
        when it said nothing (undeclared is not unsupported).

        A flag that is "only meaningful when" another is true reads ``False`` when
        that one is declared ``False``.

        Args:
            flag: a dotted wire path from :data:`CAPABILITY_FLAGS`, e.g.
                ``"humanInTheLoop.interrupts"``.

        Raises:
            UsageError: ``capabilities.unknown-flag``: ``flag`` names no
                boolean field of the schema.
        """
        if flag not in _PATHS:
            raise UsageError(
                "capabilities.unknown-flag",
                f"{flag!r} names no capability flag; known: {', '.join(CAPABILITY_FLAGS)}",
            )
        prerequisite = _PREREQUISITES.get(flag)
        if prerequisite is not None and self.supports(prerequisite) is False:
            return False
        return self._declared(flag)

    @property
    def subagents(self) -> tuple[SubagentInfo, ...]:
        """The subagents the agent may invoke (definitions, not invocations)."""
        group = self.declaration.multi_agent
        return tuple(group.subagents or ()) if group is not None else ()

    @property
    def provided_tools(self) -> tuple[Tool, ...]:
        """The tools the agent provides itself (``tools.items``), distinct from the
        tools an application offers in ``RunAgentInput.tools``."""
        group = self.declaration.tools
        return tuple(group.items or ()) if group is not None else ()

    @property
    def custom(self) -> Mapping[str, Any]:
        """The integration-specific capabilities, read-only (empty when none)."""
        custom = self.declaration.custom
        return readonly(custom if custom is not None else {})  # type: ignore[no-any-return]

    def check(self) -> list[Diagnostic]:
        """What the declaration says that cannot hold beyond the schema: a flag
        declared true whose prerequisite is declared false
        (``capabilities.not-meaningful``), a subagent name given twice
        (``capabilities.duplicate-subagent``)."""
        found = []
        for flag, prerequisite in _PREREQUISITES.items():
            if self._declared(flag) is True and self.supports(prerequisite) is False:
                found.append(
                    Diagnostic(
                        code="capabilities.not-meaningful",
                        message=f"{flag} is declared true, but it is only meaningful when"
                        f" {prerequisite} is true, which is declared false",
                        path="/" + flag.replace(".", "/"),
                    )
                )
        seen: set[str] = set()
        for index, info in enumerate(self.subagents):
            if info.name in seen:
                found.append(
                    Diagnostic(
                        code="capabilities.duplicate-subagent",
                        message=f"subagent name {info.name!r} is declared twice;"
                        f" a subagent's name is its unique identifier",
                        path=f"/multiAgent/subagents/{index}/name",
                        subject=info.name,
                    )
                )
            seen.add(info.name)
        return found

    def _declared(self, flag: str) -> bool | None:
        """The flag as declared, without the prerequisite rule."""
        value: Any = self.declaration
        for name in _PATHS[flag]:
            value = getattr(value, name)
            if value is None:
                return None
        return bool(value)
