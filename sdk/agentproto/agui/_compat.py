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
  attribution is removed.

The boundary works on dicts and returns dicts; it never raises for content it
does not know (that is enforcement's job, the next stage).
"""

from __future__ import annotations

import re
from typing import Any, Final

from agentproto._core.describe import describe
from agentproto._core.diagnostics import Diagnostic
from agentproto.agui._kinds import SUBAGENT_LIFECYCLE

__all__ = ["CompatibilityBoundary", "flatten_for_peer", "parse_version", "upgrade_input"]

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


class CompatibilityBoundary:
    """Translate retired shapes and check the producer's declared version.

    Args:
        protocol_version: the ``MAJOR.MINOR`` this client speaks.
        peer_version: the newest version the peer is known to speak, when the
            client is pinned to an old peer (e.g. ``"0.0.57"``); ``None`` for a
            current peer.
    """

    def __init__(self, *, protocol_version: str = "1.0", peer_version: str | None = None) -> None:
        own = parse_version(protocol_version)
        if own is None or len(own) != 2:
            raise ValueError(f"protocol_version must be MAJOR.MINOR, not {protocol_version!r}")
        self._own = own
        self._peer = parse_version(peer_version) if peer_version is not None else None
        # the event types translate() may change; None: every type (a pinned old peer)
        self.kinds: frozenset[str] | None = (
            None
            if self._peer is not None and self._peer <= _SUBAGENT_ERA
            else frozenset({"RUN_STARTED", *_THINKING})
        )
        self._reasoning_span: str | None = None
        self._reasoning_message: str | None = None
        self._counter = 0

    def translate(
        self, event: dict[str, Any], diagnostics: list[Diagnostic]
    ) -> dict[str, Any] | None:
        """The event in its current shape, or None when it is dropped."""
        kind = event.get("type")
        if kind.__class__ is not str:
            return event  # not an event type at all: enforcement rejects it
        if kind == "RUN_STARTED" and "protocolVersion" in event:
            self._check_version(event["protocolVersion"], diagnostics)
        if kind in _THINKING:
            return self._thinking(event, diagnostics)
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
        version = parse_version(declared)
        if version is None or len(version) != 2:
            diagnostics.append(
                Diagnostic(
                    code="version.uninterpretable",
                    message="cannot interpret the producer's protocolVersion "
                    f"{describe(declared)} as MAJOR.MINOR; proceeding as with a newer version",
                    path="/protocolVersion",
                    subject=declared[:100] if isinstance(declared, str) else describe(declared),
                )
            )
        elif version > self._own:
            diagnostics.append(
                Diagnostic(
                    code="version.newer",
                    message=f"the producer declares protocolVersion {declared}, newer than "
                    f"{'.'.join(map(str, self._own))}; proceeding",
                    path="/protocolVersion",
                    subject=str(declared),
                )
            )

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
                dropped = len(content) - len(texts)
                if dropped:
                    diagnostics.append(
                        Diagnostic(
                            code="compat.content-flattened",
                            message=f"peer {peer_version} takes text content only: dropped "
                            f"{dropped} non-text part(s) of message {describe(message.get('id'))}",
                            path=f"/messages/{index}/content",
                            subject=str(message.get("id")),
                        )
                    )
                message = {**message, "content": "".join(texts)}
            messages.append(message)
        out["messages"] = messages
    return out
