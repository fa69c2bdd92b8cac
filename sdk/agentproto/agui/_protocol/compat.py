"""Version compatibility: the boundary every incoming AG-UI event passes first.

Theory of operation. Before anything is checked or stripped, the boundary looks
at the raw JSON of each event and

* reads the producer's declared ``protocolVersion`` (on ``RUN_STARTED``) and warns
  when it is newer than the version this client speaks, or cannot be read as
  ``MAJOR.MINOR`` at all; either way processing goes on (versioning rule);
* translates shapes the protocol has retired into their current form, with one
  warning per retired event type: the ``THINKING_*`` events of early versions
  become the ``REASONING_*`` events that replaced them, with stable synthesized
  ids;
* when the peer is known to predate an era (``peer_version``), applies that
  era's down-translation: a peer at or before 0.0.57 knows no subagents, so
  ``SUBAGENT_*`` events are dropped with a warning and ``subagentRunId``
  attribution is removed;
* reads a whole-field ``null`` that earlier versions accepted in place of an
  absent optional field as the absent field, with one ``compat.deprecated-null``
  warning per occurrence, for exactly the fields the upstream deprecation
  registry lists (:data:`NULL_RETIREMENTS`), wherever the schema puts them in an
  event (nested messages and ``RUN_STARTED.input`` included), and only until the
  expiry the registry records against each row. The registry dates its rows, so
  expiry is judged by the calendar (UTC; the clock is injectable), whatever
  version the peer speaks: on the expiry date the row still applies, the day
  after it the ``null`` is malformed like any other and enforcement rejects it.
  A ``null`` the list does not name is left for enforcement to reject, and a
  ``null`` that is a value (under a metadata key, in open material) is never
  looked at: the walk follows the schema's types and stops at open material.

The boundary works on dicts and returns dicts; it never raises for content it
does not know (that is enforcement's job, the next stage).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from functools import cache
from typing import Any, Final, get_args, get_origin

import attrs

from agentproto._core.describe import describe
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import UsageError
from agentproto.agui import _generated as g
from agentproto.agui._protocol.kinds import EVENT_CLASSES, SUBAGENT_LIFECYCLE, has_member

__all__ = [
    "NULL_RETIREMENTS",
    "CompatibilityBoundary",
    "check_declarable",
    "check_peer_version",
    "flatten_for_peer",
    "parse_version",
    "upgrade_input",
]

_VERSION: Final = re.compile(r"^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$")
_SEMVER: Final = re.compile(r"^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$")

# retired THINKING_* event → (current event type, id kind)
_THINKING: Final = {
    "THINKING_START": "REASONING_START",
    "THINKING_END": "REASONING_END",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
}
_SUBAGENT_ERA: Final = (0, 0, 57)
_TEXT_ONLY_ERA: Final = (0, 0, 39)
_MEDIA_KINDS: Final = (("image/", "image"), ("audio/", "audio"), ("video/", "video"))


def parse_version(text: object) -> tuple[int, ...] | None:
    """``"1.0"`` → ``(1, 0)``; ``"0.0.57"`` → ``(0, 0, 57)``; anything else → None."""
    if not isinstance(text, str):
        return None
    match = _VERSION.match(text) or _SEMVER.match(text)
    return tuple(int(part) for part in match.groups()) if match else None


# ---- retired whole-field nulls -------------------------------------------------------

NULL_RETIREMENTS: Final[tuple[tuple[str | None, str, date], ...]] = (
    ("ToolCallStartEvent", "parentMessageId", date(2027, 8, 24)),
    ("ToolCallChunkEvent", "parentMessageId", date(2027, 8, 24)),
    ("RunFinishedEvent", "outcome", date(2027, 8, 24)),
    (None, "rawEvent", date(2027, 9, 8)),
    ("RunFinishedEvent", "result", date(2027, 9, 8)),
    ("SubagentFinishedEvent", "result", date(2027, 9, 8)),
    ("ResumeEntry", "payload", date(2027, 9, 8)),
    ("ImagePart", "metadata", date(2027, 9, 8)),
    ("AudioPart", "metadata", date(2027, 9, 8)),
    ("VideoPart", "metadata", date(2027, 9, 8)),
    ("DocumentPart", "metadata", date(2027, 9, 8)),
    ("Tool", "parameters", date(2027, 9, 8)),
    ("RunAgentInput", "forwardedProps", date(2027, 9, 8)),
)
"""The whole-field nulls a consumer reads as absent, with the day each retirement
expires: (schema definition, wire field, last day it applies); a definition of
``None`` means every event class that has the field.

The closed list is published data, not a rule of this SDK: it is the "omit the
field" rows of the upstream deprecation registry (``DEPRECATIONS.md`` at the root of
the ag-ui-protocol/ag-ui repository, which the draft's processing page names as the
list). Every name in it is checked at import against the generated classes.
"""


@attrs.frozen
class _NullPlan:
    """Where a generated class may carry a retired null: its own fields, and the
    fields whose values may hold one further down."""

    nulls: Mapping[str, date]  # wire name -> last day the null is read as absent
    children: tuple[tuple[str, Any], ...]  # (wire name, type) worth walking into


def _retired_fields() -> dict[type, dict[str, date]]:
    table: dict[type, dict[str, date]] = {}
    for definition, wire, expiry in NULL_RETIREMENTS:
        if definition is None:
            owners = [cls for cls in EVENT_CLASSES.values() if has_member(cls, wire)]
        else:
            cls = getattr(g, definition, None)
            if not (isinstance(cls, type) and attrs.has(cls)):
                raise AssertionError(f"NULL_RETIREMENTS names {definition!r}, not a schema class")
            owners = [cls]
        for cls in owners:
            field = next((f for f in attrs.fields(cls) if f.metadata.get("wire") == wire), None)
            if field is None or field.metadata.get("required"):
                raise AssertionError(f"NULL_RETIREMENTS: {cls.__name__} has no optional {wire!r}")
            table.setdefault(cls, {})[wire] = expiry
    return table


_RETIRED: Final = _retired_fields()
_EVENT_NAMES: Final = {cls: tag for tag, cls in EVENT_CLASSES.items()}


def _classes(tp: Any) -> frozenset[type]:
    """The generated classes a type annotation mentions (through lists and unions)."""
    if isinstance(tp, type) and attrs.has(tp):
        return frozenset({tp})
    if get_origin(tp) is list or _is_union(tp):
        return frozenset().union(*map(_classes, get_args(tp)))
    return frozenset()


def _is_union(tp: Any) -> bool:
    return isinstance(tp, types.UnionType) or get_origin(tp) is typing.Union


@cache
def _plan(cls: type) -> _NullPlan:
    hints = typing.get_type_hints(cls, vars(g))
    children = tuple(
        (field.metadata["wire"], hints[field.name])
        for field in attrs.fields(cls)
        if any(_reaches(member) for member in _classes(hints[field.name]))
    )
    return _NullPlan(nulls=_RETIRED.get(cls, {}), children=children)


@cache
def _reaches(cls: type) -> bool:
    """Whether a value of ``cls`` may hold a retired null (the schema is acyclic)."""
    return cls in _RETIRED or bool(_plan(cls).children)


@cache
def _consts(cls: type) -> tuple[tuple[str, Any], ...]:
    """The constant-valued fields (``type``, ``role``, ...) that identify a union member."""
    return tuple(
        (f.metadata["wire"], f.metadata["const"])
        for f in attrs.fields(cls)
        if "const" in f.metadata
    )


def _strip_value(
    tp: Any, value: Any, path: str, found: list[Diagnostic], today: Callable[[], date]
) -> Any:
    """``value`` (of type ``tp``) with its retired nulls removed; the same object when
    it holds none (copy on write: the caller's JSON is never changed)."""
    if type(value) is dict:
        fitting = [
            cls
            for cls in _classes(tp)
            if all(value.get(wire) == const for wire, const in _consts(cls))
        ]
        if len(fitting) != 1 or not _reaches(fitting[0]):
            return value  # nothing to strip, or no single member fits (enforcement judges)
        return _strip_object(fitting[0], value, path, found, today)
    if type(value) is list:
        items = [
            member
            for member in ((tp,) if get_origin(tp) is list else get_args(tp))
            if get_origin(member) is list
        ]
        if not items:
            return value
        item = get_args(items[0])[0]
        return _strip_in(value, [(index, item) for index in range(len(value))], path, found, today)
    return value


def _strip_in(
    container: Any,
    members: list[tuple[Any, Any]],
    path: str,
    found: list[Diagnostic],
    today: Callable[[], date],
) -> Any:
    """``container`` (a dict or list) with the retired nulls of ``members`` (key, type)
    removed: a copy when one is changed, else ``container`` itself."""
    out = container
    for key, tp in members:
        value = container[key]
        new = _strip_value(tp, value, f"{path}/{key}", found, today)
        if new is not value:
            if out is container:
                out = container.copy()
            out[key] = new
    return out


def _strip_object(
    cls: type, obj: dict[str, Any], path: str, found: list[Diagnostic], today: Callable[[], date]
) -> dict[str, Any]:
    plan = _plan(cls)
    out = obj
    for wire, expiry in plan.nulls.items():
        if wire in obj and obj[wire] is None and today() <= expiry:
            if out is obj:
                out = dict(obj)
            del out[wire]
            owner = _EVENT_NAMES.get(cls, cls.__name__)
            found.append(
                Diagnostic(
                    code="compat.deprecated-null",
                    message=f"{owner}.{wire}: a null in place of an absent field is a"
                    f" retired shape, accepted until {expiry.isoformat()}; read as absent"
                    " (omit the field instead)",
                    path=f"{path}/{wire}",
                    subject=f"{owner}.{wire}",
                )
            )
    members = [(wire, tp) for wire, tp in plan.children if obj.get(wire) is not None]
    return _strip_in(out, members, path, found, today) if members else out


def _today() -> date:
    return datetime.now(UTC).date()


_EVERY_EVENT_FIELDS: Final = tuple(
    dict.fromkeys(wire for definition, wire, _ in NULL_RETIREMENTS if definition is None)
)
# the event types that may carry a retired null besides in an every-event field
_NULL_KINDS: Final = frozenset(
    tag
    for tag, cls in EVENT_CLASSES.items()
    if _plan(cls).children or set(_plan(cls).nulls) - set(_EVERY_EVENT_FIELDS)
)
assert len(_EVERY_EVENT_FIELDS) <= 1, "CompatibilityBoundary.key holds one field"
# of those, the types translate changes only there (RUN_STARTED: its version is read too)
_NULLS_ONLY: Final = _NULL_KINDS - {"RUN_STARTED"}


def check_peer_version(declared: object, own: tuple[int, ...], peer: str) -> Diagnostic | None:
    """The warning a peer's ``protocolVersion`` declaration calls for, if any.

    A declaration newer than ``own`` (another minor of this line, or another major),
    or one that cannot be read as ``MAJOR.MINOR`` (``"draft"`` included), is served
    or consumed all the same: the caller proceeds, and warns with this diagnostic
    (``version.newer`` or ``version.uninterpretable``). ``peer`` names who declared
    it (``"producer"``, ``"consumer"``).
    """
    version = parse_version(declared)
    if version is None or len(version) != 2:
        return Diagnostic(
            code="version.uninterpretable",
            message=f"cannot interpret the {peer}'s protocolVersion "
            f"{describe(declared)} as MAJOR.MINOR; proceeding as with a newer version",
            path="/protocolVersion",
            subject=declared[:100] if isinstance(declared, str) else describe(declared),
        )
    if version > own:
        return Diagnostic(
            code="version.newer",
            message=f"the {peer} declares protocolVersion {declared}, newer than "
            f"{'.'.join(map(str, own))}; proceeding",
            path="/protocolVersion",
            subject=str(declared),
        )
    return None


def check_declarable(version: str | None, what: str) -> None:
    """Refuse to declare ``version`` unless it is ``MAJOR.MINOR`` (``None``: not declared).

    Raises:
        UsageError: ``version.not-declarable``; ``"draft"`` names where unfrozen
            pages are published, never a version a party may declare.
    """
    if version is None:
        return
    parsed = parse_version(version)
    if parsed is not None and len(parsed) == 2:
        return
    why = (
        "'draft' names where unfrozen pages are published, not a protocol version"
        if version == "draft"
        else "a declaration is a MAJOR.MINOR the specification publishes, such as '1.0'"
    )
    raise UsageError(
        "version.not-declarable", f"{what} cannot declare protocolVersion {version!r}: {why}"
    )


class CompatibilityBoundary:
    """Translate retired shapes and check the producer's declared version.

    Args:
        protocol_version: the ``MAJOR.MINOR`` this client speaks.
        peer_version: the newest version the peer is known to speak, when the
            client is pinned to an old peer (e.g. ``"0.0.57"``); ``None`` for a
            current peer.
        today: the clock that judges the expiry of :data:`NULL_RETIREMENTS`
            (default: today's date in UTC).

    Attributes:
        kinds: the event types :meth:`translate` may change (``None``: every type).
        key: a field any event may carry a retired null in: an event of another
            type that has this key may be changed too (``None``: no such field).
        nulls_only: the types in ``kinds`` that :meth:`translate` changes only where a
            retired null stands. The schema refuses a null in each such place (a
            retirement is a null it no longer allows), so an event of these types that
            its loader accepts holds none and would pass unchanged.
    """

    def __init__(
        self,
        *,
        protocol_version: str = "1.0",
        peer_version: str | None = None,
        today: Callable[[], date] = _today,
    ) -> None:
        own = parse_version(protocol_version)
        if own is None or len(own) != 2:
            raise ValueError(f"protocol_version must be MAJOR.MINOR, not {protocol_version!r}")
        self._own = own
        self._peer = parse_version(peer_version) if peer_version is not None else None
        self._today = today
        self.kinds: frozenset[str] | None = (
            None
            if self._peer is not None and self._peer <= _SUBAGENT_ERA
            else frozenset({"RUN_STARTED", *_THINKING, *_NULL_KINDS})
        )
        self.key: str | None = _EVERY_EVENT_FIELDS[0] if _EVERY_EVENT_FIELDS else None
        self.nulls_only: frozenset[str] = frozenset() if self.kinds is None else _NULLS_ONLY
        self._reasoning_span: str | None = None
        self._reasoning_message: str | None = None
        self._counter = 0

    def translate(
        self, event: dict[str, Any], diagnostics: list[Diagnostic]
    ) -> dict[str, Any] | None:
        """The event in its current shape, or None when it is dropped."""
        kind = event.get("type")
        if type(kind) is not str:
            return event  # not an event type at all: enforcement rejects it
        if kind == "RUN_STARTED" and "protocolVersion" in event:
            self._check_version(event["protocolVersion"], diagnostics)
        if kind in _THINKING:
            event = self._thinking(event, diagnostics)
            kind = event["type"]
        cls = EVENT_CLASSES.get(kind)
        if cls is not None and (kind in _NULL_KINDS or self.key in event):
            event = _strip_object(cls, event, "", diagnostics, self._today)
        if self._peer is not None and self._peer <= _SUBAGENT_ERA:
            if kind in SUBAGENT_LIFECYCLE:
                diagnostics.append(
                    Diagnostic(
                        code="compat.dropped",
                        message=f"peer {self._peer_text()} predates subagents: dropping {kind}",
                        subject=kind,
                    )
                )
                return None
            if "subagentRunId" in event:
                event = {k: v for k, v in event.items() if k != "subagentRunId"}
        return event

    def _peer_text(self) -> str:
        return ".".join(map(str, self._peer or ()))

    def _check_version(self, declared: object, diagnostics: list[Diagnostic]) -> None:
        found = check_peer_version(declared, self._own, "producer")
        if found is not None:
            diagnostics.append(found)

    def _thinking(self, event: dict[str, Any], diagnostics: list[Diagnostic]) -> dict[str, Any]:
        kind = event["type"]
        current = _THINKING[kind]
        out = {k: v for k, v in event.items() if k not in ("type", "title")}
        out["type"] = current
        if current == "REASONING_START":
            self._counter += 1
            self._reasoning_span = f"thinking-{self._counter}"
        if current in ("REASONING_START", "REASONING_END"):
            out["messageId"] = self._reasoning_span or self._new_id()
            if current == "REASONING_END":
                self._reasoning_span = None
        else:
            if current == "REASONING_MESSAGE_START":
                self._counter += 1
                self._reasoning_message = f"thinking-message-{self._counter}"
                out["role"] = "reasoning"
            out["messageId"] = self._reasoning_message or self._new_id()
            if current == "REASONING_MESSAGE_END":
                self._reasoning_message = None
        diagnostics.append(
            Diagnostic(
                code="compat.translated",
                message=f"retired event {kind} translated to {current}",
                subject=kind,
            )
        )
        return {"type": out.pop("type"), **out}

    def _new_id(self) -> str:
        self._counter += 1
        return f"thinking-{self._counter}"


def _upgrade_part(part: Any) -> Any:
    """A legacy ``binary`` content part as the typed media part that replaced it."""
    if not isinstance(part, dict) or part.get("type") != "binary":
        return part
    mime = part.get("mimeType")
    kind = next(
        (k for prefix, k in _MEDIA_KINDS if isinstance(mime, str) and mime.startswith(prefix)),
        "document",
    )
    if "url" in part:
        source = {"type": "url", "value": part["url"]}
    elif "data" in part:
        source = {"type": "data", "value": part["data"]}
    elif "id" in part:
        source = {"type": "file", "value": part["id"]}
    else:
        return part  # nothing to carry: enforcement reports it
    if mime is not None:
        source["mimeType"] = mime
    upgraded: dict[str, Any] = {"type": kind, "source": source}
    if "filename" in part:
        upgraded["metadata"] = {"filename": part["filename"]}
    return upgraded


def upgrade_input(run_input: dict[str, Any]) -> dict[str, Any]:
    """Upgrade retired shapes in an outgoing run input, before enforcement.

    Legacy ``{"type": "binary", ...}`` content parts become ``image``/``audio``/
    ``video``/``document`` parts with a ``url``, ``data`` or ``file`` source, on
    every outgoing run whatever the peer's version (payload kept, no warning).
    """
    messages = run_input.get("messages")
    if not isinstance(messages, list):
        return run_input
    changed = False
    upgraded_messages = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "binary" for p in content
        ):
            message = {**message, "content": [_upgrade_part(p) for p in content]}
            changed = True
        upgraded_messages.append(message)
    return {**run_input, "messages": upgraded_messages} if changed else run_input


def flatten_for_peer(
    run_input: dict[str, Any], peer_version: str | None, diagnostics: list[Diagnostic]
) -> dict[str, Any]:
    """Down-translate an outgoing run input (wire JSON) for an old peer.

    * a peer before 1.0 predates ``protocolVersion``: it is not sent;
    * a peer at or before 0.0.39 takes text content only: a list of content parts
      becomes the concatenation of its text parts, and the parts it cannot carry
      are reported (one diagnostic per message), never dropped in silence.
    """
    peer = parse_version(peer_version) if peer_version is not None else None
    if peer is None:
        return run_input
    out = dict(run_input)
    if peer < (1, 0):
        out.pop("protocolVersion", None)
    if peer <= _TEXT_ONLY_ERA and isinstance(out.get("messages"), list):
        messages = []
        for index, message in enumerate(out["messages"]):
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                texts = [
                    p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text"
                ]
                dropped = [
                    describe(p.get("type")) if isinstance(p, dict) else describe(p)
                    for p in content
                    if not (isinstance(p, dict) and p.get("type") == "text")
                ]
                if dropped:
                    diagnostics.append(
                        Diagnostic(
                            code="compat.content-flattened",
                            message=f"peer {peer_version} takes text content only: dropped "
                            f"{len(dropped)} non-text part(s) ({', '.join(dropped)}) of message "
                            f"{describe(message.get('id'))}; a peer newer than 0.0.39 receives "
                            "them",
                            path=f"/messages/{index}/content",
                            subject=str(message.get("id")),
                        )
                    )
                message = {**message, "content": "".join(texts)}
            messages.append(message)
        out["messages"] = messages
    return out
