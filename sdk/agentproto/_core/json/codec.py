"""JSON parsing and encoding with the limits a network peer needs.

Theory of operation
-------------------
:func:`loads` hands the document straight to orjson, which validates UTF-8,
rejects NaN/Infinity and parses in one native pass. Everything else happens
around that call, cheaply on success and carefully on failure:

* **Depth.** orjson stops at 1024 levels on its own (sometimes with a
  ``RecursionError``); we enforce the caller's ``max_depth``. A document of
  ``n`` characters cannot nest deeper than ``n`` levels, nor deeper than its
  number of ``[`` and ``{``; only when both bounds exceed the limit (after a
  successful parse, or to explain a failed one) do we scan precisely. The scan
  masks escaped backslashes and quotes (same length, so offsets are kept),
  splits on the remaining quotes so that odd pieces are string contents, and
  sums bracket deltas with C-level iterators. Only a document that really is
  too deep pays a Python loop, over one window, to find the byte offset of the
  first bracket over the limit.
* **Big integers.** orjson silently turns integers outside the 64-bit range
  into floats (or fails when they overflow a double). A digit run of 19 or more
  is the necessary sign; it is found by :func:`has_digit_run` (C-level
  passes over one byte in nine), and such documents are re-parsed with the
  standard library so integers stay exact. After the parse the sign is a float
  of magnitude 2**63 or more (orjson keeps every integer below exact), which
  :func:`may_hold_rounded_int` looks for: the AG-UI event decoder parses with orjson
  alone and walks only the members where its schema allows a number, which costs
  less than the pass over the bytes.
* **Errors.** On failure the input is re-examined to say what went wrong and
  where, as a byte offset: the first invalid UTF-8 byte (or lone surrogate in a
  ``str``), the first bracket over the depth limit, or orjson's own position
  (a character index, converted to bytes).

:func:`dumps` is orjson's compact output, with the standard library as the
fallback for what orjson cannot encode but JSON can (integers beyond 64 bits,
nesting deeper than 254 levels). Non-finite floats, which orjson would write as
``null``, and values that are not JSON raise :class:`SchemaError` with the JSON
Pointer of the offending value. :func:`dumps_sorted` is the same with object keys
sorted, for a value used as a key.
"""

from __future__ import annotations

import enum
import json
import math
import uuid
from itertools import accumulate
from typing import Any, Final

import orjson

from agentproto._core.describe import cut_pointer, describe
from agentproto._core.errors import DecodeError, SchemaError, chained

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "dumps",
    "dumps_sorted",
    "has_digit_run",
    "loads",
    "may_hold_rounded_int",
]

DEFAULT_MAX_DEPTH: Final = 512
"""Default nesting limit of :func:`loads` (arrays and objects both count).

The one default of the SDK's JSON input: AG-UI's decoders and consumer, the
JSON Lines reader, ACP's :class:`~agentproto.acp.MessageReader` and the CLIs'
recording files all use it, and each takes ``max_depth=`` to change it.
"""

# --- big integers --------------------------------------------------------------

# Integers orjson keeps exact lie in [-2**63, 2**64 - 1]: at most 20 digits, and
# every integer outside the range has at least 19. Digits map to "0" and
# everything else to " ", so a run of 19 digits becomes a run of 19 zeros.
_DIGIT_RUN_LENGTH: Final = 19
_DIGIT_RUN: Final = b"0" * _DIGIT_RUN_LENGTH
_DIGIT_RUN_TABLE: Final = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_SAMPLE_STRIDE: Final = 9  # 19 >= 2 * 9 + 1: a run covers two sampled positions in a row
_MAX_ALARMS: Final = 4
_SAMPLE_FROM: Final = 512
_ALARM_BYTES: Final = 8192

# --- depth scan ----------------------------------------------------------------

_BRACKET_DELTA: Final = tuple(
    1 if i in (0x5B, 0x7B) else -1 if i in (0x5D, 0x7D) else 0 for i in range(256)
)
NOT_BRACKETS: Final = bytes(i for i in range(256) if i not in (0x5B, 0x5D, 0x7B, 0x7D))
_DEPTH_WINDOW: Final = 4096
_SCAN_WINDOW: Final = 1 << 16  # bytes: the quote-split pieces of one window stay small

# --- encoding ------------------------------------------------------------------

_DUMPS_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_ORJSON_LIMITS: Final = ("Integer exceeds 64-bit range", "Recursion limit reached")
_MAX_ENCODE_DEPTH: Final = 10_000


class Failure(Exception):
    """Why a document failed to parse and where (a byte offset into it).

    Internal to ``agentproto._core``: :func:`loads` turns it into a
    :class:`DecodeError`, the line decoders add a line number first.
    """

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


def has_digit_run(data: bytes | bytearray) -> bool:
    """Whether ``data`` holds a run of 19 digits, the sign of a possible big integer.

    A C-level look at one byte in nine: a caller holding many documents in one
    buffer (a chunk of a stream) can test the buffer once and skip the
    per-document check when it is clean (``loads(..., exact_ints=False)``).

    Any 19 consecutive positions hold two consecutive multiples of 9, so a run
    of 19 digits shows as two adjacent digits in ``data[::9]``. Each such pair
    is confirmed on the 28 bytes around it; a buffer with more pairs than that is
    worth (one dense with digits, such as a stream of timestamps) is searched whole.
    """
    if len(data) < _SAMPLE_FROM:  # a short document: one pass costs less than sampling
        return data.translate(_DIGIT_RUN_TABLE).find(_DIGIT_RUN) >= 0
    stride = _SAMPLE_STRIDE
    sample = data[::stride].translate(_DIGIT_RUN_TABLE)
    alarms = _MAX_ALARMS + len(data) // _ALARM_BYTES  # checking one costs ~ a KiB's pass
    if sample.count(b"00") > alarms:  # confirming each would cost more than one pass
        return data.translate(_DIGIT_RUN_TABLE).find(_DIGIT_RUN) >= 0
    hit = sample.find(b"00")
    while hit >= 0:
        start = max(0, (hit - 1) * stride)
        if not alarms:
            return data[start:].translate(_DIGIT_RUN_TABLE).find(_DIGIT_RUN) >= 0
        window = data[start : hit * stride + 2 * stride + 1]
        if window.translate(_DIGIT_RUN_TABLE).find(_DIGIT_RUN) >= 0:
            return True
        alarms -= 1
        hit = sample.find(b"00", hit + 1)
    return False


_ROUNDED: Final = 9223372036854775808.0  # 2**63: a smaller float is no rounded integer


def may_hold_rounded_int(value: Any) -> bool:
    """Whether ``value``, as orjson parsed it, holds a float of magnitude 2**63 or more.

    orjson keeps every integer in ``[-2**63, 2**64)`` exact and turns any other into
    a float of at least that magnitude, so a parsed value without such a float lost
    no integer. (One with it may have been written as a float: a re-parse with
    :func:`loads` decides.) Containers are walked with a stack of their own, not by
    recursion: a value as deep as the parser allows would exceed Python's recursion
    limit (two frames a level), in a caller already deep in its own stack sooner.
    """
    if isinstance(value, float):
        return value >= _ROUNDED or value <= -_ROUNDED
    if not isinstance(value, (dict, list)):
        return False
    pending = [value]
    push = pending.append
    while pending:
        container = pending.pop()
        # a loop, not any() over a generator, which costs the interpreted build a frame
        # switch per item; strings (most members) are passed over first
        for item in container.values() if isinstance(container, dict) else container:
            if isinstance(item, str):
                continue
            if isinstance(item, float):
                if item >= _ROUNDED or item <= -_ROUNDED:
                    return True
            elif isinstance(item, (dict, list)):
                push(item)
    return False


def loads(
    data: bytes | str,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    offset: int = 0,
    exact_ints: bool = True,
) -> Any:
    """Parse one JSON document.

    Args:
        data: the document, as UTF-8 bytes or text.
        max_depth: the deepest nesting of arrays and objects accepted (``[]``
            is depth 1, a scalar depth 0).
        offset: added to every byte offset reported, so that a caller parsing
            a slice of a larger stream reports positions in that stream.
        exact_ints: look for integers beyond 64 bits and keep them exact. A
            caller that knows the document holds no run of 19 digits (see
            :func:`has_digit_run`), or that looks for rounded integers in the parsed
            values itself (:func:`may_hold_rounded_int`), passes ``False`` to skip
            the look.

    Returns:
        The document as plain Python values (``dict``, ``list``, ``str``,
        ``int``, ``float``, ``bool``, ``None``); integers are exact at any size.

    Raises:
        DecodeError: the bytes are not UTF-8 (``offset`` is that of the first
            invalid byte), not JSON (orjson's message and position), nest deeper
            than ``max_depth`` (position of the first bracket too deep), or hold
            a number that is not finite.
    """
    try:
        return loads_located(data, max_depth, exact_ints)
    except Failure as failure:
        raise chained(DecodeError(failure.message, offset=offset + failure.pos), None)


def loads_located(data: bytes | str, max_depth: int, exact_ints: bool = True) -> Any:
    """Parse like :func:`loads`, raising :class:`Failure` with a relative offset."""
    try:
        value = orjson.loads(data)
    except (orjson.JSONDecodeError, RecursionError) as exc:
        return recover(data, max_depth, exc)
    size = len(data)
    if size > max_depth or (exact_ints and size >= _DIGIT_RUN_LENGTH):
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if size > max_depth or has_digit_run(raw):
            return finish(data, raw, value, max_depth, exact_ints)
    return value


def finish(
    data: bytes | str, raw: bytes, value: Any, max_depth: int, exact_ints: bool = True
) -> Any:
    """Check the depth of a parsed document and re-parse it if it may hold big integers."""
    if len(raw) > max_depth:  # a document of n bytes nests at most n deep
        pos = _depth_failure(raw, max_depth)
        if pos is not None:
            raise Failure(f"JSON nests deeper than {max_depth} levels", pos)
    if exact_ints and has_digit_run(raw):
        text = data if isinstance(data, str) else raw.decode("utf-8")
        return _loads_exact(text, 0, check_strings=False)
    return value


def recover(data: bytes | str, max_depth: int, exc: Exception) -> Any:
    """Explain why orjson failed, or parse exactly when only big integers did."""
    if isinstance(data, str):
        text = data
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError as bad:
            pos = len(data[: bad.start].encode("utf-8", "surrogatepass"))
            raise chained(Failure("text contains a lone surrogate", pos), None)
    else:
        raw = data
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise chained(Failure(f"invalid UTF-8 ({bad.reason})", bad.start), None)
    depth_pos = _depth_failure(raw, max_depth)
    if depth_pos is not None:
        raise Failure(f"JSON nests deeper than {max_depth} levels", depth_pos)
    if not isinstance(exc, orjson.JSONDecodeError):
        raise Failure("JSON nests too deeply for the parser", 0)
    pos = _byte_pos(text, exc.pos)
    if exc.msg.startswith("number is infinity") and has_digit_run(raw):
        # Possibly an integer beyond a double's range, which is valid JSON.
        return _loads_exact(text, pos, check_strings=True)
    raise Failure(f"invalid JSON: {exc.msg}", pos)


def _byte_pos(text: str, char_pos: int) -> int:
    """UTF-8 byte offset of character ``char_pos`` of ``text``."""
    char_pos = max(0, min(char_pos, len(text)))
    if text.isascii():
        return char_pos
    return len(text[:char_pos].encode("utf-8", "surrogatepass"))


def _finite_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise ValueError(f"number {literal[:32]} is too large for a double")
    return number


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _loads_exact(text: str, fallback_pos: int, *, check_strings: bool) -> Any:
    """Parse with the standard library, which keeps integers exact."""
    try:
        value = json.loads(text, parse_float=_finite_float, parse_constant=_reject_constant)
    except RecursionError:
        raise chained(Failure("JSON nests too deeply for the parser", 0), None)
    except json.JSONDecodeError as exc:
        raise chained(Failure(f"invalid JSON: {exc.msg}", _byte_pos(text, exc.pos)), None)
    except ValueError as exc:  # a non-finite float, or an integer past int's digit limit
        raise chained(Failure(f"invalid JSON number: {exc}", fallback_pos), None)
    if check_strings:
        problem = _find_problem(value)
        if problem is not None:
            raise Failure(f"invalid JSON: {problem[1]}", fallback_pos)
    return value


def _depth_failure(raw: bytes, max_depth: int) -> int | None:
    """Byte offset of the first bracket nested deeper than ``max_depth``, if any.

    The masked document is scanned in windows of :data:`_SCAN_WINDOW` bytes, carrying
    the depth and whether a string is open from one to the next: the pieces between
    quotes are many small objects, which over the whole document at once would cost
    many times its size in memory.
    """
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return None
    masked = raw.replace(b"\\\\", b"  ").replace(b'\\"', b"  ")
    delta = _BRACKET_DELTA.__getitem__
    depth = 0
    inside = 0  # 1 while a string is open at the start of the window
    for start in range(0, len(masked), _SCAN_WINDOW):
        parts = masked[start : start + _SCAN_WINDOW].split(b'"')
        brackets = b"".join(parts[inside::2]).translate(None, NOT_BRACKETS)
        if max(accumulate(map(delta, brackets), initial=depth)) > max_depth:
            return start + _locate_in_parts(parts, inside, depth, max_depth)
        depth += sum(map(delta, brackets))
        inside ^= (len(parts) - 1) & 1
    return None


def _locate_in_parts(parts: list[bytes], inside: int, depth: int, max_depth: int) -> int:
    """Offset, in the window split into ``parts`` at its quotes, of the first bracket
    over the limit (the window starts at ``depth``, in a string when ``inside``)."""
    pos = 0
    for index, part in enumerate(parts):
        if index & 1 == inside:  # outside strings
            opens = part.count(b"[") + part.count(b"{")
            if depth + opens > max_depth:
                hit = _locate_depth(part, depth, max_depth)
                if hit is not None:
                    return pos + hit
            depth += opens - part.count(b"]") - part.count(b"}")
        pos += len(part) + 1
    raise AssertionError("unreachable: the window's scan found a failure")  # pragma: no cover


def _locate_depth(part: bytes, depth: int, max_depth: int) -> int | None:
    """Offset in ``part`` where nesting, starting at ``depth``, first exceeds the limit."""
    delta = _BRACKET_DELTA.__getitem__
    for start in range(0, len(part), _DEPTH_WINDOW):
        window = part[start : start + _DEPTH_WINDOW]
        if max(accumulate(map(delta, window), initial=depth)) > max_depth:
            for index, byte in enumerate(window):
                depth += _BRACKET_DELTA[byte]
                if depth > max_depth:
                    return start + index
        depth += sum(map(delta, window))
    return None


# --- values from Python -----------------------------------------------------------


def check_value(obj: Any, *, max_depth: int = DEFAULT_MAX_DEPTH, finite: bool = True) -> None:
    """Check that a Python value is JSON and nests at most ``max_depth`` deep.

    For values that enter from Python rather than from bytes (``feed_json``,
    ``parse_event`` of a dict, run input objects): the same depth limit as
    :func:`loads`, and nothing that JSON cannot hold (NaN, sets, bytes, non-``str``
    keys), refused when it enters rather than when it is sent on. One orjson
    encoding in C answers for the common case; only a refused value is walked,
    iteratively, to say where.

    With ``finite=False`` a NaN or infinity (which the encoding writes as
    ``null``) is not looked for: for a caller whose loader checks the typed
    fields itself and only needs the depth limit and the types.

    Raises:
        DecodeError: the value nests deeper than ``max_depth``.
        SchemaError: the value holds something that is not JSON (keyword
            ``"type"``, location the JSON Pointer of the offending value).
    """
    try:
        out = orjson.dumps(obj, None, _DUMPS_OPTIONS)
    except orjson.JSONEncodeError:
        problem = _find_problem(obj, max_depth=max_depth)
    else:
        if len(out) <= max_depth or _depth_failure(out, max_depth) is None:
            if not finite or not out.partition(b"null")[1]:  # partition: see dumps
                return
            problem = _find_problem(obj, floats_only=True)
        else:
            problem = _find_problem(obj, max_depth=max_depth)
    if problem is None:
        return
    if problem[1] == _TOO_DEEP:
        raise DecodeError(
            f"value at {cut_pointer(problem[0])!r} nests deeper than {max_depth} levels (max_depth)"
        )
    raise SchemaError("type", problem[0], problem[1])


# --- dumps ---------------------------------------------------------------------


def dumps(obj: Any) -> bytes:
    """Encode a JSON value compactly.

    Keys keep insertion order, there is no whitespace, and non-ASCII text is
    written as UTF-8. Besides plain JSON values (``dict`` with ``str`` keys,
    ``list``, ``tuple``, ``str``, ``int``, ``float``, ``bool``, ``None`` and
    their subclasses) enums are written as their value and UUIDs as strings;
    dataclasses and datetimes are refused, as anything else that is not JSON.
    Integers of any size are exact.

    Args:
        obj: the value to encode.

    Returns:
        UTF-8 JSON bytes.

    Raises:
        SchemaError: ``obj`` holds something that is not JSON (keyword
            ``"type"``, location the JSON Pointer of the offending value): a
            non-``str`` key, a non-finite float, a lone surrogate, an
            unsupported type, or a circular reference.
    """
    try:
        out = orjson.dumps(obj, None, _DUMPS_OPTIONS)  # positional: no keyword parsing
    except orjson.JSONEncodeError as exc:
        return _dumps_fallback(obj, str(exc), sort_keys=False)
    return _finite(obj, out)


def dumps_sorted(obj: Any) -> bytes:
    """:func:`dumps` with every object's keys sorted: values equal as JSON objects (member
    order aside) encode to the same bytes, which makes the encoding a key for them. Exact
    and bounded as :func:`dumps`, raising what it raises."""
    try:
        out = orjson.dumps(obj, None, _DUMPS_OPTIONS | orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:
        return _dumps_fallback(obj, str(exc), sort_keys=True)
    return _finite(obj, out)


def _finite(obj: Any, out: bytes) -> bytes:
    """``out``, orjson's encoding of ``obj``, unless ``obj`` holds a non-finite float."""
    # orjson writes NaN and infinities as null: look for them. ``partition`` takes its
    # one argument directly; ``in`` first tries the needle as a byte value (raising and
    # clearing a TypeError) and ``find`` parses an argument tuple, each costing more
    # than the search itself on a typical event
    if out.partition(b"null")[1]:
        problem = _find_problem(obj, floats_only=True)
        if problem is not None:
            raise SchemaError("type", problem[0], problem[1])
    return out


def _dumps_fallback(obj: Any, reason: str, *, sort_keys: bool) -> bytes:
    """Encode what orjson refused, or raise a located :class:`SchemaError`."""
    problem = _find_problem(obj)
    if problem is None and reason.startswith(_ORJSON_LIMITS):
        try:
            text = json.dumps(
                obj,
                ensure_ascii=False,
                separators=(",", ":"),
                allow_nan=False,
                default=_stdlib_default,
                sort_keys=sort_keys,
            )
        except RecursionError:
            raise chained(
                SchemaError(
                    "type",
                    "",
                    f"value nests too deeply to encode (far past {DEFAULT_MAX_DEPTH} levels, the"
                    " max_depth every decoder of this SDK applies by default)",
                ),
                None,
            )
        except (TypeError, ValueError) as exc:
            raise chained(SchemaError("type", "", f"cannot encode value: {exc}"), None)
        return text.encode("utf-8")
    if problem is None:
        problem = ("", f"cannot encode value: {reason}")
    raise SchemaError("type", problem[0], problem[1])


def _stdlib_default(value: Any) -> Any:
    """Encode for the standard library what orjson encodes natively."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


_TOO_DEEP: Final = "value nests too deeply (or refers to itself)"


def _find_problem(
    obj: Any, *, floats_only: bool = False, max_depth: int = _MAX_ENCODE_DEPTH
) -> tuple[str, str] | None:
    """JSON Pointer and explanation of the first value in ``obj`` that is not JSON.

    With ``floats_only`` (for a value orjson has already encoded) only
    non-finite floats are looked for. A container nested deeper than
    ``max_depth`` is a problem too (explained as :data:`_TOO_DEEP`: a circular
    reference also ends there). Paths are built only for the answer.
    """
    # Each entry: value, its path as a linked list (parent, token), its depth.
    stack: list[tuple[Any, tuple[Any, str] | None, int]] = [(obj, None, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        value, node, depth = pop()
        problem: str | None = None
        if isinstance(value, str):
            if not floats_only:
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    problem = "string contains a lone surrogate"
        elif isinstance(value, float):
            if not math.isfinite(value):
                problem = f"number {value!r} is not finite"
        elif value is None or isinstance(value, int | uuid.UUID):
            pass
        elif depth >= max_depth:
            problem = _TOO_DEEP
        elif isinstance(value, dict):
            if not floats_only:
                problem = _key_problem(value)
            items = list(value.items())
            for key, item in reversed(items):
                push((item, (node, str(key)), depth + 1))
        elif isinstance(value, list | tuple):
            for index in range(len(value) - 1, -1, -1):
                push((value[index], (node, str(index)), depth + 1))
        elif isinstance(value, enum.Enum):
            push((value.value, node, depth + 1))
        else:
            problem = f"{type(value).__name__} is not a JSON value"
        if problem is not None:
            return _render_pointer(node), problem
    return None


def _key_problem(mapping: dict[Any, Any]) -> str | None:
    for key in mapping:
        if not isinstance(key, str):
            return f"object key {describe(key)} is not a string"
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            return f"object key {describe(key)} contains a lone surrogate"
    return None


def _render_pointer(node: tuple[Any, str] | None) -> str:
    tokens: list[str] = []
    while node is not None:
        node, token = node
        tokens.append(token.replace("~", "~0").replace("/", "~1"))
    return "".join(f"/{token}" for token in reversed(tokens))
