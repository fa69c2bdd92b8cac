"""One check per requirement id: probe the target, return what was seen.

A check returns a short detail (a pass, or for an INFORMATIONAL id the observation) or
raises :func:`~tests.conformance.acp_tck.outcome.fail` / ``vacuous`` / ``skipped``.
:func:`judge` applies the registry's tier and capability gate around it: an id whose
capability is not advertised is ``skipped(capability)``, an INFORMATIONAL id is
``recorded`` whatever happened, and a check that runs out of time fails.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from tests.conformance.acp_tck import wire
from tests.conformance.acp_tck.harness import (
    QUIET,
    AgentProcess,
    Message,
    NoAnswer,
    is_request,
    is_response,
)
from tests.conformance.acp_tck.outcome import Outcome, Status, Verdict, fail, skipped, vacuous
from tests.conformance.acp_tck.probe import Probe, Turn, is_idle, update_of
from tests.conformance.acp_tck.registry import REGISTRY, Tier

Check = Callable[[Probe], str]
CHECKS: dict[str, Check] = {}
LATE = (
    "ACP-TRANSPORT-201",
    "ACP-TRANSPORT-002",
    "ACP-TRANSPORT-203",
    "ACP-JSONRPC-001",
    "ACP-JSONRPC-002",
    "ACP-SCHEMA-002",
    "ACP-META-201",
    "ACP-ERROR-001",
    "ACP-BATCH-207",
    "ACP-BATCH-208",
    "ACP-CLIENTCAP-201",
    "ACP-CLIENTCAP-202",
    "ACP-CONFIG-206",
    "ACP-PATCH-201",
    "ACP-PATCH-204",
    "ACP-PATCH-205",
    "ACP-PATCH-206",
    "ACP-PATCH-207",
    "ACP-PATCH-208",
    "ACP-ENUM-201",
    "ACP-ENUM-202",
    "ACP-STDERR-001",
    "ACP-SHUTDOWN-001",
)
"""Judged over the whole run, after every other probe (``ACP-SHUTDOWN-001`` ends it)."""


@functools.cache
def message_kinds() -> tuple[str, ...]:
    """The ``sessionUpdate`` kinds of messages and their chunks: the pinned schema's
    ``SessionUpdate`` branches whose payload requires a ``messageId``."""
    found = []
    for branch in wire.defs()["SessionUpdate"]["anyOf"]:
        kind = (branch.get("properties") or {}).get("sessionUpdate", {}).get("const")
        payloads = [ref["$ref"].rsplit("/", 1)[-1] for ref in branch.get("allOf", [])]
        if kind and any("messageId" in wire.defs()[p].get("required", []) for p in payloads):
            found.append(kind)
    return tuple(found)


def whole_of(kind: str) -> str | None:
    """The whole-message kind of a chunk kind (``None`` for anything else)."""
    whole = kind.removesuffix("_chunk")
    return whole if whole != kind and whole in message_kinds() else None


TINY_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
TINY_WAV = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
    b"@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
).decode()


def check(requirement_id: str) -> Callable[[Check], Check]:
    assert requirement_id in REGISTRY, requirement_id

    def register(function: Check) -> Check:
        assert requirement_id not in CHECKS, requirement_id
        CHECKS[requirement_id] = function
        return function

    return register


def judge(requirement_id: str, probe: Probe) -> Outcome:
    """The outcome of one id against the probe's target."""
    requirement = REGISTRY[requirement_id]
    gate = requirement.capability
    informational = requirement.tier is Tier.INFORMATIONAL
    if requirement.not_applicable is not None:
        return Outcome(Status.NOT_APPLICABLE, requirement.not_applicable)
    try:
        if gate is not None and gate.startswith("capabilities.") and not probe.advertises(gate):
            raise skipped(f"{gate} is not advertised")
        detail = CHECKS[requirement_id](probe)
    except Verdict as verdict:
        if informational and verdict.outcome.status is not Status.SKIPPED:
            return Outcome(Status.RECORDED, verdict.outcome.detail)
        return verdict.outcome
    except (NoAnswer, AssertionError) as error:
        if informational:
            return Outcome(Status.RECORDED, f"observed: {error}")
        return Outcome(Status.FAILED, str(error))
    return Outcome(Status.RECORDED if informational else Status.PASSED, detail)


# ---- helpers ----------------------------------------------------------------------


def result_of(response: Message, what: str) -> Message:
    """The object result of ``response``; fails on an error."""
    if "error" in response:
        raise fail(f"{what} answered an error: {json.dumps(response['error'])[:200]}")
    result = response.get("result")
    if not isinstance(result, dict):
        raise fail(f"{what} answered a result that is no object: {json.dumps(result)[:100]}")
    return result


def valid(process: AgentProcess, response: Message, what: str) -> Message:
    """The result of ``response``, checked against the pinned schema."""
    result = result_of(response, what)
    problem = wire.message_problem(response, process.answered_method(response))
    if problem:
        raise fail(f"{what}: {problem}")
    return result


def needs_session(probe: Probe) -> None:
    """Probes that need sessions skip on a target without ``capabilities.session``."""
    if not probe.advertises("capabilities.session"):
        raise skipped("capabilities.session is not advertised (the probe needs sessions)")


def ended(turn: Turn, what: str) -> str:
    """Passes when the turn was accepted and went idle."""
    if turn.response is None or "error" in turn.response:
        raise fail(f"{what}: session/prompt answered {json.dumps(turn.response)[:200]}")
    if turn.idle is None:
        raise fail(f"{what}: accepted, but no idle state_update within the budget")
    return f"accepted ({turn.message_id}), idle with stopReason {turn.idle.get('stopReason')!r}"


def is_absolute(path: Any) -> bool:
    return isinstance(path, str) and (
        PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()
    )


def all_updates(probe: Probe) -> list[tuple[str, Message]]:
    """Every ``session/update`` any process received: (sessionId, update)."""
    found = []
    for _, message in probe.everything():
        update = update_of(message)
        if update is not None:
            found.append((message["params"].get("sessionId"), update))
    return found


def of_kind(probe: Probe, *kinds: str) -> list[tuple[str, Message]]:
    return [(s, u) for s, u in all_updates(probe) if u.get("sessionUpdate") in kinds]


def consts(name: str) -> set[str]:
    """The constants the pinned schema lists for the open enum (or union) ``name``."""
    definition = wire.defs()[name]
    found: set[str] = set(definition.get("enum", []))
    for branch in definition.get("anyOf", definition.get("oneOf", [])):
        if "const" in branch:
            found.add(branch["const"])
        for key in ("type", "sessionUpdate", "state", "outcome"):
            const = (branch.get("properties") or {}).get(key, {}).get("const")
            if const is not None:
                found.add(const)
    return found


def open_enum_problems(values: Iterable[tuple[str, Any]], name: str) -> list[str]:
    """Values neither defined by ``name`` nor ``_``-prefixed."""
    defined = consts(name)
    return [
        f"{where}={value!r}"
        for where, value in values
        if value is not None
        and value not in defined
        and not (isinstance(value, str) and value.startswith("_"))
    ]


def walk(value: Any) -> Iterable[tuple[str, Any]]:
    """Every (key, value) pair of nested objects."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                yield key, item
                stack.append(item)
        elif isinstance(node, list):
            stack.extend(node)


@functools.cache
def defined_stops() -> tuple[str, ...]:
    """The stop reasons the prose defines (the pinned v1 schema's enumeration of them) and
    the pinned v2 schema's ``error`` (``$defs/ErrorStopReason``)."""
    return (*wire.v1_stop_reasons(), "error")


# ---- initialize -------------------------------------------------------------------


@check("ACP-INIT-001")
def init_001(probe: Probe) -> str:
    result_of(probe.init, "initialize")
    return "initialize answered a result"


def version_of(response: Message) -> Any:
    return (response.get("result") or {}).get("protocolVersion")


@check("ACP-INIT-201")
def init_201(probe: Probe) -> str:
    version = version_of(probe.init)
    if not isinstance(version, int) or isinstance(version, bool):
        raise fail(f"protocolVersion {version!r} is not an integer")
    if version > 2:
        raise fail(f"asked for 2, negotiated {version}")
    return f"negotiated {version}"


@check("ACP-INIT-003")
def init_003(probe: Probe) -> str:
    process, response = probe.fresh(version=65535)
    version = version_of(response)
    result_of(response, "initialize(65535)")
    if version == 65535:
        raise fail("echoed the unsupported version 65535")
    if not isinstance(version, int) or version < version_of(probe.init):
        raise fail(f"answered {version!r}, below its latest ({version_of(probe.init)})")
    process.close_stdin(1.0)
    return f"answered {version}"


@check("ACP-INIT-202")
def init_202(probe: Probe) -> str:
    process, response = probe.fresh(version=1)
    result_of(response, "initialize(1)")
    process.close_stdin(1.0)
    if version_of(response) not in (1, 2):
        raise fail(f"answered protocolVersion {version_of(response)!r}")
    return f"answered {version_of(response)}"


def needs_v2(probe: Probe) -> Message:
    if version_of(probe.init) != 2:
        raise vacuous(f"negotiated version {version_of(probe.init)!r}, not 2")
    return result_of(probe.init, "initialize")


@check("ACP-INIT-203")
def init_203(probe: Probe) -> str:
    info = needs_v2(probe).get("info")
    if not isinstance(info, dict):
        raise fail(f"info is {info!r}")
    for key in ("name", "version"):
        if not isinstance(info.get(key), str) or not info[key]:
            raise fail(f"info.{key} is {info.get(key)!r}")
    if info.get("title") is not None and not isinstance(info["title"], str):
        raise fail(f"info.title is {info['title']!r}")
    return f"info {info['name']} {info['version']}"


@check("ACP-INIT-204")
def init_204(probe: Probe) -> str:
    capabilities = needs_v2(probe).get("capabilities")
    if capabilities is None:
        return "no capabilities"
    if not isinstance(capabilities, dict):
        raise fail(f"capabilities is {capabilities!r}")
    stack = [("capabilities", capabilities)]
    while stack:
        where, node = stack.pop()
        for key, value in node.items():
            if key == "_meta":
                continue
            if not (value is None or isinstance(value, dict)):
                raise fail(f"{where}.{key} is {json.dumps(value)}, not an object")
            if isinstance(value, dict):
                stack.append((f"{where}.{key}", value))
    return "every marker is an object"


@check("ACP-SCHEMA-001")
def schema_001(probe: Probe) -> str:
    needs_v2(probe)
    for message in probe.main.received[:1]:
        problem = wire.message_problem(message, probe.main.answered_method(message))
        if problem:
            raise fail(problem)
    return "the initialize exchange validates"


@check("ACP-SCHEMA-002")
def schema_002(probe: Probe) -> str:
    found: list[str] = []
    for process, message in probe.everything():
        if not isinstance(message, dict) or process.version != 2:
            continue  # a v1 connection is judged by v1 rules
        if "method" in message:
            names = wire.method_defs().get(message["method"], ((), ()))[0]
            keys = wire.unknown_root_keys(message.get("params"), names)
        elif "result" in message:
            method = process.answered_method(message)
            names = wire.method_defs().get(method or "", ((), ()))[1]
            keys = wire.unknown_root_keys(message["result"], names)
        else:
            continue
        found.extend(
            f"{message.get('method') or process.answered_method(message)}: {key}" for key in keys
        )
    if found:
        raise fail("unknown root keys: " + ", ".join(sorted(set(found))))
    return "no unknown root key"


# ---- sessions and prompts ---------------------------------------------------------


@check("ACP-SESSION-001")
def session_001(probe: Probe) -> str:
    result = valid(probe.main, probe.session, "session/new")
    if not isinstance(result.get("sessionId"), str) or not result["sessionId"]:
        raise fail(f"sessionId is {result.get('sessionId')!r}")
    return f"session {result['sessionId']}"


@check("ACP-SESSION-002")
def session_002(probe: Probe) -> str:
    first, second = probe.session_id, probe.new_session_id()
    if first == second:
        raise fail(f"both sessions are {first!r}")
    return "two distinct ids"


@check("ACP-SESSION-203")
def session_203(probe: Probe) -> str:
    valid(probe.main, probe.session, "session/new without mcpServers")
    valid(probe.main, probe.new_session(mcpServers=[]), "session/new with mcpServers []")
    return "both forms accepted"


@check("ACP-PROMPT-201")
def prompt_201(probe: Probe) -> str:
    response = probe.turn.response or {}
    result = valid(probe.main, response, "session/prompt")
    if not isinstance(result.get("messageId"), str) or not result["messageId"]:
        raise fail(f"messageId is {result.get('messageId')!r}")
    return f"receipt {result['messageId']}"


@check("ACP-PROMPT-203")
def prompt_203(probe: Probe) -> str:
    turn = probe.turn
    kinds = ("user_message", "user_message_chunk")
    users = [u for u in turn.updates if u.get("sessionUpdate") in kinds]
    if not any(u.get("messageId") == turn.message_id for u in users):
        raise fail(f"no user_message(_chunk) with messageId {turn.message_id!r} (saw {len(users)})")
    return "the user message was reported with the receipt's id"


@check("ACP-PROMPT-205")
def prompt_205(probe: Probe) -> str:
    turn = probe.turn
    updates = [m for m in turn.messages if update_of(m) is not None]
    if not updates:
        raise vacuous("no session/update during the turn")
    for message in updates:
        problem = wire.message_problem(message)
        if problem:
            raise fail(problem)
        if message["params"].get("sessionId") != turn.session_id:
            raise fail(f"an update for {message['params'].get('sessionId')!r}")
    return f"{len(updates)} updates validate"


@check("ACP-PROMPT-003")
def prompt_003(probe: Probe) -> str:
    needs_session(probe)
    link = {"type": "resource_link", "name": "notes.txt", "uri": "file:///tmp/notes.txt"}
    return ended(
        probe.prompt([{"type": "text", "text": "See the link"}, link]), "text + resource_link"
    )


def states(turn: Turn) -> list[Message]:
    return [u for u in turn.updates if u.get("sessionUpdate") == "state_update"]


@check("ACP-STATE-201")
def state_201(probe: Probe) -> str:
    seen = states(probe.turn)
    idles = [i for i, u in enumerate(seen) if u.get("state") == "idle" and u.get("stopReason")]
    if not idles:
        raise vacuous("no turn-ending idle observed")
    if not any(u.get("state") == "running" for u in seen[: idles[0]]):
        raise fail("idle with a stopReason, but no running before it")
    return "running, then idle"


def running_then_idle(turn: Turn) -> Message:
    seen = states(turn)
    running = [i for i, u in enumerate(seen) if u.get("state") == "running"]
    if not running:
        raise vacuous("no foreground work (running) observed")
    idle = [u for u in seen[running[0] :] if u.get("state") == "idle"]
    if not idle:
        raise fail("running, but no idle within the turn's budget")
    return idle[0]


@check("ACP-STATE-202")
def state_202(probe: Probe) -> str:
    running_then_idle(probe.turn)
    return "idle followed running"


def stop_ok(reason: Any) -> bool:
    return isinstance(reason, str) and (reason in defined_stops() or reason.startswith("_"))


@check("ACP-STATE-203")
def state_203(probe: Probe) -> str:
    reason = running_then_idle(probe.turn).get("stopReason")
    if not stop_ok(reason):
        raise fail(
            f"stopReason {reason!r} is neither defined "
            f"({', '.join(defined_stops())}) nor _-prefixed"
        )
    return f"stopReason {reason}"


@check("ACP-PROMPTCAP-001")
def promptcap_001(probe: Probe) -> str:
    image = {"type": "image", "mimeType": "image/png", "data": TINY_PNG}
    return ended(probe.prompt([{"type": "text", "text": "An image"}, image]), "image")


@check("ACP-PROMPTCAP-002")
def promptcap_002(probe: Probe) -> str:
    audio = {"type": "audio", "mimeType": "audio/wav", "data": TINY_WAV}
    return ended(probe.prompt([{"type": "text", "text": "A sound"}, audio]), "audio")


@check("ACP-PROMPTCAP-003")
def promptcap_003(probe: Probe) -> str:
    resource = {
        "type": "resource",
        "resource": {"uri": "file:///tmp/notes.txt", "mimeType": "text/plain", "text": "notes"},
    }
    return ended(probe.prompt([{"type": "text", "text": "A file"}, resource]), "embedded resource")


@check("ACP-PERM-201")
def perm_201(probe: Probe) -> str:
    turn = probe.turn
    asked = [m for m in turn.requests if m.get("method") == "session/request_permission"]
    if not asked:
        raise vacuous("no permission request during the turn")
    for message in asked:
        problem = wire.message_problem(message)
        params = message.get("params") or {}
        if problem:
            raise fail(problem)
        if (
            params.get("sessionId") != turn.session_id
            or not params.get("title")
            or not params.get("options")
        ):
            raise fail(f"malformed permission request: {json.dumps(params)[:200]}")
    if turn.idle is None:
        raise fail("the turn did not reach idle after the permission was granted")
    return f"{len(asked)} permission request(s), then idle"


@check("ACP-CLIENTCAP-201")
def clientcap_201(probe: Probe) -> str:
    probe.turn  # noqa: B018
    asked = [
        m
        for _, m in probe.everything()
        if is_request(m) and m.get("method") == "elicitation/create"
    ]
    if asked:
        raise fail(f"{len(asked)} elicitation/create to a client without elicitation")
    return "no elicitation/create"


@check("ACP-CLIENTCAP-202")
def clientcap_202(probe: Probe) -> str:
    client_methods = {
        d["x-method"]
        for d in wire.defs().values()
        if isinstance(d, dict) and d.get("x-side") == "client" and "x-method" in d
    }
    bad = sorted(
        {
            m["method"]
            for _, m in probe.everything()
            if isinstance(m, dict)
            and isinstance(m.get("method"), str)
            and m["method"] not in client_methods
            and not m["method"].startswith(("_", "$/"))
        }
    )
    if bad:
        raise fail("methods the client does not define: " + ", ".join(bad))
    return "every agent-initiated method is a client method"


@check("ACP-INFO-CONCURRENT-201")
def info_concurrent_201(probe: Probe) -> str:
    needs_session(probe)
    session_id = probe.new_session_id()
    probe.main.client.hold_permissions = True
    try:
        first = probe.main.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "one"}]}
        )
        second = probe.main.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "two"}]}
        )
    finally:
        probe.main.client.hold_permissions = False
        probe.main.notify("session/cancel", {"sessionId": session_id})
        probe.main.pump(lambda m: is_idle(m, session_id), 2.0)
        for held in probe.main.client.held:
            probe.main.send(
                {
                    "jsonrpc": "2.0",
                    "id": held.get("id"),
                    "result": {"outcome": {"outcome": "cancelled"}},
                }
            )
        probe.main.client.held.clear()
        probe.main.pump(None, QUIET)
    answers = [json.dumps(r.get("error") or "accepted") for r in (first, second)]
    return f"first: {answers[0]}; second: {answers[1]}"


@check("ACP-INFO-UNKNOWNSESSION-001")
def info_unknownsession_001(probe: Probe) -> str:
    response = probe.main.request(
        "session/prompt",
        {"sessionId": "sess-never-created", "prompt": [{"type": "text", "text": "?"}]},
    )
    return f"answered {json.dumps(response.get('error') or response.get('result'))[:160]}"


# ---- cancellation ------------------------------------------------------------------


def cancelled_idle(probe: Probe, how: str = "cancel") -> tuple[Any, Message | None]:
    needs_session(probe)
    interrupted = probe.cancelled if how == "cancel" else probe.closed
    if not interrupted.in_flight:
        raise vacuous("the turn ended before it could be cancelled (no permission request held it)")
    return interrupted, interrupted.turn.idle


@check("ACP-CANCEL-201")
def cancel_201(probe: Probe) -> str:
    _, idle = cancelled_idle(probe)
    if idle is None:
        raise fail("no idle state_update after session/cancel")
    if idle.get("stopReason") != "cancelled":
        raise fail(f"idle with stopReason {idle.get('stopReason')!r}")
    return "idle, cancelled"


@check("ACP-CANCEL-202")
def cancel_202(probe: Probe) -> str:
    interrupted, idle = cancelled_idle(probe)
    if idle is None:
        raise fail("no idle after the cancel")
    turn = interrupted.turn
    at = next(i for i, m in enumerate(turn.messages) if is_idle(m, turn.session_id))
    later = [
        m
        for m in turn.messages[at + 1 :]
        if (u := update_of(m, turn.session_id)) and u.get("sessionUpdate") == "state_update"
    ]
    if later:
        raise fail(f"{len(later)} state_update(s) after the cancelled idle")
    return "nothing after the cancelled idle"


@check("ACP-CANCEL-203")
def cancel_203(probe: Probe) -> str:
    interrupted, idle = cancelled_idle(probe)
    if "error" in (interrupted.turn.response or {}):
        raise fail(f"session/prompt answered an error: {interrupted.turn.response}")
    reason = (idle or {}).get("stopReason")
    if reason in defined_stops() and reason != "cancelled":
        raise fail(f"the cancelled turn ended with stopReason {reason!r}")
    return "no error, no other stop reason"


@check("ACP-CANCEL-204")
def cancel_204(probe: Probe) -> str:
    _, idle = cancelled_idle(probe)
    return f"idle after cancel: {json.dumps(idle)[:120]}"


@check("ACP-CANCEL-205")
def cancel_205(probe: Probe) -> str:
    interrupted, _ = cancelled_idle(probe)
    if interrupted.stray_responses:
        raise fail(f"responses to the notification: {interrupted.stray_responses}")
    return "no response to session/cancel"


@check("ACP-CANCEL-206")
def cancel_206(probe: Probe) -> str:
    cancel_201(probe)
    with_meta = probe.interrupted("cancel", meta={"tck": {"note": "cancel with _meta"}})
    if with_meta.in_flight and (with_meta.turn.idle or {}).get("stopReason") != "cancelled":
        raise fail(f"a cancel with _meta did not end the work: {with_meta.turn.idle}")
    if with_meta.stray_responses:
        raise fail("a cancel with _meta was answered")
    return "with and without _meta"


@check("ACP-CANCEL-207")
def cancel_207(probe: Probe) -> str:
    _, idle = cancelled_idle(probe)
    reason = (idle or {}).get("stopReason")
    if reason != "cancelled":
        raise fail(f"stopReason {reason!r} instead of 'cancelled'")
    return "exactly 'cancelled'"


def closed_cancels(probe: Probe) -> str:
    interrupted, idle = cancelled_idle(probe, "close")
    if "error" in (interrupted.close_response or {}):
        raise fail(f"session/close answered {interrupted.close_response}")
    if idle is None or idle.get("stopReason") != "cancelled":
        raise fail(f"after session/close: idle {json.dumps(idle)}")
    return "session/close ended the work: idle, cancelled"


check("ACP-CANCEL-208")(closed_cancels)
check("ACP-CLOSE-202")(closed_cancels)


@check("ACP-INFO-CANCEL-201")
def info_cancel_201(probe: Probe) -> str:
    needs_session(probe)
    probe.main.notify("session/cancel", {"sessionId": "sess-never-created"})
    probe.main.notify("session/cancel", {"sessionId": probe.session_id})
    got = probe.main.pump(None, QUIET)
    return (
        f"{len(got)} message(s) after cancels of an unknown and an idle session: "
        f"{json.dumps(got)[:160]}; alive: {probe.ping()}"
    )


@check("ACP-INFO-CANCEL-202")
def info_cancel_202(probe: Probe) -> str:
    interrupted, _ = cancelled_idle(probe)
    sent = [
        m
        for m in interrupted.after
        if isinstance(m, dict) and m.get("method") == "$/cancel_request"
    ]
    return f"$/cancel_request sent: {len(sent)}"


# ---- transport and JSON-RPC --------------------------------------------------------


def agent_lines(probe: Probe) -> list[Any]:
    return [line for process in probe.processes for line in process.agent_lines()]


@check("ACP-TRANSPORT-201")
def transport_201(probe: Probe) -> str:
    lines = agent_lines(probe)
    for line in lines:
        if line.error:
            raise fail(f"{line.error}: {line.raw[:120]!r}")
        if isinstance(line.value, list):
            if not line.value:
                raise fail("an empty array on stdout")
            members = line.value
        else:
            members = [line.value]
        for member in members:
            problem = wire.envelope_problem(member) or wire.invalid(member)
            if problem:
                raise fail(f"{problem}: {line.raw[:160]!r}")
    return f"{len(lines)} lines"


@check("ACP-TRANSPORT-002")
def transport_002(probe: Probe) -> str:
    bad = [line for line in agent_lines(probe) if line.error and line.error.startswith("not UTF-8")]
    if bad:
        raise fail(f"{bad[0].error}")
    return "UTF-8 throughout"


@check("ACP-TRANSPORT-203")
def transport_203(probe: Probe) -> str:
    bad = [line for line in agent_lines(probe) if line.error]
    if bad:
        raise fail(f"a line that is no whole message ({bad[0].error}): {bad[0].raw[:120]!r}")
    return "one message (or batch) per line"


@check("ACP-JSONRPC-001")
def jsonrpc_001(probe: Probe) -> str:
    response = probe.main.request("_tck/echo", {})
    ident = "tck-string-id"
    probe.main.send({"jsonrpc": "2.0", "id": ident, "method": "_tck/echo", "params": {}})
    got = probe.main.pump(is_response, 3.0)  # the next response answers it
    if not any(is_response(m) and m.get("id") == ident for m in got):
        raise fail(f"no response with the string id {ident!r}: {json.dumps(got)[:200]}")
    del response
    for process, message in probe.everything():
        if (
            is_response(message)
            and message.get("id") is not None
            and json.dumps(message["id"]) not in process.sent_ids
        ):
            raise fail(f"a response with an id never sent: {json.dumps(message)[:160]}")
    return "ids echoed (integer, string, in batches)"


@check("ACP-JSONRPC-002")
def jsonrpc_002(probe: Probe) -> str:
    count = 0
    for _, message in probe.everything():
        if is_response(message):
            count += 1
            problem = wire.envelope_problem(message)
            if problem:
                raise fail(f"{problem}: {json.dumps(message)[:160]}")
    return f"{count} responses well formed"


def silent_after(process: AgentProcess, send: Callable[[], None]) -> list[Any]:
    """What arrives after ``send`` and before a ping's response."""
    send()
    response, got = process.call("_tck/ping", {})
    return [m for m in got if m is not response]


@check("ACP-JSONRPC-003")
def jsonrpc_003(probe: Probe) -> str:
    got = silent_after(probe.main, lambda: probe.main.notify("_tck/notice", {"n": 1}))
    answers = [m for m in got if is_response(m)]
    if answers:
        raise fail(f"a notification was answered: {json.dumps(answers)[:160]}")
    return "notifications unanswered"


@check("ACP-JSONRPC-004")
def jsonrpc_004(probe: Probe) -> str:
    response = probe.main.request("tck/no_such_method", {})
    code = (response.get("error") or {}).get("code")
    if code != -32601:
        raise fail(f"answered {json.dumps(response.get('error') or response.get('result'))[:160]}")
    return "-32601"


@check("ACP-JSONRPC-005")
def jsonrpc_005(probe: Probe) -> str:
    process = probe.abuse
    for line in (
        "{not json",
        "[]",
        "[1]",
        '{"jsonrpc":"2.0","id":"x"}',
        '{"jsonrpc":"2.0","method":42,"id":3}',
    ):
        process.send_raw(line)
        process.pump(None, 0.1)
    if not probe.ping(process):
        raise fail("no answer after invalid input")
    return "still answering after invalid input"


def batch_reply(
    process: AgentProcess, batch: list[Any] | str, expect: int = 1, settle: float = 0.15
) -> list[Any]:
    """The agent lines after sending ``batch`` (one line): read until ``expect`` lines
    came (``QUIET`` at most when none is expected), then ``settle`` seconds for extras."""
    mark = len(process.transcript)
    if isinstance(batch, str):
        process.send_raw(batch)
    else:
        process.send(batch)
    if expect:
        process.pump(lambda _: len(process.agent_lines(mark)) >= expect, 2.0)
    process.pump(None, settle if expect else QUIET)
    return [line.value for line in process.agent_lines(mark)]


@check("ACP-BATCH-201")
def batch_201(probe: Probe) -> str:
    lines = batch_reply(probe.abuse, "[]")
    if len(lines) != 1 or not isinstance(lines[0], dict):
        raise fail(f"[] was answered with {json.dumps(lines)[:200]}")
    reply = lines[0]
    if reply.get("id", "absent") is not None or (reply.get("error") or {}).get("code") != -32600:
        raise fail(f"[] was answered with {json.dumps(reply)[:200]}")
    return "one -32600 object, id null"


@check("ACP-BATCH-202")
def batch_202(probe: Probe) -> str:
    notes = [{"jsonrpc": "2.0", "method": "_tck/notice", "params": {"n": n}} for n in range(2)]
    got = silent_after(probe.main, lambda: probe.main.send(notes))
    if got:
        raise fail(f"a notification-only batch was answered: {json.dumps(got)[:200]}")
    ident = probe.main.new_id()
    lines = batch_reply(
        probe.main, [notes[0], {"jsonrpc": "2.0", "id": ident, "method": "_tck/echo", "params": {}}]
    )
    members = [
        m for line in lines for m in (line if isinstance(line, list) else [line]) if is_response(m)
    ]
    if [m.get("id") for m in members] != [ident]:
        raise fail(
            f"a batch of a notification and a request was answered {json.dumps(lines)[:200]}"
        )
    return "no reply to notifications, in batches too"


@check("ACP-BATCH-203")
def batch_203(probe: Probe) -> str:
    ident = probe.abuse.new_id()
    lines = batch_reply(
        probe.abuse, [1, {"jsonrpc": "2.0", "id": ident, "method": "_tck/echo", "params": {}}]
    )
    if len(lines) != 1 or not isinstance(lines[0], list):
        raise fail(f"answered {json.dumps(lines)[:200]}")
    invalid = [
        m
        for m in lines[0]
        if isinstance(m, dict)
        and m.get("id") is None
        and (m.get("error") or {}).get("code") == -32600
    ]
    served = [m for m in lines[0] if isinstance(m, dict) and m.get("id") == ident]
    if not invalid or not served:
        raise fail(f"answered {json.dumps(lines[0])[:200]}")
    return "per-member -32600, sibling served"


def two_request_batch(probe: Probe) -> tuple[list[Any], list[Any]]:
    """A batch of two requests (an integer and a string id): the ids, the reply lines."""
    memo = probe.memo.get("batch")
    if memo is None:
        ids = [probe.main.new_id(), "tck-batch-b"]
        batch = [
            {"jsonrpc": "2.0", "id": ident, "method": "_tck/echo", "params": {"n": n}}
            for n, ident in enumerate(ids)
        ]
        memo = probe.memo["batch"] = (ids, batch_reply(probe.main, batch))
    result: tuple[list[Any], list[Any]] = memo
    return result


@check("ACP-BATCH-204")
def batch_204(probe: Probe) -> str:
    _, lines = two_request_batch(probe)
    if len(lines) != 1 or not isinstance(lines[0], list) or len(lines[0]) != 2:
        raise fail(
            f"a batch of two requests was answered with {len(lines)} line(s): "
            f"{json.dumps(lines)[:200]}"
        )
    return "one array of two responses"


@check("ACP-BATCH-205")
def batch_205(probe: Probe) -> str:
    ids, lines = two_request_batch(probe)
    got = sorted(
        json.dumps(m.get("id"))
        for line in lines
        for m in (line if isinstance(line, list) else [line])
        if is_response(m)
    )
    if got != sorted(json.dumps(i) for i in ids):
        raise fail(f"response ids {got} for request ids {ids}")
    return "every response matched by id"


@check("ACP-BATCH-206")
def batch_206(probe: Probe) -> str:
    ids, lines = two_request_batch(probe)
    order = [
        m.get("id")
        for line in lines
        for m in (line if isinstance(line, list) else [line])
        if is_response(m)
    ]
    return f"sent {ids}, answered in the order {order}"


def agent_batches(probe: Probe) -> list[list[Any]]:
    """Arrays the agent sent that hold messages of its own (not only responses)."""
    return [
        line.value
        for line in agent_lines(probe)
        if isinstance(line.value, list)
        and any(isinstance(m, dict) and "method" in m for m in line.value)
    ]


@check("ACP-BATCH-207")
def batch_207(probe: Probe) -> str:
    return f"agent-initiated batches: {len(agent_batches(probe))}"


@check("ACP-BATCH-208")
def batch_208(probe: Probe) -> str:
    lifecycle = {"initialize", "auth/login", "session/new", "session/resume", "session/prompt"}
    batched = sorted(
        {
            m["method"]
            for batch in agent_batches(probe)
            for m in batch
            if isinstance(m, dict) and m.get("method") in lifecycle
        }
    )
    return f"lifecycle methods the agent batched: {batched or 'none'}"


@check("ACP-INFO-BATCH-201")
def info_batch_201(probe: Probe) -> str:
    lines = batch_reply(probe.abuse, '[{"jsonrpc":"2.0","id":1,"method":"_tck/echo"')
    return f"answered {json.dumps(lines)[:200]}"


@check("ACP-INFO-BATCH-202")
def info_batch_202(probe: Probe) -> str:
    ident = probe.abuse.new_id()
    batch = [
        {"jsonrpc": "2.0", "id": ident, "method": "_tck/echo", "params": {}},
        {"jsonrpc": "2.0", "id": 424242, "result": {}},
    ]
    return f"answered {json.dumps(batch_reply(probe.abuse, batch))[:200]}"


# ---- resume, list, close, delete, directories, MCP ---------------------------------


@check("ACP-RESUME-201")
def resume_201(probe: Probe) -> str:
    response, _, _ = probe.plain_resume
    valid(probe.main, response, "session/resume")
    return "resumed"


@check("ACP-RESUME-202")
def resume_202(probe: Probe) -> str:
    response, before, after = probe.replay
    result_of(response, "session/resume (replayFrom start)")
    late = [u for m in after if (u := update_of(m, probe.session_id)) is not None]
    if late:
        raise fail(
            f"{len(late)} update(s) for the session after the resume response: "
            f"{[u.get('sessionUpdate') for u in late]}"
        )
    replayed = [u for m in before if (u := update_of(m, probe.session_id)) is not None]
    if not replayed:
        raise vacuous("nothing replayed (no retained history)")
    return f"{len(replayed)} update(s) replayed before the response"


@check("ACP-RESUME-203")
def resume_203(probe: Probe) -> str:
    response, before, _ = probe.plain_resume
    result_of(response, "session/resume")
    history = [
        u.get("sessionUpdate")
        for m in before
        if (u := update_of(m, probe.session_id)) and u.get("sessionUpdate") in message_kinds()
    ]
    if history:
        raise fail(f"conversation history replayed without replayFrom: {history}")
    return "no history replayed"


@check("ACP-RESUME-204")
def resume_204(probe: Probe) -> str:
    _, before, _ = probe.replay
    users = [
        u
        for m in before
        if (u := update_of(m, probe.session_id))
        and u.get("sessionUpdate") in ("user_message", "user_message_chunk")
    ]
    if not users:
        raise vacuous("no user message replayed")
    receipts = {t.message_id for t in probe.turns if t.session_id == probe.session_id}
    if not any(u.get("messageId") in receipts for u in users):
        raise fail(
            f"replayed user messages {[u.get('messageId') for u in users]}, "
            f"receipts {sorted(map(str, receipts))}"
        )
    return "the receipt's messageId replays"


@check("ACP-RESUME-205")
def resume_205(probe: Probe) -> str:
    _, before, _ = probe.replay
    seen: set[tuple[Any, Any]] = set()
    chunks = 0
    for message in before:
        update = update_of(message, probe.session_id) or {}
        kind = update.get("sessionUpdate")
        whole = whole_of(kind) if isinstance(kind, str) else None
        if whole is not None:
            chunks += 1
            if (whole, update.get("messageId")) not in seen:
                raise fail(f"a replayed {kind} for {update.get('messageId')!r} before its {whole}")
        elif kind in message_kinds():
            seen.add((kind, update.get("messageId")))
    if not chunks:
        raise vacuous("the replay has no chunks")
    return f"{chunks} chunk(s), each after its whole message"


def listed(probe: Probe, **params: Any) -> list[Any]:
    result = valid(probe.main, probe.main.request("session/list", params), "session/list")
    sessions = result.get("sessions")
    if not isinstance(sessions, list):
        raise fail(f"sessions is {sessions!r}")
    return sessions


@check("ACP-LIST-201")
def list_201(probe: Probe) -> str:
    return f"{len(listed(probe))} session(s)"


@check("ACP-LIST-202")
def list_202(probe: Probe) -> str:
    sessions = listed(probe, cwd="/nonexistent/acp-tck-nobody")
    if sessions:
        raise fail(f"{len(sessions)} session(s) for an unused cwd")
    return "sessions: []"


@check("ACP-LIST-203")
def list_203(probe: Probe) -> str:
    probe.session_id  # noqa: B018
    sessions = listed(probe, cwd=probe.cwd)
    other = [s for s in sessions if s.get("cwd") != probe.cwd]
    if other:
        raise fail(f"other cwds listed: {[s.get('cwd') for s in other]}")
    return f"{len(sessions)} session(s), all in the cwd"


@check("ACP-LIST-204")
def list_204(probe: Probe) -> str:
    sessions = listed(probe)
    bad = [s.get("cwd") for s in sessions if not is_absolute(s.get("cwd"))]
    if bad:
        raise fail(f"relative cwds: {bad}")
    return "all absolute"


@check("ACP-CLOSE-201")
def close_201(probe: Probe) -> str:
    session_id = probe.new_session_id()
    result = valid(
        probe.main, probe.main.request("session/close", {"sessionId": session_id}), "session/close"
    )
    if {k for k in result if k != "_meta"}:
        raise fail(f"not an empty object: {result}")
    return "{}"


@check("ACP-DELETE-201")
def delete_201(probe: Probe) -> str:
    session_id = probe.new_session_id()
    result = valid(
        probe.main,
        probe.main.request("session/delete", {"sessionId": session_id}),
        "session/delete",
    )
    if {k for k in result if k != "_meta"}:
        raise fail(f"not an empty object: {result}")
    return "{}"


@check("ACP-DELETE-202")
def delete_202(probe: Probe) -> str:
    session_id = probe.new_session_id()
    if not any(s.get("sessionId") == session_id for s in listed(probe)):
        raise vacuous("the new session is not in session/list")
    result_of(probe.main.request("session/delete", {"sessionId": session_id}), "session/delete")
    if any(s.get("sessionId") == session_id for s in listed(probe)):
        raise fail("still listed after session/delete")
    return "gone from session/list"


@check("ACP-DELETE-203")
def delete_203(probe: Probe) -> str:
    needs_session(probe)
    for _ in range(2):
        result_of(
            probe.main.request("session/delete", {"sessionId": "sess-never-created"}),
            "session/delete of an unknown id",
        )
    return "succeeds, twice"


@check("ACP-ADDDIRS-201")
def adddirs_201(probe: Probe) -> str:
    valid(
        probe.main,
        probe.new_session(additionalDirectories=[probe.cwd + "/extra"]),
        "session/new with additionalDirectories",
    )
    return "accepted"


@check("ACP-ADDDIRS-202")
def adddirs_202(probe: Probe) -> str:
    response, _, _ = probe.resume(probe.session_id, additionalDirectories=[probe.cwd])
    valid(probe.main, response, "session/resume with additionalDirectories")
    return "accepted"


def mcp_probe(probe: Probe, kind: str, server: Message) -> str:
    if not probe.advertises(f"capabilities.session.mcp.{kind}"):
        raise skipped(f"capabilities.session.mcp.{kind} is not advertised")
    problem = wire.invalid(server, "McpServer")
    assert problem is None, problem  # the probe's own request must be valid
    response = probe.new_session(mcpServers=[server])
    return f"answered {json.dumps(response.get('error') or 'a session')[:160]}"


@check("ACP-MCP-201")
def mcp_201(probe: Probe) -> str:
    return mcp_probe(
        probe,
        "stdio",
        {"type": "stdio", "name": "tck", "command": "/bin/true", "args": [], "env": []},
    )


@check("ACP-MCP-202")
def mcp_202(probe: Probe) -> str:
    return mcp_probe(
        probe,
        "http",
        {"type": "http", "name": "tck", "url": "http://127.0.0.1:9/mcp", "headers": []},
    )


# ---- config options ----------------------------------------------------------------


def config_options(probe: Probe) -> list[Any]:
    needs_session(probe)
    options = (probe.session.get("result") or {}).get("configOptions")
    if not options:
        raise skipped("no configOptions advertised (inferred:configOptions)")
    assert isinstance(options, list)
    return options


def option_problem(option: Any) -> str | None:
    problem = wire.invalid(option, "SessionConfigOption")
    if problem:
        return problem
    if option.get("type") == "select":
        options = option.get("options") or []
        flat = [o for o in options if isinstance(o, dict) and "value" in o]
        grouped = [o for o in options if isinstance(o, dict) and "groupId" in o]
        if flat and grouped:
            return f"{option.get('configId')}: flat and grouped options mixed"
        values = [o.get("value") for o in flat] + [
            x.get("value") for g in grouped for x in g.get("options") or []
        ]
        if option.get("currentValue") not in values:
            current = option.get("currentValue")
            return f"{option.get('configId')}: currentValue {current!r} not among {values}"
    return None


@check("ACP-CONFIG-201")
def config_201(probe: Probe) -> str:
    for option in config_options(probe):
        problem = wire.invalid(option, "SessionConfigOption")
        if problem:
            raise fail(problem)
    return f"{len(config_options(probe))} option(s) well formed"


@check("ACP-CONFIG-202")
def config_202(probe: Probe) -> str:
    options = config_options(probe)
    known = {o.get("configId") for o in options}
    select = next((o for o in options if o.get("type") == "select"), None)
    if select is None:
        raise vacuous("no select option to set")
    values = [o.get("value") for o in select.get("options") or [] if "value" in o]
    value = next((v for v in values if v != select.get("currentValue")), select.get("currentValue"))
    params = {
        "sessionId": probe.session_id,
        "configId": select["configId"],
        "type": "id",
        "value": value,
    }
    assert wire.invalid(params, "SetSessionConfigOptionRequest") is None
    result = valid(
        probe.main,
        probe.main.request("session/set_config_option", params),
        "session/set_config_option",
    )
    answered = {o.get("configId") for o in result.get("configOptions") or []}
    if not known <= answered:
        raise fail(f"configIds missing from the answer: {sorted(map(str, known - answered))}")
    probe.memo["set_config"] = result
    return "the complete list"


@check("ACP-CONFIG-203")
def config_203(probe: Probe) -> str:
    config_options(probe)
    response, _, _ = probe.plain_resume
    options = result_of(response, "session/resume").get("configOptions")
    if options is None:
        raise vacuous("session/resume carries no configOptions")
    for option in options:
        problem = wire.invalid(option, "SessionConfigOption")
        if problem:
            raise fail(problem)
    return f"{len(options)} option(s) well formed"


@check("ACP-CONFIG-204")
def config_204(probe: Probe) -> str:
    seen = list(config_options(probe))
    seen += (probe.memo.get("set_config") or {}).get("configOptions") or []
    for option in seen:
        problem = option_problem(option)
        if problem:
            raise fail(problem)
    return "every select's currentValue is one of its values"


@check("ACP-CONFIG-206")
def config_206(probe: Probe) -> str:
    known = {o.get("configId") for o in config_options(probe)}
    updates = [u for _, u in of_kind(probe, "config_option_update")]
    if not updates:
        raise vacuous("no config_option_update observed")
    for update in updates:
        ids = {o.get("configId") for o in update.get("configOptions") or []}
        if not known <= ids:
            raise fail(f"config_option_update without {sorted(map(str, known - ids))}")
    return f"{len(updates)} complete update(s)"


# ---- auth ----------------------------------------------------------------------------


@check("ACP-AUTH-201")
def auth_201(probe: Probe) -> str:
    ids = [m.get("methodId") for m in probe.auth_methods if isinstance(m, dict)]
    if len(ids) != len(set(map(json.dumps, ids))):
        raise fail(f"duplicate methodIds: {ids}")
    return f"{len(ids)} unique methodId(s)"


@check("ACP-AUTH-202")
def auth_202(probe: Probe) -> str:
    process, response = probe.fresh(capabilities={})
    process.close_stdin(1.0)
    methods = (response.get("result") or {}).get("authMethods") or []
    terminal = [m for m in methods if isinstance(m, dict) and m.get("type") == "terminal"]
    if terminal:
        raise fail(
            f"terminal auth offered to a client without capabilities.auth.terminal: {terminal}"
        )
    return f"{len(methods)} method(s) offered without the opt-in, none terminal"


def needs_auth(probe: Probe) -> list[Any]:
    if not probe.auth_methods:
        raise skipped("no authMethods advertised (inferred:authMethods)")
    return probe.auth_methods


@check("ACP-AUTH-203")
def auth_203(probe: Probe) -> str:
    needs_auth(probe)
    valid(probe.main, probe.main.request("auth/logout", {}), "auth/logout")
    return "logged out"


@check("ACP-AUTH-204")
def auth_204(probe: Probe) -> str:
    method = next((m for m in needs_auth(probe) if m.get("type") != "terminal"), None)
    if method is None:
        raise vacuous("no non-terminal method advertised")
    response = probe.main.request("auth/login", {"methodId": method.get("methodId")})
    if (response.get("error") or {}).get("code") == -32601:
        raise fail("auth/login answered -32601")
    if probe.advertises("capabilities.session"):
        session = probe.new_session()
        if (session.get("error") or {}).get("code") == -32000:
            raise fail("session/new after auth/login answered -32000")
    return "login served"


@check("ACP-AUTH-205")
def auth_205(probe: Probe) -> str:
    needs_session(probe)
    if probe.auth_methods:
        raise vacuous("the agent advertises authMethods")
    if (probe.session.get("error") or {}).get("code") == -32000:
        raise fail("session/new answered -32000 with no authMethods")
    return "session/new served without auth"


@check("ACP-AUTH-206")
def auth_206(probe: Probe) -> str:
    problems = open_enum_problems(
        [("authMethods.type", m.get("type")) for m in probe.auth_methods if isinstance(m, dict)],
        "AuthMethod",
    )
    if problems:
        raise fail(", ".join(problems))
    return f"types {[m.get('type') for m in probe.auth_methods]}"


@check("ACP-AUTH-207")
def auth_207(probe: Probe) -> str:
    terminal = [
        m for m in probe.auth_methods if isinstance(m, dict) and m.get("type") == "terminal"
    ]
    if not terminal:
        raise vacuous("no terminal method advertised")
    for method in terminal:
        args, env = method.get("args"), method.get("env")
        if args is not None and not (
            isinstance(args, list) and all(isinstance(a, str) for a in args)
        ):
            raise fail(f"args {args!r}")
        if env is not None:
            if not isinstance(env, list) or not all(
                isinstance(e, dict)
                and isinstance(e.get("name"), str)
                and isinstance(e.get("value"), str)
                for e in env
            ):
                raise fail(f"env {env!r}")
            names = [e["name"] for e in env]
            if len(names) != len(set(names)):
                raise fail(f"duplicate env names {names}")
    return f"{len(terminal)} terminal method(s) well formed"


# ---- session update payloads ---------------------------------------------------------


def observed(probe: Probe, *kinds: str) -> list[tuple[str, Message]]:
    needs_session(probe)
    probe.turn  # noqa: B018
    found = of_kind(probe, *kinds)
    if not found:
        raise vacuous(f"no {'/'.join(kinds)} observed")
    return found


@check("ACP-PATCH-201")
def patch_201(probe: Probe) -> str:
    found = observed(probe, *message_kinds())
    bad = [
        u.get("sessionUpdate")
        for _, u in found
        if not isinstance(u.get("messageId"), str) or not u["messageId"]
    ]
    if bad:
        raise fail(f"without messageId: {bad}")
    return f"{len(found)} message update(s) with ids"


@check("ACP-PATCH-203")
def patch_203(probe: Probe) -> str:
    first, second = probe.turn, probe.second_turn
    if first.message_id == second.message_id:
        raise fail(f"both prompts got messageId {first.message_id!r}")
    return "distinct messageIds"


@check("ACP-PATCH-204")
def patch_204(probe: Probe) -> str:
    found = observed(probe, "tool_call_update", "tool_call_content_chunk")
    for _, update in found:
        if not update.get("toolCallId"):
            raise fail(f"{update.get('sessionUpdate')} without toolCallId")
        if update["sessionUpdate"] == "tool_call_content_chunk" and update.get("content") is None:
            raise fail("tool_call_content_chunk without content")
    return f"{len(found)} tool call update(s)"


@check("ACP-PATCH-205")
def patch_205(probe: Probe) -> str:
    found = observed(probe, "plan_update")
    bad = [
        u for _, u in found if not isinstance(u.get("plan"), dict) or not u["plan"].get("planId")
    ]
    if bad:
        raise fail(f"plan without planId: {json.dumps(bad[0])[:160]}")
    return f"{len(found)} plan update(s)"


@check("ACP-PATCH-206")
def patch_206(probe: Probe) -> str:
    found = observed(probe, "terminal_update")
    cwds: dict[tuple[str, Any], Any] = {}
    for session_id, update in found:
        cwd = update.get("cwd")
        if cwd is None:
            continue
        if not is_absolute(cwd):
            raise fail(f"terminal cwd {cwd!r} is not absolute")
        key = (session_id, update.get("terminalId"))
        if cwds.setdefault(key, cwd) != cwd:
            raise fail(f"terminal {key[1]!r} changed cwd {cwds[key]!r} -> {cwd!r}")
    return f"{len(found)} terminal update(s)"


def standalone_base64(data: Any) -> bool:
    if not isinstance(data, str):
        return False
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(data) % 4 == 0


@check("ACP-PATCH-207")
def patch_207(probe: Probe) -> str:
    found = observed(probe, "terminal_output_chunk", "terminal_update")
    datas = [u.get("data") for _, u in found if u["sessionUpdate"] == "terminal_output_chunk"]
    datas += [
        u["output"].get("data")
        for _, u in found
        if isinstance(u.get("output"), dict) and "data" in u["output"]
    ]
    if not datas:
        raise vacuous("no terminal output observed")
    bad = [d for d in datas if not standalone_base64(d)]
    if bad:
        raise fail(f"not standalone base64: {bad[:3]}")
    return f"{len(datas)} output chunk(s)"


@check("ACP-PATCH-208")
def patch_208(probe: Probe) -> str:
    found = observed(probe, "tool_call_update")
    first: dict[tuple[str, Any], Message] = {}
    for session_id, update in found:
        key = (session_id, update.get("toolCallId"))
        if key not in first:
            first[key] = update
            if not update.get("title"):
                raise fail(f"the first update of {key[1]!r} has no title")
        elif update.get("name") is not None and first[key].get("name") not in (
            None,
            update["name"],
        ):
            raise fail(f"tool call {key[1]!r} renamed {first[key]['name']!r} -> {update['name']!r}")
    return f"{len(first)} tool call(s)"


@check("ACP-PATCH-209")
def patch_209(probe: Probe) -> str:
    needs_session(probe)
    turn = probe.turn
    asked = [
        i
        for i, m in enumerate(turn.messages)
        if is_request(m) and m.get("method") == "session/request_permission"
    ]
    if not asked:
        raise vacuous("no permission request during the turn")
    sequence = [u.get("state") for u in states(turn)]
    if "requires_action" not in sequence:
        raise fail(f"no requires_action while the permission request waited (states: {sequence})")
    if "running" not in sequence[sequence.index("requires_action") :]:
        raise fail(f"not running again after the permission answer (states: {sequence})")
    return f"states {sequence}"


@check("ACP-ENUM-201")
def enum_201(probe: Probe) -> str:
    needs_session(probe)
    probe.turn  # noqa: B018
    tools = [u for _, u in of_kind(probe, "tool_call_update")]
    entries = [
        e
        for _, u in of_kind(probe, "plan_update")
        for e in (u.get("plan") or {}).get("entries") or []
        if isinstance(e, dict)
    ]
    problems = (
        open_enum_problems([("kind", u.get("kind")) for u in tools], "ToolKind")
        + open_enum_problems([("status", u.get("status")) for u in tools], "ToolCallStatus")
        + open_enum_problems(
            [("priority", e.get("priority")) for e in entries], "PlanEntryPriority"
        )
        + open_enum_problems([("status", e.get("status")) for e in entries], "PlanEntryStatus")
    )
    if problems:
        raise fail(", ".join(problems))
    if not tools and not entries:
        raise vacuous("no tool call or plan observed")
    return f"{len(tools)} tool call update(s), {len(entries)} plan entr(ies)"


@check("ACP-ENUM-202")
def enum_202(probe: Probe) -> str:
    needs_session(probe)
    probe.turn  # noqa: B018
    found = all_updates(probe)
    problems = open_enum_problems(
        [("sessionUpdate", u.get("sessionUpdate")) for _, u in found], "SessionUpdate"
    )
    problems += open_enum_problems(
        [("state", u.get("state")) for _, u in found if u.get("sessionUpdate") == "state_update"],
        "StateUpdate",
    )
    contents = [
        c
        for _, u in found
        if u.get("sessionUpdate") in ("tool_call_update", "tool_call_content_chunk")
        for c in (u["content"] if isinstance(u.get("content"), list) else [u.get("content")])
        if isinstance(c, dict)
    ]
    problems += open_enum_problems(
        [("content.type", c.get("type")) for c in contents], "ToolCallContent"
    )
    if problems:
        raise fail(", ".join(problems))
    return f"{len(found)} update(s), {len(contents)} tool call content(s)"


@check("ACP-ENUM-203")
def enum_203(probe: Probe) -> str:
    needs_session(probe)
    session_id = probe.new_session_id()
    probe.main.client.permission_outcome = {"outcome": "_tck_custom"}
    try:
        turn = probe.prompt([{"type": "text", "text": "Custom outcome"}], session_id)
    finally:
        probe.main.client.permission_outcome = None
    if (turn.response or {}).get("error", {}).get("code") == -32602:
        raise fail("the prompt answered -32602")
    if not any(m.get("method") == "session/request_permission" for m in turn.requests):
        raise vacuous("no permission request to answer")
    if turn.idle is None:
        probe.main.notify("session/cancel", {"sessionId": session_id})
        probe.main.pump(lambda m: is_idle(m, session_id), 2.0)
    if not probe.ping():
        raise fail("the agent stopped answering after a _-prefixed outcome")
    ending = f"ended {turn.idle.get('stopReason')}" if turn.idle else "stayed open"
    return f"survived; the turn {ending}"


# ---- extensibility, errors, shutdown, diagnostics ------------------------------------


@check("ACP-EXT-001")
def ext_001(probe: Probe) -> str:
    response = probe.main.request("_tck/custom", {"x": 1})
    return (
        f"answered {'a result' if 'result' in response else response.get('error', {}).get('code')}"
    )


@check("ACP-EXT-201")
def ext_201(probe: Probe) -> str:
    got = silent_after(probe.main, lambda: probe.main.notify("_tck/custom_notice", {"x": 1}))
    if [m for m in got if is_response(m)]:
        raise fail(f"answered: {json.dumps(got)[:160]}")
    return "ignored"


@check("ACP-EXT-202")
def ext_202(probe: Probe) -> str:
    capabilities = probe.init_result.get("capabilities") or {}
    declared = set(wire.defs()["AgentCapabilities"]["properties"])
    unknown = sorted(k for k in capabilities if k not in declared)
    if unknown:
        raise fail(f"unknown capability keys (not under _meta): {unknown}")
    return "no unknown root key"


@check("ACP-EXT-203")
def ext_203(probe: Probe) -> str:
    got = silent_after(probe.main, lambda: probe.main.notify("$/tck_unknown", {}))
    return f"{len(got)} message(s) in reply: {json.dumps(got)[:120]}"


@check("ACP-META-001")
def meta_001(probe: Probe) -> str:
    needs_session(probe)
    return ended(
        probe.prompt([{"type": "text", "text": "With _meta"}], meta={"tck": {"run": 1}}),
        "prompt with _meta",
    )


@check("ACP-META-201")
def meta_201(probe: Probe) -> str:
    bad = [
        json.dumps(v)[:60]
        for _, m in probe.everything()
        for k, v in walk(m)
        if k == "_meta" and not (v is None or isinstance(v, dict))
    ]
    if bad:
        raise fail(f"_meta values that are no object: {bad[:3]}")
    return "every _meta an object or null"


@check("ACP-ERROR-001")
def error_001(probe: Probe) -> str:
    errors = [
        m["error"]
        for _, m in probe.everything()
        if is_response(m) and isinstance(m.get("error"), dict)
    ]
    for error in errors:
        message = error.get("message")
        if not isinstance(message, str) or not message or "\n" in message:
            raise fail(f"error message {message!r}")
    return f"{len(errors)} error(s) well formed"


@check("ACP-SHUTDOWN-001")
def shutdown_001(probe: Probe) -> str:
    code = probe.main.close_stdin(3.0)
    if code is None:
        raise fail("still running 3s after stdin closed (killed)")
    return f"exited with {code}"


@check("ACP-STDERR-001")
def stderr_001(probe: Probe) -> str:
    return f"{sum(len(p.stderr) for p in probe.processes)} stderr byte(s)"


@check("ACP-INFO-PARSE-001")
def info_parse_001(probe: Probe) -> str:
    return f"answered {json.dumps(batch_reply(probe.abuse, 'this is not json'))[:200]}"


@check("ACP-INFO-INVALIDREQ-001")
def info_invalidreq_001(probe: Probe) -> str:
    lines = batch_reply(probe.abuse, json.dumps({"hello": 1}))
    return f"answered {json.dumps(lines)[:200]}"


def run_all(probe: Probe, ids: Iterable[str] | None = None) -> dict[str, Outcome]:
    """Every id (or those of ``ids``) against the probe's target, in the registry's order
    (the whole-run ones last, ``ACP-SHUTDOWN-001`` at the very end); the processes are
    closed after."""
    chosen = set(REGISTRY if ids is None else ids)
    order = [i for i in REGISTRY if i not in LATE and i in chosen] + [
        i for i in LATE if i in chosen
    ]
    try:
        return {requirement_id: judge(requirement_id, probe) for requirement_id in order}
    finally:
        probe.close()
