"""The reducer's rules for state, messages snapshots and activities.

As in :mod:`._reduce_items`, each rule takes ``commit``: false only finds what
applying would report, changing nothing (a patch is then tried on a copy-on-write
result that is thrown away); true applies. The rules are described in
:mod:`._conversation`.
"""

from __future__ import annotations

from typing import Any, Final

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import PatchError, SchemaError
from agentproto._core.patch.apply import apply_patch, apply_patch_in_place
from agentproto._core.patch.ops import NodeCount
from agentproto._core.readonly import thaw
from agentproto.agui import _generated as g
from agentproto.agui._protocol.kinds import ACTIVITY, REASONING
from agentproto.agui._reduce.records import (
    _NOTHING,
    Change,
    _Entry,
    _entry_from_message,
    _merge,
    _own_ops,
    _problem,
    _Store,
)

__all__: list[str] = []

_STATE_CHANGED: Final = Change(state=True)


class _SnapshotRules(_Store):
    """Rules for state, messages snapshots and activities (a mixin of the conversation)."""

    __slots__ = ()

    # -- state

    def _state_snapshot(self, event: g.StateSnapshotEvent, commit: bool) -> Change:
        if commit:
            self._state = thaw(event.snapshot)
            self._state_count = None
        return _STATE_CHANGED

    def _state_delta(self, event: g.StateDeltaEvent, commit: bool) -> Change:
        ops = _own_ops(event.delta)
        if ops is None:
            return _problem(
                "state.patch-failed",
                "Failed to apply state patch: delta is not a list",
                path="/delta",
            )
        try:
            count = self._state_nodes()
            if commit:
                # the state is the reducer's own (snapshots are copied in), so it is
                # patched in place: O(operations), however wide the containers are
                self._state = apply_patch_in_place(self._state, ops, count=count)
            else:  # copy-on-write: only the containers on the paths, then dropped
                apply_patch(self._state, ops, count=NodeCount(count.limit, count.name, count.nodes))
        except PatchError as exc:
            return _problem(
                "state.patch-failed",
                f"Failed to apply state patch: {exc}; the state is unchanged",
                path=f"/delta/{exc.index}",
            )
        return _STATE_CHANGED if ops else _NOTHING

    # -- messages snapshot

    @staticmethod
    def _incoming(
        event: g.MessagesSnapshotEvent, diagnostics: list[Diagnostic]
    ) -> dict[str, _Entry]:
        """The snapshot's messages as records, by id (invalid ones reported and left out)."""
        incoming: dict[str, _Entry] = {}
        for index, message in enumerate(event.messages):
            try:
                entry = _entry_from_message(message)
            except (SchemaError, TypeError, KeyError, AttributeError) as exc:
                diagnostics.append(
                    Diagnostic(
                        code="messages.invalid",
                        message=f"MESSAGES_SNAPSHOT: message {index} is not a valid message"
                        f" ({exc}); skipped",
                        path=f"/messages/{index}",
                    )
                )
                continue
            if entry.id in incoming:
                diagnostics.append(
                    Diagnostic(
                        code="messages.duplicate-id",
                        message=f"MESSAGES_SNAPSHOT carries {entry.id!r} twice; the last wins",
                        subject=entry.id,
                        path=f"/messages/{index}",
                    )
                )
            incoming[entry.id] = entry
        return incoming

    def _messages_snapshot(self, event: g.MessagesSnapshotEvent, commit: bool) -> Change:
        diagnostics: list[Diagnostic] = []
        incoming = self._incoming(event, diagnostics)
        if not commit:
            return Change(diagnostics=tuple(diagnostics))
        roles = {entry.role for entry in incoming.values()}
        keep_activity = ACTIVITY not in roles
        keep_reasoning = REASONING not in roles
        entries: list[_Entry] = []
        touched: list[str] = []
        removed: list[str] = []
        for entry in self._entries:
            replacement = incoming.pop(entry.id, None)
            if replacement is not None:
                entries.append(replacement)
                touched.append(entry.id)
            elif (entry.role == ACTIVITY and keep_activity) or (
                entry.role == REASONING and keep_reasoning
            ):
                entries.append(entry)
            else:
                removed.append(entry.id)
        created = list(incoming)
        entries.extend(incoming.values())
        self._entries = entries
        self._by_id = {entry.id: entry for entry in entries}
        self._index_calls()
        self._open_text = {i for i in self._open_text if i in self._by_id}
        self._open_calls = {i for i in self._open_calls if i in self._calls}
        self._snapshot = None
        return Change(
            messages=(*touched, *created),
            created=tuple(created),
            removed=tuple(removed),
            diagnostics=tuple(diagnostics),
        )

    # -- activities

    def _activity_snapshot(self, event: g.ActivitySnapshotEvent, commit: bool) -> Change:
        message_id = event.message_id
        if not isinstance(event.content, dict):
            return _problem(
                "activity.not-object",
                f"ACTIVITY_SNAPSHOT for {message_id!r}: content is not an object; skipped",
                subject=message_id,
            )
        entry = self._by_id.get(message_id)
        if entry is not None and entry.role != ACTIVITY:
            return _problem(
                "activity.not-activity",
                f"ACTIVITY_SNAPSHOT for {message_id!r}, which is a {entry.role} message,"
                " not an activity message; skipped",
                subject=message_id,
            )
        if not commit:
            return _NOTHING
        if entry is None:
            entry = _Entry(message_id, ACTIVITY)
            entry.fields["activityType"] = event.activity_type
            entry.fields["content"] = thaw(event.content)
            entry.nodes = None
            if event.subagent_run_id is not None:
                entry.fields["subagentRunId"] = event.subagent_run_id
            if event.metadata:
                entry.metadata = _merge(None, event.metadata)
            self._append(entry)
            return Change(messages=(message_id,), created=(message_id,))
        if event.replace is not False:
            entry.fields["activityType"] = event.activity_type
            entry.fields["content"] = thaw(event.content)
            entry.nodes = None
            if event.subagent_run_id is None:
                entry.fields.pop("subagentRunId", None)
            else:
                entry.fields["subagentRunId"] = event.subagent_run_id
        elif not event.metadata:
            return _NOTHING
        if event.metadata:
            entry.metadata = _merge(entry.metadata, event.metadata)
        self._touch(entry)
        return entry.change

    def _patched_content(self, event: g.ActivityDeltaEvent) -> Any:
        """The activity's content with the delta applied and its size, or the Change
        saying why not."""
        message_id = event.message_id
        entry = self._by_id.get(message_id)
        if entry is None or entry.role != ACTIVITY:
            why = "no such message" if entry is None else f"it is a {entry.role} message"
            return _problem(
                "activity.delta-skipped",
                f"ACTIVITY_DELTA for {message_id!r} skipped: {why}, not an activity message",
                subject=message_id,
            )
        ops = _own_ops(event.patch)
        if ops is None:
            return _problem(
                "activity.patch-failed",
                f"Failed to apply activity patch for {message_id!r}: patch is not a list",
                subject=message_id,
                path="/patch",
            )
        try:
            count = self._activity_nodes(entry)
            # checking tries the patch on a copy of the count; applying keeps it
            trial = NodeCount(count.limit, count.name, count.nodes)
            content = apply_patch(entry.fields["content"], ops, count=trial)
        except PatchError as exc:
            return _problem(
                "activity.patch-failed",
                f"Failed to apply activity patch for {message_id!r}: {exc};"
                " the activity is unchanged",
                subject=message_id,
                path=f"/patch/{exc.index}",
            )
        if not isinstance(content, dict):
            return _problem(
                "activity.not-object",
                f"ACTIVITY_DELTA for {message_id!r}: the patched content would not be an"
                " object; the activity is unchanged",
                subject=message_id,
            )
        return content, trial.nodes

    def _activity_delta(self, event: g.ActivityDeltaEvent, commit: bool) -> Change:
        patched = self._patched_content(event)
        if patched.__class__ is Change:
            return patched
        content, nodes = patched
        if not commit:
            return _NOTHING
        entry = self._by_id[event.message_id]
        entry.fields["content"] = content
        self._activity_nodes(entry).nodes = nodes
        entry.fields["activityType"] = event.activity_type
        if event.metadata:
            entry.metadata = _merge(entry.metadata, event.metadata)
        self._touch(entry)
        return entry.change
