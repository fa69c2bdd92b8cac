"""Stages 5-7 of the AG-UI processing model for each enforced event: chunk expansion,
verification and the reducer, in that order.

:class:`~agentproto.agui.Consumer` gives its decoder :meth:`LaterStages.feed` as the
decoder's next stage. It runs once per event, and it is one of the compiled build's
modules, so that the compiled decoder hands each event to the compiled stages directly.
"""

from __future__ import annotations

from agentproto._core.diagnostics import Diagnostic
from agentproto.agui._consume.chunks import ChunkExpander
from agentproto.agui._generated import Event
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._verify.verifier import Verifier

__all__: list[str] = []


class LaterStages:
    """Expand, verify and apply one event at a time (:meth:`feed` is the decoder's
    ``next_stage``)."""

    def __init__(
        self, chunks: ChunkExpander, verifier: Verifier, conversation: Conversation
    ) -> None:
        self.chunks = chunks
        self.verifier = verifier
        self.conversation = conversation

    def feed(self, event: Event, found: list[Diagnostic], delivered: list[Event]) -> None:
        """Each explicit event ``event`` expands to, verified, applied and delivered.

        ``found`` is the decoder's list of the current event's diagnostics (a plain list:
        compiled code extends it as a list, whatever its class)."""
        for explicit in self.chunks.feed(event):
            self.take(explicit, found, delivered)

    def take(self, event: Event, found: list[Diagnostic], delivered: list[Event]) -> None:
        """An explicit ``event`` verified, applied and delivered."""
        found.extend(self.verifier.feed(event))
        found.extend(self.conversation.apply(event).diagnostics)
        delivered.append(event)
