"""Seeds and mutators: JSON values, event sequences and bytes.

Theory of operation. A seed is a real document: an AG-UI conformance stream (its
``stream`` list and maybe ``input``), an AG-UI fixture (one definition's valid or
invalid example), or an ACP round-trip update wrapped as a ``session/update``
notification. Mutations happen at three levels, each a pure function of a
``random.Random``:

1. **values** (:func:`mutate_value`): replace, delete, duplicate or rename a member,
   put in a hostile value (deep nesting around 512 levels, integers beyond 64 bits,
   NaN-ish tokens, huge strings, unknown types/roles/kinds), or grow a JSON Patch
   with ops such as ``copy /b -> /b/-`` repeated, or indexes of thousands of digits;
2. **sequences** (:func:`mutate_sequence`): drop, duplicate, reorder, truncate, or
   splice events from another stream;
3. **bytes** (:func:`mutate_bytes`, :func:`split_points`): cut, flip, insert CR, LF,
   a BOM, invalid UTF-8, an SSE comment at the end without a newline, and chunk
   boundaries anywhere.

Some hostile values cannot be written by a JSON encoder (``NaN``, a 5,000-digit
integer, 100,000 nested arrays): they are :class:`Raw` fragments, written verbatim
by :func:`dumps` and turned into the equivalent Python value by :func:`to_python`
for the targets that take decoded JSON.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


# ---- values that a JSON encoder cannot write ---------------------------------------------


@dataclass(frozen=True)
class Raw:
    """A JSON text fragment written verbatim, with a builder for its Python value."""

    text: str
    build: Callable[[], Any]

    def __repr__(self) -> str:
        shown = self.text if len(self.text) <= 40 else f"{self.text[:20]}…({len(self.text)})"
        return f"Raw({shown!r})"


@dataclass(frozen=True)
class DupKeys:
    """An object written with repeated keys (decoded: the last value of each key wins)."""

    pairs: tuple[tuple[str, Any], ...]


def _nested(depth: int, kind: str) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value] if kind == "[" else {"a": value}
    return value


def deep(depth: int, kind: str = "[") -> Raw:
    """``depth`` nested arrays (``[``) or objects (``{``) around ``0``."""
    opener, closer = ("[", "]") if kind == "[" else ('{"a":', "}")
    text = opener * depth + "0" + closer * depth
    return Raw(text, lambda: _nested(depth, kind))


def big_int(digits: int, sign: str = "") -> Raw:
    """An integer of ``digits`` digits (``1`` then zeros)."""
    text = sign + "1" + "0" * (digits - 1)
    negative = sign == "-"
    return Raw(text, lambda: (-1 if negative else 1) * 10 ** (digits - 1))


NAN_TOKENS: tuple[Raw, ...] = (
    Raw("NaN", lambda: float("nan")),
    Raw("Infinity", lambda: float("inf")),
    Raw("-Infinity", lambda: float("-inf")),
    Raw("1e999", lambda: float("inf")),
    Raw("-1e999", lambda: float("-inf")),
    Raw("-0", lambda: 0),
    Raw("1E400", lambda: float("inf")),
    Raw("4.9e-325", lambda: 0.0),
)

UNKNOWN_NAMES = (
    "FOO_EVENT",
    "wizard",
    "hologram",
    "TEXT_MESSAGE_START ",
    "text_message_start",
    "",
    "__proto__",
    "constructor",
    "RUN_STARTED\u0000",
    "toString",
)

AGUI_TYPES = (
    "RUN_STARTED",
    "RUN_FINISHED",
    "RUN_ERROR",
    "STEP_STARTED",
    "STEP_FINISHED",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TEXT_MESSAGE_CHUNK",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_CHUNK",
    "TOOL_CALL_RESULT",
    "STATE_SNAPSHOT",
    "STATE_DELTA",
    "MESSAGES_SNAPSHOT",
    "ACTIVITY_SNAPSHOT",
    "ACTIVITY_DELTA",
    "RAW",
    "CUSTOM",
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_MESSAGE_CHUNK",
    "REASONING_END",
    "REASONING_ENCRYPTED_VALUE",
    "SUBAGENT_STARTED",
    "SUBAGENT_FINISHED",
    "SUBAGENT_ERROR",
)
ROLES = ("user", "assistant", "system", "developer", "tool", "activity", "reasoning")
ACP_KINDS = (
    "user_message_chunk",
    "user_message",
    "agent_message_chunk",
    "agent_message",
    "agent_thought_chunk",
    "agent_thought",
    "tool_call_update",
    "tool_call_content_chunk",
    "terminal_update",
    "terminal_output_chunk",
    "plan_update",
    "plan_removed",
    "session_info_update",
    "compaction_update",
    "compaction_summary_chunk",
    "subagent_update",
    "session_message",
    "session_message_chunk",
    "usage_update",
    "available_commands_update",
    "config_option_update",
)
ID_POOL: list[str] = []
"""Every id string of the seeds (``...Id`` members), filled by :func:`load_seeds`."""

PATCH_OPS = ("add", "remove", "replace", "move", "copy", "test")
TAG_KEYS = {"type": AGUI_TYPES, "role": ROLES, "sessionUpdate": ACP_KINDS, "op": PATCH_OPS}


ODD_STRINGS = (
    "\ud800",
    "a\udfffb",
    "\x00\x01\x1f",
    "\r\n\r\ndata: x\n\n",
    "\ufeff",
    "!!!",
    "YQ",
    "YQ==YQ==",
    "=",
    "4pyTIMOg",
    "G1s",
    "\x1b[31m",
    "8J+Y",
)
"""Lone surrogates, control characters, SSE framing inside a string, odd base64."""


def hostile_value(rng: random.Random) -> Any:
    """One value chosen to hurt: limits, huge sizes, odd tokens, wrong types."""
    pick = rng.randrange(16)
    if pick == 0:
        return rng.choice(
            [None, True, False, 0, -1, 1.5, -0.0, "", [], {}, [None], {"": None}, "null"]
        )
    if pick == 1:
        return rng.choice([2**63 - 1, 2**63, 2**64, -(2**63) - 1, 2**53 + 1, 10**30, -(10**30)])
    if pick == 2:
        return big_int(rng.choice([20, 310, 4300, 4301, 5000, 20000]), rng.choice(["", "-"]))
    if pick == 3:
        return rng.choice(NAN_TOKENS)
    if pick == 4:
        return deep(
            rng.choice([100, 510, 511, 512, 513, 600, 1000, 5000, 100_000]), rng.choice("[{")
        )
    if pick == 5:
        return rng.choice("xé\u2028\x00😀") * rng.choice([1000, 70_000, 1_000_000])
    if pick == 6:
        return rng.choice(UNKNOWN_NAMES)
    if pick == 7:
        return rng.choice(ODD_STRINGS)
    if pick == 8:
        return rng.choice([1.7976931348623157e308, 5e-324, 1e16, 0.1, -1e-7, 1700000000000.5])
    if pick == 9:
        return "/" + "/".join(
            rng.choice(["a", "-", "0", "~", "~2", "~1", "9" * 40, ""])
            for _ in range(rng.randint(0, 4))
        )
    if pick == 10:
        return [rng.choice([0, "x", None, {}]) for _ in range(rng.choice([2, 100, 10_000]))]
    if pick == 11:
        return {f"k{n}": n for n in range(rng.choice([3, 1000, 20_000]))}
    if pick == 12:
        return DupKeys(
            tuple((rng.choice(["a", "type", "id"]), rng.randint(0, 3)) for _ in range(3))
        )
    if pick == 13:
        return rng.choice(AGUI_TYPES + ROLES + ACP_KINDS)
    if pick == 14:
        return {"type": rng.choice(["text", "image", "audio", "resource", "binary", "wizard"])}
    return rng.choice(["1", "true", "[]", "{}", "0x10", "1e5", "-", "2025-01-01T00:00:00Z"])


def _patch_ops(rng: random.Random) -> list[Any]:
    """A JSON Patch built to hurt: growth, huge indexes, self-moves, a failing tail."""
    pick = rng.randrange(9)
    if pick == 0:  # every copy doubles /b
        times = rng.choice([5, 20, 40, 100])
        return [{"op": "add", "path": "/b", "value": [1, 2]}] + [
            {"op": "copy", "from": "/b", "path": "/b/-"} for _ in range(times)
        ]
    if pick == 1:  # the case: a good op, then an index of thousands of digits
        digits = rng.choice([19, 20, 400, 4300, 5000])
        return [
            {"op": "add", "path": "/fuzz", "value": 1},
            {
                "op": rng.choice(["add", "replace", "remove", "test"]),
                "path": "/b/" + "1" * digits,
                "value": 0,
            },
        ]
    if pick == 2:
        return [
            {"op": "add", "path": "/a", "value": {"b": {}}},
            {"op": "move", "from": "/a", "path": "/a/b/c"},
        ]
    if pick == 3:  # applies, then fails: atomicity
        return [
            {"op": "add", "path": "/fuzz", "value": 1},
            {"op": "test", "path": "/fuzz", "value": 2},
        ]
    if pick == 4:
        index = rng.choice(["01", "-1", "1e2", " 1", "0x1", "-", "9" * 25, "٣"])
        return [
            {"op": "add", "path": "/arr", "value": [0]},
            {"op": "add", "path": f"/arr/{index}", "value": 1},
        ]
    if pick == 5:
        return [{"op": "add", "path": "/a" * rng.choice([100, 600, 5000]), "value": 1}]
    if pick == 6:
        return [{"op": "add", "path": "", "value": hostile_value(rng)}]
    if pick == 7:
        return [
            {
                "op": rng.choice(["add", "copy", "move"]),
                "from": "/x" + "~" * 3,
                "path": "/y",
                "value": 1,
            }
        ]
    return [
        {"op": "add", "path": "/big", "value": "x" * 100_000} for _ in range(rng.choice([2, 50]))
    ]


# ---- walking and editing a JSON tree ------------------------------------------------------


def _places(
    value: Any, path: tuple[Any, ...] = (), out: list[tuple[Any, ...]] | None = None
) -> list[tuple[Any, ...]]:
    out = [] if out is None else out
    out.append(path)
    if len(out) > 5000:
        return out
    if isinstance(value, dict):
        for key, item in value.items():
            _places(item, (*path, key), out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _places(item, (*path, index), out)
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def mutate_value(rng: random.Random, doc: Any) -> Any:
    """``doc`` (not changed) with one value-level mutation applied."""
    doc = copy.deepcopy(doc)
    places = _places(doc)
    path = rng.choice(places)
    if not path:
        return hostile_value(rng) if rng.random() < 0.3 else _mutate_container(rng, doc)
    parent = _get(doc, path[:-1])
    key = path[-1]
    pick = rng.randrange(10)
    if pick <= 2:
        parent[key] = hostile_value(rng)
    elif pick == 3:
        del parent[key]
    elif pick == 4:
        if isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        else:
            parent[f"{key}{rng.choice(['', '_', 'X', '2'])}x"] = copy.deepcopy(parent[key])
    elif pick == 5 and isinstance(parent, dict):  # rename: an unknown or near-miss member
        parent[rng.choice([key.upper(), key + "_", key.lower(), "extra", "_meta"])] = parent.pop(
            key
        )
    elif pick == 6 and isinstance(key, str) and key in TAG_KEYS:
        parent[key] = rng.choice(TAG_KEYS[key] + UNKNOWN_NAMES)
    elif pick == 6 and isinstance(key, str) and key.endswith("Id") and ID_POOL:
        parent[key] = rng.choice(ID_POOL)  # collide with another entity, schema-valid
    elif pick == 7:
        parent[key] = _mutate_container(rng, parent[key])
    elif pick == 8 and ID_POOL and rng.random() < 0.5:
        ids = [p for p in places if p and isinstance(p[-1], str) and p[-1].endswith("Id")]
        if ids:
            where = rng.choice(ids)
            _get(doc, where[:-1])[where[-1]] = rng.choice(ID_POOL)
    elif pick == 8:
        parent[key] = copy.deepcopy(_get(doc, rng.choice(places))) if len(places) < 2000 else None
    else:
        parent[key] = _retype(rng, parent[key])
    return doc


def _retype(rng: random.Random, value: Any) -> Any:
    if isinstance(value, str):
        return rng.choice([[value], {"text": value}, len(value), None, value * 2, value[:1]])
    if isinstance(value, bool):
        return rng.choice([int(value), str(value).lower(), None])
    if isinstance(value, (int, float)):
        return rng.choice([str(value), float(value), value + 1, -value, None, [value]])
    if isinstance(value, list):
        return rng.choice([{}, "", value[:1], value[::-1], value + value])
    if isinstance(value, dict):
        return rng.choice([[value], list(value), {}, None])
    return hostile_value(rng)


def _mutate_container(rng: random.Random, value: Any) -> Any:
    if isinstance(value, list):
        patch = bool(value) and all(isinstance(op, dict) and "op" in op for op in value)
        if patch or rng.random() < 0.3:
            ops = _patch_ops(rng)
            at = rng.randint(0, len(value))
            return value[:at] + ops + value[at:]
        return [*value, hostile_value(rng)]
    if isinstance(value, dict):
        value = dict(value)
        value[
            rng.choice(["extra", "metadata", "_meta", "subagentRunId", "replace", "rawEvent"])
        ] = hostile_value(rng)
        return value
    return hostile_value(rng)


def mutate_event(rng: random.Random, event: Any, rounds: int | None = None) -> Any:
    """One to three value mutations of an event (a patch-bearing event favours patches)."""
    for _ in range(rounds or rng.choice([1, 1, 1, 2, 3])):
        if isinstance(event, dict) and rng.random() < 0.25:
            for field in ("delta", "patch"):
                if isinstance(event.get(field), list):
                    event = dict(event)
                    event[field] = _mutate_container(rng, event[field])
                    break
            else:
                event = mutate_value(rng, event)
        else:
            event = mutate_value(rng, event)
    return event


# ---- sequences ----------------------------------------------------------------------------


def growth_burst(rng: random.Random, kind: str = "STATE_DELTA") -> list[dict[str, Any]]:
    """Small deltas that make the document large: one patch doubles ``/g`` (within the
    per-patch limits), then each later one-operation patch copies it to a new place."""
    field, extra = ("delta", {}) if kind == "STATE_DELTA" else ("patch", {"activityType": "x"})
    grow = [{"op": "add", "path": "/g", "value": [1, 2]}]
    grow += [{"op": "copy", "from": "/g", "path": "/g/-"} for _ in range(rng.randint(16, 17))]
    burst = [{"type": kind, **extra, field: grow}]
    for n in range(rng.randint(4, 10)):
        burst.append(
            {"type": kind, **extra, field: [{"op": "copy", "from": "/g", "path": f"/g{n}"}]}
        )
    return burst


def mutate_sequence(rng: random.Random, events: list[Any], donors: list[list[Any]]) -> list[Any]:
    """``events`` with one sequence-level mutation (``donors``: other streams to splice)."""
    events = list(events)
    pick = rng.randrange(8)
    n = len(events)
    if pick == 0 and n:
        del events[rng.randrange(n)]
    elif pick == 1 and n:
        i = rng.randrange(n)
        events.insert(rng.randint(0, n), events[i])
    elif pick == 2 and n > 1:
        i, j = rng.randrange(n), rng.randrange(n)
        events[i], events[j] = events[j], events[i]
    elif pick == 3 and n:
        events = events[: rng.randrange(n)]
    elif pick == 4 and donors:
        donor = rng.choice(donors)
        if donor:
            a = rng.randrange(len(donor))
            b = rng.randint(a, min(len(donor), a + 4))
            at = rng.randint(0, n)
            events[at:at] = donor[a:b]
    elif pick == 5:
        events = events + events
    elif pick == 6 and n > 2:
        a = rng.randrange(n)
        b = rng.randint(a, n)
        events[a:b] = events[a:b][::-1]
    elif donors:
        donor = rng.choice(donors)
        events = events + list(donor)
    return events


# ---- JSON text ----------------------------------------------------------------------------


_BIG = 10**4000  # a Python int this large has no decimal repr (the 4300-digit limit)


def dumps(value: Any) -> str:
    """JSON text for a value that may hold :class:`Raw` and :class:`DupKeys`."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, Raw):
        out.append(value.text)
    elif isinstance(value, DupKeys):
        out.append("{" + ",".join(json.dumps(k) + ":" + dumps(v) for k, v in value.pairs) + "}")
    elif isinstance(value, dict):
        out.append("{")
        for number, (key, item) in enumerate(value.items()):
            if number:
                out.append(",")
            out.append(json.dumps(str(key), ensure_ascii=False))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for number, item in enumerate(value):
            if number:
                out.append(",")
            _write(item, out)
        out.append("]")
    elif isinstance(value, float):
        out.append(json.dumps(value))  # NaN/Infinity as the stdlib writes them
    elif isinstance(value, bool) or value is None or isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(int.__repr__(value) if -_BIG < value < _BIG else "0")
    else:
        out.append(json.dumps(str(value)))


def encode_text(text: str) -> bytes:
    """UTF-8, letting lone surrogates through as (invalid) bytes."""
    return text.encode("utf-8", "surrogatepass")


def to_python(value: Any) -> Any:
    """The decoded-JSON equivalent of a value that may hold :class:`Raw`/:class:`DupKeys`."""
    if isinstance(value, Raw):
        return value.build()
    if isinstance(value, DupKeys):
        return {k: to_python(v) for k, v in value.pairs}
    if isinstance(value, dict):
        return {str(k): to_python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_python(v) for v in value]
    return value


def contains_raw(value: Any) -> bool:
    """Whether the value holds a fragment only the text form can carry exactly."""
    if isinstance(value, (Raw, DupKeys)):
        return True
    if isinstance(value, dict):
        return any(contains_raw(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_raw(v) for v in value)
    return False


# ---- framing ------------------------------------------------------------------------------


def sse_frames(events: list[Any], rng: random.Random | None = None) -> bytes:
    """Each event as one SSE frame; with ``rng``, frames vary in legal ways."""
    parts: list[bytes] = []
    for event in events:
        body = encode_text(dumps(event))
        if rng is not None and rng.random() < 0.1:
            lines = (
                body.split(b"\n")
                if b"\n" in body
                else [body[: len(body) // 2], body[len(body) // 2 :]]
            )
            frame = b"".join(b"data:" + line + b"\n" for line in lines) + b"\n"
        else:
            frame = b"data: " + body + b"\n\n"
        if rng is not None and rng.random() < 0.05:
            frame = (
                rng.choice([b": keep-alive\n", b"event: message\n", b"id: 7\n", b"retry: 10\n"])
                + frame
            )
        parts.append(frame)
    return b"".join(parts)


def jsonl_lines(events: list[Any]) -> bytes:
    """Each event as one JSON line."""
    return b"".join(encode_text(dumps(event)) + b"\n" for event in events)


BYTE_INSERTS: tuple[bytes, ...] = (
    b"\r",
    b"\n",
    b"\r\n",
    b"\n\n",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xc0\xaf",
    b"\xf4\x90\x80\x80",
    b"\x00",
    b": comment",
    b"data:",
    b"data: {",
    b"event: x\n",
    b"id: \x00\n",
    b"retry: 1e9\n",
    b"\r\r\r",
    b" ",
    b"\t",
    b"}",
    b"]",
    b'"',
    b"\\u0000",
    b"\\ud800",
)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """``data`` with one to three byte-level mutations."""
    for _ in range(rng.choice([1, 1, 2, 3])):
        n = len(data)
        at = rng.randint(0, n)
        pick = rng.randrange(10)
        if pick == 0:
            data = data[:at]
        elif pick == 1 and n:
            i = rng.randrange(n)
            data = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
        elif pick <= 3:
            data = data[:at] + rng.choice(BYTE_INSERTS) + data[at:]
        elif pick == 4:
            data = data + rng.choice([b": comment at EOF", b":", b"data: 1", b"\r", b"data: {}\r"])
        elif pick == 5 and n:
            b = rng.randint(at, min(n, at + 64))
            data = data[:at] + data[b:]
        elif pick == 6 and n:
            b = rng.randint(at, min(n, at + 256))
            data = data[:b] + data[at:b] + data[b:]
        elif pick == 7:
            data = data.replace(b"\n", rng.choice([b"\r", b"\r\n", b"\n\r"]))
        elif pick == 8:
            data = (
                b"\xef\xbb\xbf" + data
                if rng.random() < 0.5
                else data.replace(b"data: ", b"data:", 3)
            )
        else:
            data = data[:at] + b"\n" * rng.choice([1, 2, 1000]) + data[at:]
    return data


def split_points(rng: random.Random, size: int) -> list[int]:
    """Chunk boundaries anywhere: whole, one byte at a time (small inputs), or random."""
    pick = rng.randrange(5)
    if pick == 0 or size == 0:
        return []
    if pick == 1 and size <= 4096:
        return list(range(1, size))
    if pick == 2:
        return sorted({rng.randint(1, max(1, size - 1)) for _ in range(rng.randint(1, 8))})
    step = rng.choice([1, 2, 3, 7, 16, 64, 1000])
    if size // step > 20_000:
        step = size // 20_000 + 1
    return list(range(step, size, step))


def chunks(data: bytes, points: list[int]) -> Iterator[bytes]:
    """``data`` cut at ``points``."""
    last = 0
    for point in points:
        yield data[last:point]
        last = point
    yield data[last:]


# ---- seeds --------------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamSeed:
    """An AG-UI stream: its events and run input (maybe none)."""

    name: str
    stream: list[Any]
    input: Any = None


@dataclass
class Seeds:
    """Every seed, loaded once."""

    streams: list[StreamSeed]
    fixtures: list[tuple[str, Any]]  # (definition/validity/name, document)
    updates: list[tuple[str, Any]]  # (file name, ACP update object)

    @property
    def events(self) -> list[Any]:
        """Every AG-UI event of the streams and the event fixtures."""
        out = [event for seed in self.streams for event in seed.stream]
        out += [doc for name, doc in self.fixtures if name.endswith("Event") or "Event/" in name]
        return out


SEED_CORPORA = ("agui/draft/conformance/streams", "agui/draft/fixtures")
"""The pinned upstream folders the seeds come from (mirror paths)."""


def load_seeds(mirror: Path) -> Seeds:
    """Read the seed corpora in place under ``mirror``, a folder holding
    :data:`SEED_CORPORA` (nothing is copied into the repository)."""
    streams = []
    for path in sorted((mirror / "agui" / "draft" / "conformance" / "streams").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("stream"), list):
            streams.append(StreamSeed(path.stem, data["stream"], data.get("input")))
    fixtures = []
    for path in sorted((mirror / "agui" / "draft" / "fixtures").glob("*/*/*.json")):
        if path.name.endswith(".expect.json"):
            continue
        name = f"{path.parent.parent.name}/{path.parent.name}/{path.stem}"
        fixtures.append((name, json.loads(path.read_text(encoding="utf-8"))))
    updates = []
    for path in sorted((ROOT / "tests" / "acp" / "roundtrip").glob("*.json")):
        updates.append((path.stem, json.loads(path.read_text(encoding="utf-8"))))
    seeds = Seeds(streams, fixtures, updates)
    if not ID_POOL:
        found: set[str] = set()
        for doc in [s.stream for s in streams] + [d for _, d in fixtures] + [u for _, u in updates]:
            for place in _places(doc):
                if place and isinstance(place[-1], str) and place[-1].endswith("Id"):
                    value = _get(doc, place)
                    if isinstance(value, str):
                        found.add(value)
        ID_POOL.extend(sorted(found))
    return seeds


def notification(update: Any, session_id: Any = "s1") -> dict[str, Any]:
    """An ACP update wrapped as a ``session/update`` JSON-RPC notification."""
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }


def permission_request(update: Any, ident: int = 1, session_id: Any = "s1") -> dict[str, Any]:
    """A ``session/request_permission`` request whose tool-call subject is ``update``."""
    tool_call = dict(update) if isinstance(update, dict) else update
    if isinstance(tool_call, dict):
        tool_call.pop("sessionUpdate", None)
        tool_call.setdefault("toolCallId", "c1")
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "session/request_permission",
        "params": {
            "sessionId": session_id,
            "title": "Allow?",
            "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
            "subject": {"type": "tool_call", "toolCall": tool_call},
        },
    }


def mutate_rpc(rng: random.Random, message: Any) -> Any:
    """A JSON-RPC wrapper mutation: version, id, method, params shape, batches."""
    if not isinstance(message, dict):
        return [message]
    message = dict(message)
    pick = rng.randrange(8)
    if pick == 0:
        message["jsonrpc"] = rng.choice(["1.0", 2.0, None, "2.0 "])
    elif pick == 1:
        message["id"] = rng.choice([1, "1", None, 2**70, [], 1.5])
    elif pick == 2:
        message["method"] = rng.choice(
            ["session/updates", "", "session/request_permission", "rpc.x"]
        )
    elif pick == 3:
        message["params"] = rng.choice([[], None, "x", {"sessionId": "s1"}, {"update": {}}])
    elif pick == 4:
        params = _params(message)
        params[rng.choice(["extra", "_meta", "sessionId"])] = hostile_value(rng)
        message["params"] = params
    elif pick == 5:
        return [message, message] if rng.random() < 0.7 else []
    elif pick == 6:
        message["result"] = {}
    else:
        params = _params(message)
        params["sessionId"] = hostile_value(rng)
        message["params"] = params
    return message


def _params(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of the message's params to mutate (an earlier mutation may have made them
    a non-object: then a fresh object)."""
    params = message.get("params")
    return dict(params) if isinstance(params, dict) else {}
