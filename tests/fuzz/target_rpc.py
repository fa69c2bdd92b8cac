"""Fuzz target ``acp-rpc``: the sans-I/O JSON-RPC endpoint under an ACP connection.

An example is a mutated stream of what a peer may send to one side: requests for
every method of the generated method table (on either side, so some are for the
wrong one), responses to our own requests and to ids never sent, ``$/cancel_request``,
extension methods and ``session/update`` notifications built from the round-trip
corpus. It is fed to an :class:`~agentproto.acp._rpc.endpoint.Endpoint` in chunks; once the input
is in, every request that arrived is answered (alternately with a result and an
error).

Properties: only :class:`agentproto.AgentProtoError` escapes; every byte the
endpoint writes is a JSON-RPC message agentproto itself reads back; a request
delivered is answered at most once and nothing stays in flight after answering;
the chunking does not change what is delivered or written.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from agentproto import AgentProtoError
from agentproto.acp import MessageReader, Response
from agentproto.acp._protocol.methods import method_table
from agentproto.acp._rpc.endpoint import (
    CancelRequested,
    Endpoint,
    NotificationReceived,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
)
from tests.fuzz import mutate as m
from tests.fuzz.properties import PropertyFailure, fingerprint

Problems = list[PropertyFailure]

_SIDES = ("agent", "client")


def _request(ident: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def _message(rng: random.Random, seeds: m.Seeds, methods: list[str], sent: int) -> Any:
    """One message a peer might send: a request, a response, a cancel or a notification."""
    update = copy.deepcopy(rng.choice(seeds.updates)[1])
    pick = rng.randrange(7)
    if pick <= 1:  # a request for a schema method, params borrowed from an update
        params = update if rng.random() < 0.5 else {"sessionId": "s1"}
        return _request(rng.choice([1, 2, "a", 7, 2**40]), rng.choice(methods), params)
    if pick == 2:  # a response to one of ours, or to an id never sent
        ident = rng.randrange(sent + 2)
        if rng.random() < 0.5:
            return {"jsonrpc": "2.0", "id": ident, "result": update}
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32000, "message": "no"}}
    if pick == 3:
        return {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}
    if pick == 4:  # extension methods pass through untyped
        return _request(rng.randrange(5), "_x/" + rng.choice(["a", "b"]), update)
    return m.notification(update, rng.choice(["s1", "s2"]))


def gen_acp_rpc(rng: random.Random, seeds: m.Seeds) -> dict[str, Any]:
    """A mutated stream of peer messages for one side of a connection."""
    side = rng.choice(_SIDES)
    table = method_table(2)
    methods = [*table.requests, *table.notifications]
    sent = rng.randrange(4)  # requests of ours the peer may answer
    messages: list[Any] = [_message(rng, seeds, methods, sent) for _ in range(rng.randint(1, 8))]
    for _ in range(rng.choice([0, 1, 2, 3])):
        at = rng.randrange(len(messages))
        messages[at] = (
            m.mutate_rpc(rng, messages[at])
            if rng.random() < 0.5
            else m.mutate_event(rng, messages[at])
        )
    data = m.jsonl_lines(messages)
    if rng.random() < 0.3:
        data = m.mutate_bytes(rng, data)
    return {
        "side": side,
        "sent": sent,
        "data": data,
        "points": m.split_points(rng, len(data)),
        "eof": rng.random() < 0.7,
        "size": len(data),
    }


def _endpoint(example: dict[str, Any]) -> Endpoint:
    endpoint = Endpoint(example["side"])
    for _ in range(example["sent"]):  # extension requests: typed by no table, any side
        endpoint.send_request("_fuzz/ping", {})
    endpoint.data_to_send()
    return endpoint


def _record(events: list[Any], log: list[Any], requests: list[Any]) -> None:
    """Record what was delivered; keep the requests to answer once the input is in."""
    for event in events:
        if isinstance(event, RequestReceived):
            log.append(("request", event.id, event.method))
            requests.append(event)
        elif isinstance(event, CancelRequested):
            log.append(("cancel", event.id))
        elif isinstance(event, NotificationReceived):
            log.append(("notification", event.method))
        elif isinstance(event, ResponseReceived | RequestFailed):
            log.append(("response", event.id))
        else:
            log.append(("diagnostic", getattr(event, "code", type(event).__name__)))


def _answer(endpoint: Endpoint, requests: list[Any], problems: Problems) -> None:
    """Answer every request delivered, alternately with a result and an error.

    Answers wait for the whole input: a peer may reuse an id once its request is
    answered, so answering between chunks would make the chunking matter.
    """
    for number, request in enumerate(requests):
        if request.id not in endpoint.in_flight:
            problems.append(PropertyFailure("contract", "a delivered request is not in flight"))
        elif number % 2:
            endpoint.respond_error(request.id, -32603, "no")
        else:
            endpoint.respond(request.id, None)
    if endpoint.in_flight:
        problems.append(PropertyFailure("contract", "requests left in flight after answering"))


def _feed(example: dict[str, Any], pieces: list[bytes], problems: Problems) -> tuple[Any, bytes]:
    endpoint = _endpoint(example)
    log: list[Any] = []
    requests: list[Any] = []
    try:
        for piece in pieces:
            _record(endpoint.feed(piece), log, requests)
    except AgentProtoError as exc:
        log.append(("error", type(exc).__name__))
        return log, endpoint.data_to_send()
    _answer(endpoint, requests, problems)
    if example["eof"]:
        try:
            _record(endpoint.feed_eof(), log, requests)
        except AgentProtoError as exc:
            log.append(("error", type(exc).__name__))
    return log, endpoint.data_to_send()


def _check_written(written: bytes, problems: Problems) -> None:
    """What the endpoint wrote must read back as JSON-RPC messages, all of them responses."""
    reader = MessageReader()
    try:
        messages = reader.feed(written) + reader.close()
    except AgentProtoError as exc:
        problems.append(PropertyFailure("output", f"the endpoint wrote a bad line: {exc}"))
        return
    for message in messages:
        if not isinstance(message, Response):
            problems.append(PropertyFailure("output", f"wrote a {type(message).__name__}"))


def run_acp_rpc(example: dict[str, Any], problems: Problems) -> None:
    """``Endpoint.feed`` in chunks (every request answered), then ``feed_eof``; again whole."""
    data: bytes = example["data"]
    log, written = _feed(example, list(m.chunks(data, example["points"])), problems)
    _check_written(written, problems)
    whole_log, whole_written = _feed(example, [data], problems)
    if fingerprint(log) != fingerprint(whole_log) or written != whole_written:
        problems.append(
            PropertyFailure("chunking", "a chunked feed delivered or wrote something else")
        )
