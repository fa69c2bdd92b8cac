"""The next request: a ``RunAgentInput`` built from a conversation, checked before sending.

Two steps, kept apart so that a caller may adjust the typed input in between:

* :func:`next_run_input` builds the typed :class:`RunAgentInput` from a
  :class:`~agentproto.agui._reduce.conversation.Conversation`: its messages without
  the activity messages (rendering material the agent does not resume from),
  its state, and the run's own parameters. The result is independent of the
  conversation. A thread that continues answers every call to the client's
  tools first (the draft's "Frontend tools"): the tool messages given as
  ``tool_results`` are placed after their calls, and an input that would leave
  a call to one of ``tools`` unanswered is refused before it is built
  (:mod:`agentproto.agui._thread.frontend_tools`).

  By default (``check=True``) the input is also held to what the conversation
  itself recorded of its last run: the calls to the tools the input it started
  from declared (:attr:`~agentproto.agui.Conversation.declared_tools`) count as
  the client's too, even when the next input declares none; and once a run ended
  (:attr:`~agentproto.agui.Conversation.last_run_event`), the ``resume`` list,
  entries or an :class:`~agentproto.agui.OpenInterrupts`, must answer exactly
  the interrupts that run left open (``resume.unknown-interrupt``,
  ``resume.uncovered``, ``resume.expired``, ``resume.thread-mismatch``,
  :mod:`agentproto.agui._thread.interrupts`). ``check=False`` opts out, for a
  caller who knows better than the conversation (one rebuilt without its runs
  knows nothing and is not held to them anyway); the checks of the arguments
  themselves (duplicates, the given ``tools``, the version) always apply.
* :func:`dump_run_input` turns a typed input into the wire JSON to send, after
  the same enforcement incoming material gets: activity messages are stripped
  (whoever built the input), a malformed known field is fatal
  (:class:`~agentproto._core.errors.SchemaError`, before anything is sent), and
  unknown material (an enumeration value or union member the schema does not
  know) is fatal too unless a diagnostics list is given, in which case it is
  stripped by the spec's depth rules and reported there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from agentproto._core.diagnostics import Diagnostic, log_diagnostics
from agentproto._core.readonly import thaw
from agentproto._core.unset import UNSET
from agentproto.agui._generated import (
    Context,
    Message,
    ResumeEntry,
    RunAgentInput,
    Tool,
    ToolMessage,
)
from agentproto.agui._protocol.compat import check_declarable, flatten_for_peer
from agentproto.agui._protocol.kinds import ACTIVITY
from agentproto.agui._protocol.wire import CONVERTER
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._thread.frontend_tools import with_tool_answers
from agentproto.agui._thread.interrupts import OpenInterrupts, resume_for

__all__ = ["PROTOCOL_VERSION", "dump_run_input", "next_run_input"]

PROTOCOL_VERSION: Final = "1.0"
"""The protocol version this SDK speaks (the draft describes 1.0 behaviour)."""

_ACTIVITY: Final = frozenset({ACTIVITY})
_logger = logging.getLogger("agentproto.agui")
_NULL_STATE: Final = Diagnostic(
    code="run-input.null-state",
    message="the state is null, which a RunAgentInput cannot carry; it is left out"
    " (an absent state means {})",
    path="/state",
)


def next_run_input(
    conversation: Conversation,
    *,
    thread_id: str,
    run_id: str,
    tools: Iterable[Tool] = (),
    context: Iterable[Context] = (),
    forwarded_props: Any = UNSET,
    resume: Iterable[ResumeEntry] | OpenInterrupts | None = None,
    parent_run_id: str | None = None,
    protocol_version: str | None = PROTOCOL_VERSION,
    state: Any = UNSET,
    tool_results: Iterable[ToolMessage | Mapping[str, Any]] = (),
    diagnostics: list[Diagnostic] | None = None,
    check: bool = True,
) -> RunAgentInput:
    """The ``RunAgentInput`` of the next run of ``conversation``.

    Args:
        conversation: the conversation so far; its messages (activity messages
            left out) and its state are copied into the input.
        thread_id: the conversation's thread.
        run_id: the new run's id.
        tools: the tools the agent may call (sent as a list, ``[]`` when none).
        context: ambient context entries (sent as a list, ``[]`` when none).
        forwarded_props: any JSON value, passed through untouched (copied);
            omitted means the input carries none.
        resume: the answers to the previous run's interrupts (copied): entries, or an
            :class:`OpenInterrupts`, checked (``UsageError`` ``resume.*``, ids named)
            against what the last run the conversation saw left open (``check``).
        parent_run_id: the run that spawned this one, if any.
        protocol_version: the version this client declares, ``MAJOR.MINOR``;
            ``None`` leaves it out (for a peer that predates the field).
        state: overrides the conversation's state when given (copied).
        tool_results: tool messages (or wire JSON) answering the calls to ``tools``.
        diagnostics: where to report a ``null`` state, which the schema does not
            let a request carry: it is then left out (an agent reads an absent
            state as ``{}``).
        check: hold the input to what the conversation recorded (the default): the
            interrupts its last run left open, the tools its own input declared
            (see the module documentation). ``False`` checks only the arguments.

    Returns:
        a new typed input; nothing in it is shared with ``conversation`` or
        with the arguments' JSON values.

    Raises:
        UsageError: ``version.not-declarable``: ``protocol_version`` is not
            ``MAJOR.MINOR`` (``"draft"`` is never declared); ``toolcall.*``: a call
            to ``tools`` (or, checked, to the conversation's declared tools) left
            unanswered, or an answer fitting no call; ``resume.*``.
    """
    check_declarable(protocol_version, "next_run_input()")
    tools = list(tools)
    due: list[Tool | str] = [*tools, *conversation.declared_tools] if check else list(tools)
    return RunAgentInput(
        thread_id=thread_id,
        run_id=run_id,
        messages=_messages(conversation, due, tool_results),
        protocol_version=protocol_version,
        parent_run_id=parent_run_id,
        state=_input_state(conversation, state, diagnostics),
        tools=tools,
        context=list(context),
        forwarded_props=None if forwarded_props is UNSET else thaw(forwarded_props),
        resume=resume_for(resume, thread_id, conversation if check else None),
    )


def _messages(
    conversation: Conversation,
    tools: list[Tool | str],
    answers: Iterable[ToolMessage | Mapping[str, Any]],
) -> list[Message]:
    """The messages to send: activity messages left out, every unanswered call to one of
    ``tools`` (tools or names) answered
    (:func:`~agentproto.agui._thread.frontend_tools.with_tool_answers`)."""
    return with_tool_answers(conversation.copy_messages(skip_roles=_ACTIVITY), tools, answers)


def _input_state(
    conversation: Conversation, state: Any, diagnostics: list[Diagnostic] | None
) -> Any:
    """The state the input carries: ``state`` when given, else the conversation's (copied)."""
    snapshot = conversation.state_json() if state is UNSET else thaw(state)
    if snapshot is None and diagnostics is not None:
        diagnostics.append(_NULL_STATE)
    return snapshot


def dump_run_input(
    run_input: RunAgentInput,
    *,
    diagnostics: list[Diagnostic] | None = None,
    peer_version: str | None = None,
) -> dict[str, Any]:
    """The wire JSON of a run input, enforced as incoming material is.

    Activity messages are always stripped (the spec forbids sending them); with
    a diagnostics list each one stripped is reported (code
    ``run-input.activity-stripped``).

    Args:
        run_input: the typed input.
        peer_version: the newest version an old peer speaks, when pinned to one:
            the input is then down-translated for it (no ``protocolVersion`` before
            1.0, text-only content at or before 0.0.39, with a
            ``compat.content-flattened`` warning per message whose non-text parts
            are dropped). A lossy downgrade always warns: into ``diagnostics``
            when given, else on the ``agentproto.agui`` logger at WARNING level
            (silence it there, through :mod:`logging`, if you must).
        diagnostics: ``None`` (default) for strict checking: anything the schema
            does not define is fatal. A list for tolerant checking: unknown
            enumeration values and union members are stripped (an optional field
            removed, a list element dropped) and reported there, as enforcement
            does for incoming events.

    Returns:
        a new ``dict`` (camelCase keys) sharing nothing with ``run_input``.

    Raises:
        SchemaError: a known field holds a value the schema rejects (wrong type,
            missing required member, ...), or, in strict mode, something
            unknown; ``keyword`` and ``location`` say what and where.
        UsageError: ``version.not-declarable``: the input declares a
            ``protocolVersion`` that is not ``MAJOR.MINOR`` (such as ``"draft"``).
    """
    check_declarable(run_input.protocol_version, "a run input")
    wire: dict[str, Any] = thaw(CONVERTER.dump(run_input))
    messages = wire.get("messages")
    if isinstance(messages, list):
        wire["messages"] = _without_activities(messages, diagnostics)
    if diagnostics is None:
        CONVERTER.load(wire, RunAgentInput)
        lossy: list[Diagnostic] = []
        flat = flatten_for_peer(wire, peer_version, lossy)
        log_diagnostics(lossy, _logger)  # a lossy downgrade is never silent
        return flat
    loaded = CONVERTER.load(wire, RunAgentInput, diagnostics=diagnostics)
    result: dict[str, Any] = CONVERTER.dump(loaded)
    return flatten_for_peer(result, peer_version, diagnostics)


def _without_activities(messages: list[Any], diagnostics: list[Diagnostic] | None) -> list[Any]:
    """The messages but the activity messages, each one left out reported (with a list)."""
    kept = []
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == ACTIVITY:
            if diagnostics is not None:
                diagnostics.append(
                    Diagnostic(
                        code="run-input.activity-stripped",
                        message="activity messages are not sent in run input; stripped",
                        path=f"/messages/{index}",
                        subject=message.get("id") if isinstance(message.get("id"), str) else None,
                    )
                )
            continue
        kept.append(message)
    return kept
