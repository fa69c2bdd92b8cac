"""Recorded AG-UI histories: serialization, run lineage and compaction.

Theory of operation
-------------------
The draft's serialization page treats a thread's event stream as an append-only log:
stored as JSON, restored later, branched through ``RUN_STARTED.parentRunId`` and
compacted into a shorter log with the same observable outcome. This module gives it
three pieces:

* **Serialization.** :class:`History` holds typed events; :meth:`History.to_json` /
  :meth:`History.dumps` write the log as a JSON array of wire events and
  :meth:`History.from_json` reads one back (the parse is
  :func:`~agentproto.agui.parse_event`'s, strict unless a diagnostics list is given).
* **Lineage.** The log splits into runs at each ``RUN_STARTED`` (a run's events run
  up to the next ``RUN_STARTED``, so a late ``RUN_ERROR`` stays with the run it
  fails; events before the first ``RUN_STARTED`` form a prologue that is no run).
  A run continues the run its ``parentRunId`` names, which must be recorded before
  it; without ``parentRunId`` it continues the run recorded just before it, as the
  page's git-like graph draws it. A ``parentRunId`` naming no earlier run makes the
  run a root of the log, with a ``history.unknown-parent`` diagnostic; two runs
  with one ``runId`` make the lineage ambiguous and are refused
  (:class:`~agentproto.ProtocolError` ``history.duplicate-run``). A *branch* is the
  path from a root to a run; *time travel* to a run is the events of the runs on its
  path, in order (:meth:`History.branch`), and replaying them gives the
  conversation as that run left it.
* **Compaction.** :func:`compact_events` runs the log through the
  :class:`~agentproto.agui.Consumer` pipeline (boundary, enforcement, chunk
  expansion, verification), then the rules of
  :mod:`agentproto.agui._history.compaction`, run by run. Each
  run is compacted in the context of its lineage: in the consumer that read the run
  before it when that run is its parent, else in a fresh consumer fed the compacted
  path to its parent; so the compacted log of a branched thread still time-travels
  to the same conversations. The output is the clean form of the log: current
  shapes, unknown material stripped, chunks expanded (what the consumer delivered).

**Bad input.** A history the consumer does not accept as a whole (a schema error, a
broken rule, a run left open at the end) is not compacted: :func:`compact_events`
raises the consumer's own error, with a note naming the event where it was found; a
stored log is never silently shortened into something else. A history the consumer
accepts with tolerated problems (a failing patch, a stripped field) compacts, and the
problems are in :attr:`Compaction.diagnostics`. With ``verify=True`` (the default)
the compacted log is replayed and must give the same messages, activities, state and
run outcomes on every branch, else :class:`~agentproto.InternalError` (a bug here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import (
    AgentProtoError,
    InternalError,
    ProtocolError,
    SchemaError,
    UsageError,
)
from agentproto._core.json.codec import dumps, loads
from agentproto.agui._consume.consumer import Consumer
from agentproto.agui._generated import Event, RunAgentInput, RunStartedEvent
from agentproto.agui._history.compaction import RunCompactor, chunk_form, same_json, starts_twice
from agentproto.agui._protocol.kinds import event_type
from agentproto.agui._protocol.wire import dump_event, parse_event
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._thread.run_input import PROTOCOL_VERSION
from agentproto.agui._verify.verifier import RunRecord

__all__ = ["Compaction", "History", "RecordedRun", "compact_events"]

_RUN_STARTED = event_type(RunStartedEvent)


@attrs.frozen(kw_only=True)
class RecordedRun:
    """One run of a :class:`History`.

    Attributes:
        run_id: its ``RUN_STARTED``'s ``runId``.
        parent_run_id: the run it continues (its ``parentRunId``, else the run
            recorded just before it); ``None`` for a root.
        events: its events, ``RUN_STARTED`` first, up to the next ``RUN_STARTED``.
    """

    run_id: str
    parent_run_id: str | None
    events: tuple[Event, ...]

    @property
    def started(self) -> RunStartedEvent:
        """The run's ``RUN_STARTED`` (its ``input``, ``parentRunId``, ...)."""
        first = self.events[0]
        assert isinstance(first, RunStartedEvent)
        return first


# ---- lineage --------------------------------------------------------------------------------


def _link(
    heads: Sequence[tuple[str | None, str | None]],
) -> tuple[list[str | None], list[Diagnostic]]:
    """Each segment's parent run, from its ``(runId, parentRunId)`` (``runId`` None: no run).

    Raises:
        ProtocolError: two runs share a ``runId`` (``history.duplicate-run``).
    """
    seen: set[str] = set()
    parents: list[str | None] = []
    found: list[Diagnostic] = []
    previous: str | None = None
    for run_id, explicit in heads:
        if run_id is None:
            parents.append(None)
            continue
        if run_id in seen:
            raise ProtocolError(
                "history.duplicate-run",
                f"two runs of the history have the runId '{run_id}'; run lineage needs "
                f"every run's id to be unique",
                subject=run_id,
            )
        parent = previous if explicit is None else explicit
        if parent is not None and parent not in seen:
            found.append(
                Diagnostic(
                    code="history.unknown-parent",
                    message=f"run '{run_id}' names parentRunId '{parent}', which is no run "
                    f"recorded before it; the run is a root of this history",
                    subject=run_id,
                )
            )
            parent = None
        seen.add(run_id)
        previous = run_id
        parents.append(parent)
    return parents, found


def _path(run_id: str, parents: Mapping[str, str | None]) -> list[str]:
    """The run ids from the root to ``run_id`` (parents always precede their runs)."""
    path = [run_id]
    parent = parents[run_id]
    while parent is not None:
        path.append(parent)
        parent = parents[parent]
    path.reverse()
    return path


# ---- the history ----------------------------------------------------------------------------


class History:
    """A thread's recorded event log, split into runs with their lineage.

    Args:
        events: typed events, in the order they were recorded (see the module notes
            for how runs and their parents are found).

    Raises:
        ProtocolError: two runs share a ``runId`` (``history.duplicate-run``).
        UsageError: ``events`` is not an iterable of typed AG-UI events.
    """

    __slots__ = ("_children", "_parents", "_runs", "diagnostics", "events", "prologue")

    def __init__(self, events: Iterable[Event]) -> None:
        if not isinstance(events, Iterable) or isinstance(events, (str, bytes, Mapping)):
            raise UsageError(
                "history.not-an-event",
                f"a History takes an iterable of typed events, not {type(events).__name__}",
            )
        self.events: tuple[Event, ...] = tuple(events)
        for index, event in enumerate(self.events):
            if event_type(event.__class__) is None:
                raise UsageError(
                    "history.not-an-event",
                    f"item {index} of a History is {type(event).__name__}, not a typed "
                    f"AG-UI event (read wire JSON with History.from_json)",
                )
        starts = [i for i, e in enumerate(self.events) if isinstance(e, RunStartedEvent)]
        bounds = [*starts, len(self.events)]
        self.prologue: tuple[Event, ...] = self.events[: bounds[0]]
        """The events recorded before the first ``RUN_STARTED`` (a stream may open
        with ``RUN_ERROR``); they belong to no run."""
        openers = [cast(RunStartedEvent, self.events[i]) for i in starts]
        heads = [(opener.run_id, opener.parent_run_id) for opener in openers]
        parents, found = _link(heads)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(found)
        """Lineage problems tolerated (``history.unknown-parent``)."""
        self._runs: dict[str, RecordedRun] = {}
        self._children: dict[str | None, list[RecordedRun]] = {}
        for (run_id, _), parent, start, end in zip(
            heads, parents, bounds, bounds[1:], strict=False
        ):
            assert run_id is not None
            run = RecordedRun(run_id=run_id, parent_run_id=parent, events=self.events[start:end])
            self._runs[run_id] = run
            self._children.setdefault(parent, []).append(run)
        self._parents = {run.run_id: run.parent_run_id for run in self._runs.values()}

    # ---- serialization ------------------------------------------------------------------

    @classmethod
    def from_json(
        cls, data: str | bytes | Sequence[Any], *, diagnostics: list[Diagnostic] | None = None
    ) -> History:
        """Read a history written by :meth:`dumps` or :meth:`to_json`.

        Args:
            data: JSON text (a JSON array of events), or the decoded array.
            diagnostics: ``None`` to reject anything the schema does not define; a
                list to drop unknown properties instead, reported there.

        Raises:
            DecodeError: ``data`` is not JSON.
            SchemaError: it is not an array, or an event does not match the schema
                (its location starts with the event's index: ``/3/delta``).
        """
        document = loads(data) if isinstance(data, (str, bytes)) else data
        if isinstance(document, (str, bytes)) or not isinstance(document, Sequence):
            raise SchemaError("type", "", "a history is a JSON array of events")
        events = []
        for index, item in enumerate(document):
            try:
                events.append(parse_event(item, diagnostics=diagnostics))
            except SchemaError as exc:
                raise exc.at(f"/{index}") from None
        return cls(events)

    def to_json(self) -> list[dict[str, Any]]:
        """The log as wire JSON: one dict per event, in order."""
        return [dump_event(event) for event in self.events]

    def dumps(self) -> bytes:
        """The log as compact JSON text (UTF-8): an array of wire events."""
        return dumps(self.to_json())

    # ---- lineage ------------------------------------------------------------------------

    @property
    def runs(self) -> tuple[RecordedRun, ...]:
        """Every run, in the order recorded."""
        return tuple(self._runs.values())

    def run(self, run_id: str) -> RecordedRun:
        """The run with this ``runId``.

        Raises:
            UsageError: the history has no such run (``history.no-such-run``).
        """
        run = self._runs.get(run_id)
        if run is None:
            raise UsageError("history.no-such-run", f"the history has no run '{run_id}'")
        return run

    def roots(self) -> tuple[RecordedRun, ...]:
        """The runs that continue no other run."""
        return tuple(self._children.get(None, ()))

    def children(self, run_id: str) -> tuple[RecordedRun, ...]:
        """The runs that continue ``run_id`` (more than one: the thread branches there)."""
        self.run(run_id)
        return tuple(self._children.get(run_id, ()))

    def heads(self) -> tuple[RecordedRun, ...]:
        """The tips of the branches: runs no other run continues, in recorded order."""
        return tuple(run for run in self._runs.values() if run.run_id not in self._children)

    def path(self, run_id: str) -> tuple[RecordedRun, ...]:
        """The runs from a root to ``run_id``, in order (the branch ending there)."""
        self.run(run_id)
        return tuple(self._runs[step] for step in _path(run_id, self._parents))

    def branch(self, run_id: str) -> History:
        """Time travel: the history of the runs on the path to ``run_id``, in order.

        Replaying it gives the conversation as that run left it, without the
        runs of other branches.
        """
        return History(event for run in self.path(run_id) for event in run.events)

    # ---- compaction ---------------------------------------------------------------------

    def compact(
        self,
        *,
        run_input: RunAgentInput | dict[str, Any] | None = None,
        protocol_version: str = PROTOCOL_VERSION,
        verify: bool = True,
    ) -> History:
        """The equivalent compacted history (see :func:`compact_events`)."""
        result = compact_events(
            self.to_json(), run_input=run_input, protocol_version=protocol_version, verify=verify
        )
        return History(result.events)

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"<History: {len(self.events)} events, {len(self._runs)} runs>"


# ---- compaction -----------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Compaction:
    """What :func:`compact_events` made of a history.

    Attributes:
        events: the compacted history, typed, in order.
        diagnostics: the tolerated problems reading the original history gave (the
            compacted one leaves out what they were about), lineage problems first.
        runs: the verifier's record of each run of the original, in order.
    """

    events: tuple[Event, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    runs: tuple[RunRecord, ...] = ()

    def to_json(self) -> list[dict[str, Any]]:
        """The compacted history as wire JSON."""
        return [dump_event(event) for event in self.events]

    @property
    def history(self) -> History:
        """The compacted history as a :class:`History`."""
        return History(self.events)


def compact_events(
    events: Iterable[Event | Mapping[str, Any]],
    *,
    run_input: RunAgentInput | dict[str, Any] | None = None,
    protocol_version: str = PROTOCOL_VERSION,
    peer_version: str | None = None,
    verify: bool = True,
) -> Compaction:
    """Compact a recorded history into the equivalent shorter one.

    Replaying the result through a :class:`~agentproto.agui.Consumer` gives the
    same messages, activities, state and run outcomes as replaying ``events``, on
    every branch of the thread; the rules are in :mod:`agentproto.agui._history.compaction`.
    It costs about three consumer passes over the history (reading it, the
    compactor's own conversation, and the check), plus one per extra branch head.

    Args:
        events: the history as recorded: wire JSON events (dicts), typed events, or
            both, in order.
        run_input: what the thread started from (its messages and state are the
            baseline, as for :class:`~agentproto.agui.Consumer`).
        protocol_version: the ``MAJOR.MINOR`` the reading client speaks.
        peer_version: the old peer's version the history was recorded from, if any.
        verify: replay the result and check it against the original (on by default).
            Only a checked result writes items in the chunk form
            (:func:`~agentproto.agui._history.compaction.chunk_form`, shorter still): when the
            check finds the chunk form not equivalent, the explicit form is kept.

    Raises:
        AgentProtoError: the consumer does not accept the history (the
            :class:`~agentproto.SchemaError`, :class:`~agentproto.ProtocolError` or
            :class:`~agentproto.DecodeError` it raises, with a note naming the event);
            nothing is compacted.
        ProtocolError: two runs share a ``runId`` (``history.duplicate-run``).
        UsageError: ``events`` is not an iterable of events (``history.not-events``).
        InternalError: ``verify`` found the result not equivalent (a bug).
    """
    raw = _wire_events(events)
    options: dict[str, Any] = {
        "run_input": run_input,
        "protocol_version": protocol_version,
        "peer_version": peer_version,
    }
    log = _Log(raw, options)
    segments = log.compact()
    if verify:
        reopened = starts_twice(event for _, segment in segments for event in segment)
        shorter = [(run_id, chunk_form(segment, reopened)) for run_id, segment in segments]
        try:
            log.check(shorter)
            segments = shorter
        except InternalError:  # the chunk form did not say the same: keep the explicit one
            log.check(segments)
    return Compaction(
        events=tuple(event for _, segment in segments for event in segment),
        diagnostics=(*log.found, *log.linear.consumer.diagnostics),
        runs=tuple(log.linear.consumer.verifier.runs),
    )


def _wire_events(events: Any) -> list[Any]:
    """The history as wire JSON (typed events dumped); anything else is checked later."""
    if isinstance(events, (str, bytes, bytearray, Mapping)) or not isinstance(events, Iterable):
        raise UsageError(
            "history.not-events",
            f"compact_events takes an iterable of events, not {type(events).__name__} "
            f"(decode JSON text first, e.g. with json.loads)",
        )
    return [dump_event(e) if event_type(e.__class__) else e for e in events]


_Segments = list[tuple[str | None, list[Event]]]


class _Log:
    """One compaction: the wire history, its segments and lineage, the contexts used."""

    def __init__(self, raw: list[Any], options: Mapping[str, Any]) -> None:
        self.raw = raw
        self.options = options
        self.bounds, self.heads = _split(raw)
        self.parents, self.found = _link(self.heads)
        self.linear = _Context(options)  # reads every event in order: the whole-log check
        self.branched = False
        self.lineage: dict[str, str | None] = {}

    def compact(self) -> _Segments:
        """Each segment's run id and compacted events, in order."""
        current = self.linear
        compacted: dict[str, list[Event]] = {}
        out: _Segments = []
        for (start, end), (run_id, _), parent in zip(
            self.bounds, self.heads, self.parents, strict=True
        ):
            if run_id is not None and parent != current.last:
                current = _Context(self.options)  # a branch: from the compacted path to its parent
                for step in _path(parent, self.lineage) if parent is not None else ():
                    current.feed(compacted[step], None)
                current.last = parent
                self.branched = True
            if current is not self.linear:
                self.linear.feed(self.raw[start:end], start, compact=False)
            segment = current.feed(self.raw[start:end], start)
            if run_id is not None:
                self.lineage[run_id], compacted[run_id], current.last = parent, segment, run_id
            out.append((run_id, segment))
        tail = current.close(len(self.raw))
        if current is not self.linear:
            self.linear.close(len(self.raw), compact=False)
        if tail:  # pragma: no cover - a valid history ends with every run closed
            out.append((None, tail))
        return out

    def check(self, segments: _Segments) -> None:
        """The compacted segments replay like the original, on every branch.

        Raises:
            InternalError: they do not.
        """
        if not self.branched:
            events = [event for _, segment in segments for event in segment]
            _check_same(self.linear.consumer, _replay(events, self.options))
            return
        by_run = {run_id: segment for run_id, segment in segments if run_id is not None}
        where = {run_id: self.bounds[i] for i, (run_id, _) in enumerate(self.heads) if run_id}
        parents = set(self.lineage.values())
        for head in (run_id for run_id in self.lineage if run_id not in parents):
            path = _path(head, self.lineage)
            original = [event for step in path for event in self.raw[slice(*where[step])]]
            compacted = [event for step in path for event in by_run[step]]
            _check_same(_replay(original, self.options), _replay(compacted, self.options))


def _split(raw: Sequence[Any]) -> tuple[list[tuple[int, int]], list[tuple[str | None, str | None]]]:
    """Segments of a wire history (a prologue, then one per ``RUN_STARTED``) and their
    ``(runId, parentRunId)`` as recorded (``None`` where not a string)."""
    starts = [
        i for i, e in enumerate(raw) if isinstance(e, Mapping) and e.get("type") == _RUN_STARTED
    ]
    cuts = [0, *starts] if not starts or starts[0] else starts
    bounds = list(zip(cuts, [*cuts[1:], len(raw)], strict=True))
    heads: list[tuple[str | None, str | None]] = []
    for start, _ in bounds:
        first = raw[start] if start < len(raw) else None
        if start in starts and isinstance(first, Mapping):
            run_id, parent = first.get("runId"), first.get("parentRunId")
            heads.append(
                (
                    run_id if isinstance(run_id, str) else None,
                    parent if isinstance(parent, str) else None,
                )
            )
        else:
            heads.append((None, None))
    return bounds, heads


class _Context:
    """A consumer (decoding and verifying) with a compactor over its own shadow conversation."""

    __slots__ = ("compactor", "consumer", "last")

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.consumer = Consumer(**options)
        typed = self.consumer.run_input
        self.compactor = RunCompactor(
            Conversation.from_input(typed) if typed is not None else Conversation()
        )
        self.last: str | None = None  # the run this context's conversation ends with

    def feed(
        self, events: Sequence[Any], first: int | None, *, compact: bool = True
    ) -> list[Event]:
        """Feed wire (or typed, already compacted) events; the compacted events out.

        ``first`` is the index of ``events[0]`` in the history (``None``: events
        this module wrote, whose failure would be a bug).
        """
        for offset, event in enumerate(events):
            wire = dump_event(event) if first is None else event
            try:
                delivered = self.consumer.feed_json(wire)
                if self.consumer.failure is not None:
                    raise self.consumer.failure
            except AgentProtoError as exc:
                index = None if first is None else first + offset
                raise _refused(exc, index) from (exc if first is None else None)
            if compact:
                for item in delivered:
                    self.compactor.feed(item)
        return self.compactor.take() if compact else []

    def close(self, end: int, *, compact: bool = True) -> list[Event]:
        """End of the history: a run still open refuses it."""
        try:
            delivered = self.consumer.close()
            if self.consumer.failure is not None:
                raise self.consumer.failure
        except AgentProtoError as exc:
            raise _refused(exc, end) from None
        if compact:
            for item in delivered:
                self.compactor.feed(item)
        return self.compactor.take() if compact else []


def _refused(exc: AgentProtoError, index: int | None) -> AgentProtoError:
    if index is None:
        error = InternalError("history compaction", exc)
        error.__cause__ = exc
        return error
    exc.add_note(
        f"agentproto: the history was not compacted: it is not a valid AG-UI stream "
        f"(found reading event {index})"
    )
    return exc


def _replay(events: Iterable[Any], options: Mapping[str, Any]) -> Consumer:
    consumer = Consumer(**options)
    try:
        consumer.feed_all(dump_event(e) if event_type(e.__class__) else e for e in events)
        consumer.close()
    except AgentProtoError as exc:
        raise InternalError("history compaction (verify)", exc) from exc
    return consumer


def _outcome(consumer: Consumer) -> tuple[Any, list[tuple[Any, ...]]]:
    """What compaction keeps: the conversation, and each run's id, status and error."""
    runs = [
        (run.run_id, run.status, None if run.error is None else run.error.message)
        for run in consumer.verifier.runs
    ]
    return consumer.conversation.to_json(), runs


def _check_same(original: Consumer, compacted: Consumer) -> None:
    (want, want_runs), (got, got_runs) = _outcome(original), _outcome(compacted)
    if not same_json(want, got) or want_runs != got_runs:
        raise InternalError(
            "history compaction (verify)",
            AssertionError("the compacted history replays to another conversation or outcome"),
        )
