"""Sending one session's updates, agent side: typed helpers that keep the producer duties.

Theory of operation
-------------------
:class:`SessionUpdates` sends the ``session/update`` notifications of one
session and keeps, in a :class:`~agentproto.acp.SessionState`, exactly what
the client will hold once it has applied them: every update goes through the
client's own fold first (no shadow rules), so what the fold rejects is never
sent. Before that, the producer duties a client cannot check are enforced
(:class:`~agentproto.UsageError`, nothing sent):

=============================  ========================================================
code                           refused
=============================  ========================================================
``updates.not-an-update``      something that is not a typed session update
``updates.by-hand-state``      a ``state_update`` (foreground state is the turn's: see
                               :class:`~agentproto.acp.AgentSession`)
``updates.empty-meta``         ``_meta: {}`` on an upsert whose entity holds no
                               metadata (send ``null``; the seed document's rule)
``updates.unknown-entity``     a tool-call content chunk or terminal output chunk for a
                               tool call or terminal no upsert created
``updates.closed``             anything once the session is closed
=============================  ========================================================

:meth:`SessionUpdates.resync` resends an entity's current state (for resume
and replay) through :func:`~agentproto.acp.resync_update`.

The streaming helpers return handles: :class:`ToolCall` (start, progress,
content, diffs, terminals, finish) and :class:`Terminal` (output bytes, exit).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from agentproto._core.errors import UsageError
from agentproto._core.unset import UNSET, Unset
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.blocks import Content, content_blocks
from agentproto.acp._relay.combine import resync_update
from agentproto.acp._state.entities import BY_CHUNK, BY_UPSERT
from agentproto.acp._state.meta import Meta
from agentproto.acp._state.session import SessionState

__all__ = ["SessionUpdates", "Terminal", "ToolCall", "new_id"]

# entity kinds (names from agentproto.acp._state.entities) whose chunks need an upsert first
_NEEDS_UPSERT: Final = frozenset({"tool_call", "terminal"})
_STATE_UPDATE: Final = v2.StateUpdateSessionUpdate


def new_id(prefix: str) -> str:
    """A fresh opaque id (``prefix-<hex>``)."""
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def _holds(state: SessionState, key: str) -> bool:
    try:
        state.entity(key)
    except KeyError:
        return False
    return True


def _block(content: str | v2.ContentBlock) -> v2.ContentBlock:
    return v2.TextContentBlock(text=content) if isinstance(content, str) else content


def _entity_key(update: Any) -> tuple[str, str] | None:
    """(entity kind name, entity key) of an upsert or chunk, ``None`` for other updates."""
    kind = BY_UPSERT.get(type(update)) or BY_CHUNK.get(type(update))
    if kind is None:
        return None
    if kind.id_field is None:
        return kind.name, kind.name
    return kind.name, f"{kind.name}:{getattr(update, kind.id_field)}"


class SessionUpdates:
    """The updates of one session, as the agent sends them (see the module documentation).

    Args:
        session_id: the session.
        send: sends one update (as the ``update`` of a ``session/update``).

    Attributes:
        session_id: the session.
        state: what the client holds once it has applied everything sent.
    """

    def __init__(
        self, session_id: str, send: Callable[[v2.SessionUpdate], Awaitable[None]]
    ) -> None:
        self.session_id = session_id
        self.state = SessionState(session_id)
        self._send = send
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether the session is closed (nothing more is sent)."""
        return self._closed

    def close(self) -> None:
        """Refuse every later update (``updates.closed``)."""
        self._closed = True

    # ---- the gate ---------------------------------------------------------------------

    def check(self, update: Any) -> None:
        """Raise the :class:`~agentproto.UsageError` that :meth:`emit` would raise for a duty."""
        if self._closed:
            raise UsageError("updates.closed", f"session {self.session_id!r} is closed")
        if update.__class__ is _STATE_UPDATE:
            raise UsageError(
                "updates.by-hand-state",
                "report foreground state through the session's work (begin/end), not by hand",
            )
        found = _entity_key(update)
        if found is None:
            return
        name, key = found
        known = _holds(self.state, key)
        if type(update) in BY_CHUNK and name in _NEEDS_UPSERT and not known:
            raise UsageError(
                "updates.unknown-entity",
                f"{key}: a chunk before the upsert that creates it (send the upsert first)",
            )
        if getattr(update, "meta", None) == {} and not (
            known and getattr(self.state.entity(key), "meta", None)
        ):
            raise UsageError(
                "updates.empty-meta",
                f"{key}: the entity holds no metadata; send `_meta: null`, not `{{}}`",
            )

    async def emit(self, update: v2.SessionUpdate, *, state_ok: bool = False) -> None:
        """Send one typed update, after the duties and the client's fold accept it.

        Args:
            update: the update.
            state_ok: allow a ``state_update`` (for the session's turn only).

        Raises:
            UsageError: a duty (codes in the module documentation), or the fold
                refuses a hand-built value of the wrong type.
            SchemaError: the fold rejects the update (invalid base64, a bad
                ``_meta``).
            ConnectionClosedError: the connection is closed.
        """
        if not state_ok or update.__class__ is not _STATE_UPDATE:
            self.check(update)
        elif self._closed:
            raise UsageError("updates.closed", f"session {self.session_id!r} is closed")
        try:
            self.state.apply(update)
        except UsageError as err:
            if err.code == "acp.not-an-update":
                raise UsageError("updates.not-an-update", str(err)) from None
            raise
        await self._send(update)

    # ---- messages -----------------------------------------------------------------------

    async def user_message(self, content: Content, *, message_id: str) -> None:
        """Report the user message a prompt inserted (the whole content)."""
        await self.emit(
            v2.UserMessageSessionUpdate(message_id=message_id, content=content_blocks(content))
        )

    async def message(
        self,
        content: Content,
        *,
        message_id: str | None = None,
    ) -> str:
        """Send an agent message whole (its ``content`` replaces what the client holds).

        Returns:
            The message id (new when not given).
        """
        ident = message_id or new_id("msg")
        await self.emit(
            v2.AgentMessageSessionUpdate(message_id=ident, content=content_blocks(content))
        )
        return ident

    async def message_chunk(self, content: str | v2.ContentBlock, *, message_id: str) -> None:
        """Append to an agent message (creating it on first use)."""
        await self.emit(
            v2.AgentMessageChunkSessionUpdate(message_id=message_id, content=_block(content))
        )

    async def thought_chunk(self, content: str | v2.ContentBlock, *, message_id: str) -> None:
        """Append to an agent thought (creating it on first use)."""
        await self.emit(
            v2.AgentThoughtChunkSessionUpdate(message_id=message_id, content=_block(content))
        )

    # ---- plans, usage, session info -----------------------------------------------------------

    async def plan(self, entries: Sequence[v2.PlanEntry], *, plan_id: str = "main") -> None:
        """Send a plan's entries (replacing that plan's content)."""
        content = v2.ItemsPlanUpdateContent(plan_id=plan_id, entries=list(entries))
        await self.emit(v2.PlanUpdateSessionUpdate(plan=content))

    async def usage(self, used: int, size: int, *, cost: v2.Cost | Unset | None = UNSET) -> None:
        """Report the session context's token use (``usage_update``)."""
        await self.emit(v2.UsageUpdateSessionUpdate(used=used, size=size, cost=cost))

    async def session_info(
        self,
        *,
        title: str | Unset | None = UNSET,
        updated_at: str | Unset | None = UNSET,
        meta: Meta | Unset | None = UNSET,
    ) -> None:
        """Patch the session information (omitted: unchanged, ``None``: cleared)."""
        await self.emit(
            v2.SessionInfoUpdateSessionUpdate(title=title, updated_at=updated_at, meta=meta)
        )

    # ---- tool calls and terminals -------------------------------------------------------------

    async def tool_call(
        self,
        title: str,
        *,
        kind: str | Unset | None = UNSET,
        tool_call_id: str | None = None,
        **fields: Any,
    ) -> ToolCall:
        """Report a new tool call (``pending``), with its title.

        Args:
            title: what the tool does, for the user.
            kind: the tool kind (``read``, ``edit``, ``execute``, ...).
            tool_call_id: its id (new when not given).
            **fields: other ``tool_call_update`` fields (``raw_input``,
                ``locations``, ``name``, ``meta``, ...).

        Raises:
            UsageError: the id is one the session already has.
        """
        ident = tool_call_id or new_id("call")
        if _holds(self.state, f"tool_call:{ident}"):
            raise UsageError("updates.duplicate-id", f"tool call {ident!r} exists already")
        call = ToolCall(self, ident)
        await call.update(title=title, kind=kind, **fields)
        return call

    async def resync(self, key: str, *, known: Meta | Unset | None = UNSET) -> None:
        """Resend an entity's current state (see :func:`~agentproto.acp.resync_update`).

        Args:
            key: its entity key (``tool_call:c1``, ``session_info``, ``plan:main``, ...).
            known: the metadata the client holds for it; when not known, the
                metadata is cleared first and then sent (two updates).

        Raises:
            UsageError: no such entity, or not one that can be resent.
        """
        try:
            entity = self.state.entity(key)
        except KeyError:
            raise UsageError("updates.unknown-entity", f"no entity {key!r} to resend") from None
        clear_first = known is UNSET
        held = None if isinstance(known, Unset) else known
        for update in resync_update(held, entity, clear_first=clear_first):
            await self.emit(update)


class ToolCall:
    """A tool call the agent reported; its helpers patch it.

    Attributes:
        tool_call_id: its id.
    """

    def __init__(self, updates: SessionUpdates, tool_call_id: str) -> None:
        self._updates = updates
        self.tool_call_id = tool_call_id

    @property
    def session(self) -> SessionUpdates:
        """The session's updates."""
        return self._updates

    async def update(self, **fields: Any) -> None:
        """Patch fields of the tool call (``tool_call_update`` field names, UNSET: unchanged)."""
        await self._updates.emit(
            v2.ToolCallUpdateSessionUpdate(tool_call_id=self.tool_call_id, **fields)
        )

    async def progress(self, **fields: Any) -> None:
        """Mark it ``in_progress`` (other fields patched alongside)."""
        await self.update(status="in_progress", **fields)

    async def content(self, item: str | v2.ToolCallContent) -> None:
        """Append one content item (``tool_call_content_chunk``); a string is text content."""
        if isinstance(item, str):
            item = v2.ContentToolCallContent(content=v2.TextContentBlock(text=item))
        await self._updates.emit(
            v2.ToolCallContentChunkSessionUpdate(tool_call_id=self.tool_call_id, content=item)
        )

    async def diff(
        self, changes: Sequence[v2.DiffChange], *, patch: v2.DiffPatch | None = None
    ) -> None:
        """Append a diff: the files it changes and, optionally, the patch text."""
        await self.content(v2.DiffToolCallContent(changes=list(changes), patch=patch))

    async def terminal(
        self, command: str, *, terminal_id: str | None = None, cwd: str | Unset | None = UNSET
    ) -> Terminal:
        """Start a display-only terminal and attach it to the tool call.

        Returns:
            The terminal's handle.
        """
        ident = terminal_id or new_id("term")
        await self._updates.emit(
            v2.TerminalUpdateSessionUpdate(terminal_id=ident, command=command, cwd=cwd)
        )
        await self.content(v2.TerminalToolCallContent(terminal_id=ident))
        return Terminal(self._updates, ident)

    async def finish(self, status: str = "completed", **fields: Any) -> None:
        """Report its terminal status (``completed`` by default; ``failed``, ``cancelled``)."""
        await self.update(status=status, **fields)


class Terminal:
    """A display-only terminal the agent reported.

    Attributes:
        terminal_id: its id.
    """

    def __init__(self, updates: SessionUpdates, terminal_id: str) -> None:
        self._updates = updates
        self.terminal_id = terminal_id

    async def output(self, data: bytes | str) -> None:
        """Append output bytes (a string is UTF-8 encoded), base64 encoded on the wire."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        encoded = base64.b64encode(raw).decode("ascii")
        await self._updates.emit(
            v2.TerminalOutputChunkSessionUpdate(terminal_id=self.terminal_id, data=encoded)
        )

    async def exit(self, exit_code: int | None = None, *, signal: str | None = None) -> None:
        """Report that the command exited."""
        status = v2.TerminalExitStatus(exit_code=exit_code, signal=signal)
        await self._updates.emit(
            v2.TerminalUpdateSessionUpdate(terminal_id=self.terminal_id, exit_status=status)
        )
