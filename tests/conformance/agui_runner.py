"""Run AG-UI conformance corpora (the upstream stream format) through the real consumer.

Usage::

    nox -s conformance -- [--corpus DIR]... [--protocol-version V] [--json PATH]
    python -m tests.conformance.agui_runner [same options]

Without ``--corpus`` the three pinned corpora run, from the spec mirror (read in place,
never copied) or the download cache (see ``codegen/sources.py``): ``agui-draft`` (client
version "1.0"), ``agui-1.1`` ("1.1") and ``agui-1.0`` ("1.0"). A ``--corpus DIR`` (a
folder of stream files, or a folder holding ``streams/``) runs with ``--protocol-version``
(default "1.0") and is labelled by the folder's name.

Theory of operation. A stream file holds ``stream`` (raw events), optionally ``input``
(what the run starts from) and ``client.maxProtocolVersion`` (an old peer's era), and
``expect`` (the outcome any client must show; the format is the corpus README's).
For each stream the runner

1. builds the request the client sends (:func:`agentproto.agui._thread.run_input.next_run_input`
   over the conversation the ``input`` describes), completing ``threadId``/``runId`` from
   the stream's first ``RUN_STARTED``;
2. encodes every event as one SSE frame and feeds the frames one by one into
   :class:`agentproto.agui._consume.consumer.Consumer`, then closes it; this is the observation
   every ``expect`` key is checked against (events delivered before a fatal error are
   seen, as an application reading frame by frame sees them);
3. feeds the same bytes again in one call, and in small random chunks (seeded by the
   stream's name), and requires the same verdict (outcome, error, diagnostics, runs,
   final conversation; the delivered events too when nothing failed).

``expectOverrides`` blocks describe other clients and are ignored.

Upstream ``errorContains`` and ``warnings`` strings are the TypeScript client's wording.
Each is split (:func:`split_expected`) into *verbatim tokens* (quoted ids, JSON Pointers,
UPPER_SNAKE event types, versions, camelCase field names, ids with digits or several
hyphens, or a string that is one bare field name) and a prose remainder. Every token must
appear verbatim in our error's (or one diagnostic's) message, subject or path; a string
with prose must have an entry in the reviewed phrase map (``agui_phrases.toml``) listing
the codes that say the same thing, and our error's or diagnostic's code must be one of
them. An unmapped phrase fails.

Streams may be excepted (``agui_exceptions.toml``) only from the groups the corpus README
names as client-specific (``era-*`` and the admitted-gap stream). An excepted stream still
runs and is reported as excepted, never as passed; an exception for a stream that now
passes is stale and fails the run.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tomllib
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PHRASES_FILE = HERE / "agui_phrases.toml"
EXCEPTIONS_FILE = HERE / "agui_exceptions.toml"

# (label, folder under the spec mirror, protocol version the client declares)
DEFAULT_CORPORA: tuple[tuple[str, str, str], ...] = (
    ("agui-draft", "agui/draft/conformance/streams", "1.0"),
    ("agui-1.1", "agui/1.1/conformance/streams", "1.1"),
    ("agui-1.0", "agui/1.0/conformance/streams", "1.0"),
)

# the only streams the corpus README lets a third-party client treat as client-specific
ADMITTED_GAP_STREAMS = frozenset({"unknown-enum-value-role-fatal"})
EXCEPTABLE_PREFIX = "era-"

BASE_EXPECT_KEYS = (
    "outcome",
    "errorContains",
    "runError",
    "eventTypes",
    "eventTypesAbsent",
    "eventPaths",
    "eventAbsentPaths",
    "warnings",
    "noWarnings",
    "messageCount",
    "messages",
    "state",
    "request",
    "requestAbsentPaths",
)

_MISSING = object()


# ---- JSON matching --------------------------------------------------------------------------


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, ``1 == 1.0``, containers compared deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b) and not (a is None or b is None):
        return False
    return bool(a == b)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _show(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def subset_mismatch(expected: Any, actual: Any, where: str = "") -> str | None:
    """Why ``actual`` does not subset-match ``expected`` (None when it does).

    Objects are compared only on the keys ``expected`` names (each must be present),
    arrays must have the same length and match element by element, anything else must
    be JSON-equal. ``where`` is the JSON Pointer of the compared position.
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where or '/'}: expected an object, got {_kind(actual)} {_show(actual)}"
        for key, value in expected.items():
            here = f"{where}/{key}"
            if key not in actual:
                return f"{here}: missing (expected {_show(value)})"
            reason = subset_mismatch(value, actual[key], here)
            if reason is not None:
                return reason
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{where or '/'}: expected an array, got {_kind(actual)} {_show(actual)}"
        if len(expected) != len(actual):
            return (
                f"{where or '/'}: expected {len(expected)} element(s), got {len(actual)}: "
                f"{_show(actual)}"
            )
        for number, (want, got) in enumerate(zip(expected, actual, strict=True)):
            reason = subset_mismatch(want, got, f"{where}/{number}")
            if reason is not None:
                return reason
        return None
    if not json_equal(expected, actual):
        return f"{where or '/'}: expected {_show(expected)}, got {_show(actual)}"
    return None


def resolve_dotted(document: Any, dotted: str) -> Any:
    """The value at a dotted path (``a.0.b``; digits index arrays), or ``_MISSING``."""
    node = document
    for segment in dotted.split(".") if dotted else []:
        if isinstance(node, dict):
            if segment not in node:
                return _MISSING
            node = node[segment]
        elif isinstance(node, list):
            if not segment.isdigit() or int(segment) >= len(node):
                return _MISSING
            node = node[int(segment)]
        else:
            return _MISSING
    return node


def split_event_path(key: str) -> tuple[int, str]:
    """``"2.delta.0.op"`` → ``(2, "delta.0.op")``: the delivered event's index and the rest."""
    head, _, rest = key.partition(".")
    if not head.isdigit():
        raise ValueError(f"event path {key!r} does not start with an event index")
    return int(head), rest


def event_path_mismatch(events: Sequence[Any], key: str, expected: Any) -> str | None:
    """Why the delivered events do not hold ``expected`` at ``key`` (None when they do)."""
    index, rest = split_event_path(key)
    if index >= len(events):
        return f"{key}: event {index} was not delivered ({len(events)} delivered)"
    value = resolve_dotted(events[index], rest)
    if value is _MISSING:
        return f"{key}: absent from {_show(events[index], 200)}"
    if not json_equal(expected, value):
        return f"{key}: expected {_show(expected)}, got {_show(value)}"
    return None


def event_absent_mismatch(events: Sequence[Any], key: str) -> str | None:
    """Why ``key`` is not absent from the delivered events (None when it is absent).

    The event itself must have been delivered: absence is asserted on what an event
    survived carrying, so a dropped event does not satisfy it.
    """
    index, rest = split_event_path(key)
    if index >= len(events):
        return f"{key}: event {index} was not delivered ({len(events)} delivered)"
    value = resolve_dotted(events[index], rest)
    if value is not _MISSING:
        return f"{key}: present ({_show(value)})"
    return None


# ---- wording: verbatim tokens and reviewed phrases ---------------------------------------

# token patterns, in the order they are taken out of the string
_QUOTED = re.compile(r"""(?<![\w\\])(['"])([^'"\s]+)\1(?!\w)""")
_POINTER = re.compile(r"(?<!\S)/[^\s'\",;()]*")
_UPPER_SNAKE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
_VERSION = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w.]*\w)")
_CAMEL = re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b")
_JOINED = re.compile(r"\b[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+\b")
_BARE_FIELD = re.compile(r"^[a-z][A-Za-z0-9]*$")


def _is_id(word: str) -> bool:
    """A hyphen/underscore-joined word is an id when it has a digit or two joints or more."""
    return any(c.isdigit() for c in word) or len(re.findall(r"[-_]", word)) >= 2


@dataclass(frozen=True)
class ExpectedText:
    """An upstream ``errorContains``/``warnings`` string, split for matching.

    Attributes:
        text: the string as the corpus has it.
        tokens: what must appear verbatim in our message, subject or path.
        prose: the rest, whitespace-normalised ("" when the string is only tokens).
    """

    text: str
    tokens: tuple[str, ...]
    prose: str

    @property
    def needs_phrase(self) -> bool:
        """Whether the string has prose, which only the phrase map can translate."""
        return bool(re.search(r"[A-Za-z]", self.prose))


def split_expected(text: str) -> ExpectedText:
    """Split an upstream wording string into verbatim tokens and prose."""
    if _BARE_FIELD.match(text):
        return ExpectedText(text, (text,), "")
    work = text.replace('\\"', '"').replace("\\'", "'")
    tokens: list[tuple[int, str]] = []

    def take(
        pattern: re.Pattern[str], group: int = 0, keep: Callable[[str], bool] | None = None
    ) -> None:
        nonlocal work
        pieces: list[str] = []
        last = 0
        for match in pattern.finditer(work):
            token = match.group(group)
            if keep is not None and not keep(token):
                continue
            tokens.append((match.start(), token))
            pieces.append(work[last : match.start()])
            pieces.append(" " * (match.end() - match.start()))
            last = match.end()
        pieces.append(work[last:])
        work = "".join(pieces)

    take(_QUOTED, 2)
    take(_POINTER, 0, lambda token: len(token) > 1)
    take(_UPPER_SNAKE)
    take(_VERSION)
    take(_CAMEL)
    take(_JOINED, 0, _is_id)
    ordered = tuple(dict.fromkeys(token for _, token in sorted(tokens)))
    prose = " ".join(work.split())
    return ExpectedText(text, ordered, prose)


@dataclass(frozen=True)
class Evidence:
    """What one of our errors or diagnostics says: a stable code and its texts."""

    code: str
    message: str
    subject: str | None = None
    path: str | None = None
    kind: str = "diagnostic"

    def texts(self) -> tuple[str, ...]:
        """Every text a verbatim token may appear in."""
        return tuple(t for t in (self.message, self.subject, self.path) if t)

    def describe(self) -> str:
        """A one-line rendering for failure reports."""
        extra = "".join(
            f" {name}={value!r}"
            for name, value in (("subject", self.subject), ("path", self.path))
            if value
        )
        return f"[{self.code}]{extra} {self.message!r}"


@dataclass(frozen=True)
class Phrase:
    """A reviewed phrase-map entry: the codes that say what the upstream phrase says."""

    text: str
    codes: tuple[str, ...]
    why: str


class ConfigError(Exception):
    """The phrase map or the exceptions file is malformed."""


def _only_table(path: Path, key: str) -> dict[str, Any]:
    """The ``[key]`` table of a TOML file that may hold nothing else (empty when absent)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    unknown = set(data) - {key}
    if unknown:
        raise ConfigError(f"{path.name}: unknown top-level keys {sorted(unknown)}")
    table: dict[str, Any] = data.get(key, {})
    return table


def load_phrases(path: Path = PHRASES_FILE) -> dict[str, Phrase]:
    """Read the reviewed phrase map (``[phrases."<upstream string>"]`` with codes and why)."""
    phrases: dict[str, Phrase] = {}
    for text, entry in _only_table(path, "phrases").items():
        if not isinstance(entry, dict) or set(entry) != {"codes", "why"}:
            raise ConfigError(f"{path.name}: entry {text!r} needs exactly `codes` and `why`")
        codes = entry["codes"]
        if not (isinstance(codes, list) and codes and all(isinstance(c, str) for c in codes)):
            raise ConfigError(f"{path.name}: entry {text!r}: `codes` must list code strings")
        if not (isinstance(entry["why"], str) and entry["why"].strip()):
            raise ConfigError(f"{path.name}: entry {text!r}: `why` must say why the code matches")
        if not split_expected(text).needs_phrase:
            raise ConfigError(f"{path.name}: entry {text!r} is only verbatim tokens; remove it")
        phrases[text] = Phrase(text, tuple(codes), entry["why"].strip())
    return phrases


def wording_mismatch(
    expected: str, evidence: Evidence, phrases: Mapping[str, Phrase]
) -> str | None:
    """Why ``evidence`` does not say ``expected`` (None when it does)."""
    split = split_expected(expected)
    texts = evidence.texts()
    missing = [token for token in split.tokens if not any(token in text for text in texts)]
    if missing:
        return f"token(s) {', '.join(map(repr, missing))} not in {evidence.describe()}"
    if split.needs_phrase:
        phrase = phrases.get(expected)
        if phrase is None:
            return f"unmapped phrase {expected!r} (add it to {PHRASES_FILE.name} after review)"
        if evidence.code not in phrase.codes:
            return (
                f"phrase {expected!r} maps to {list(phrase.codes)}, but {evidence.kind} "
                f"{evidence.describe()} has code {evidence.code!r}"
            )
    return None


def used_phrase(expected: str) -> str | None:
    """The phrase-map key an expected string needs, if it needs one."""
    return expected if split_expected(expected).needs_phrase else None


# ---- exceptions -----------------------------------------------------------------------------


def exceptable(name: str) -> bool:
    """Whether the corpus README lets a stream of this name be client-specific."""
    return name.startswith(EXCEPTABLE_PREFIX) or name in ADMITTED_GAP_STREAMS


def load_exceptions(path: Path = EXCEPTIONS_FILE) -> dict[str, str]:
    """Read ``[streams]``: stream name → one-line reason; only exceptable names allowed."""
    out: dict[str, str] = {}
    for name, reason in _only_table(path, "streams").items():
        if not exceptable(name):
            raise ConfigError(
                f"{path.name}: {name!r} is not in a client-specific group (era-* or the "
                "admitted-gap stream); only those may be excepted"
            )
        if not (isinstance(reason, str) and reason.strip() and "\n" not in reason.strip()):
            raise ConfigError(f"{path.name}: {name!r} needs a one-line reason")
        out[name] = reason.strip()
    return out


# ---- corpus loading --------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    """A folder of stream files, its label and the protocol version the client declares."""

    label: str
    folder: Path
    protocol_version: str


@dataclass(frozen=True)
class StreamCase:
    """One stream file."""

    name: str
    path: Path
    data: dict[str, Any]


CORPUS_FOLDERS = tuple(sub for _, sub, _ in DEFAULT_CORPORA)
"""The corpora's folders, as pinned mirror paths."""


def default_corpora(mirror: Path | None = None) -> list[Corpus]:
    """The three pinned AG-UI corpora (draft, 1.1, 1.0) under ``mirror``, a folder laid out
    as the spec mirror; by default where :func:`codegen.sources.fetch_spec` has them (the
    spec mirror, or the download cache, downloaded there when need be)."""
    if mirror is None:
        from codegen.sources import SourceError, fetch_spec

        try:
            mirror = fetch_spec(*CORPUS_FOLDERS)
        except SourceError as exc:
            raise ConfigError(f"the AG-UI corpora cannot be had: {exc}") from exc
    return [Corpus(label, mirror / sub, version) for label, sub, version in DEFAULT_CORPORA]


def corpus_from_dir(folder: Path, protocol_version: str) -> Corpus:
    """A ``--corpus`` folder (of stream files, or holding ``streams/``), labelled by its name."""
    label = folder.resolve().name
    streams = folder / "streams"
    return Corpus(label, streams if streams.is_dir() else folder, protocol_version)


def load_streams(corpus: Corpus) -> tuple[list[StreamCase], list[str]]:
    """The corpus's streams, sorted by name, and problems with the folder itself.

    When the folder has a ``MANIFEST.txt`` (upstream pins its listing there), the listing
    is checked in both directions.
    """
    problems: list[str] = []
    if not corpus.folder.is_dir():
        return [], [f"corpus folder {corpus.folder} not found"]
    cases: list[StreamCase] = []
    for path in sorted(corpus.folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{path.name}: unreadable ({exc})")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("stream"), list):
            problems.append(f"{path.name}: not a stream file (no `stream` list)")
            continue
        if not isinstance(data.get("expect"), dict):
            problems.append(f"{path.name}: no `expect` object")
            continue
        name = data.get("name", path.stem)
        if name != path.stem:
            problems.append(f"{path.name}: name {name!r} differs from the file name")
        cases.append(StreamCase(path.stem, path, data))
    manifest = corpus.folder / "MANIFEST.txt"
    if manifest.is_file():
        listed = {
            line.strip()
            for line in manifest.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        }
        present = {path.name for path in corpus.folder.glob("*.json")}
        for name in sorted(listed - present):
            problems.append(f"MANIFEST.txt lists {name}, which is missing")
        for name in sorted(present - listed):
            problems.append(f"{name} is not listed in MANIFEST.txt")
    return cases, problems


# ---- running one stream through the pipeline ---------------------------------------------


@dataclass
class Observation:
    """What the client did with one stream."""

    outcome: str  # "completed" | "failed"
    error: Any = None  # the AgentProtoError raised, if any
    error_stage: str | None = None  # "request" | "consumer" | "stream"
    delivered: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)
    conversation: Any = None  # wire JSON of the conversation ({"messages", "state", ...})
    runs: list[tuple[str, str | None]] = field(default_factory=list)  # (status, error message)
    request: dict[str, Any] | None = None
    request_diagnostics: list[Any] = field(default_factory=list)

    def all_diagnostics(self) -> list[Any]:
        """Diagnostics of the request and of the stream, in that order."""
        return [*self.request_diagnostics, *self.diagnostics]

    def verdict(self, *, with_events: bool) -> dict[str, Any]:
        """What two feeds of the same bytes must agree on."""
        out: dict[str, Any] = {
            "outcome": self.outcome,
            "error": error_summary(self.error),
            "diagnostics": [
                (d.code, d.path, d.subject, d.index, d.message) for d in self.diagnostics
            ],
            "conversation": self.conversation,
            "runs": self.runs,
        }
        if with_events:
            out["delivered"] = self.delivered
        return out


def error_summary(error: Any) -> dict[str, Any] | None:
    """A JSON-able description of one of our errors (class, code, subject/path, message)."""
    if error is None:
        return None
    evidence = error_evidence(error)
    return {
        "class": type(error).__name__,
        "code": evidence.code,
        "subject": evidence.subject,
        "path": evidence.path,
        "message": str(error),
    }


def error_evidence(error: BaseException) -> Evidence:
    """Our error as evidence: ``.code``, or ``schema.<keyword>`` for a SchemaError."""
    from agentproto._core.errors import DecodeError, ProtocolError, SchemaError

    if isinstance(error, SchemaError):
        return Evidence(
            f"schema.{error.keyword}", str(error), None, error.location, kind="SchemaError"
        )
    if isinstance(error, ProtocolError):
        return Evidence(error.code, str(error), error.subject, None, kind="ProtocolError")
    if isinstance(error, DecodeError):
        return Evidence("decode", str(error), None, None, kind="DecodeError")
    code = getattr(error, "code", None)
    return Evidence(str(code or type(error).__name__), str(error), kind=type(error).__name__)


def diagnostic_evidence(diagnostic: Any) -> Evidence:
    """A :class:`~agentproto.Diagnostic` as evidence."""
    return Evidence(
        diagnostic.code, diagnostic.message, diagnostic.subject, diagnostic.path, "diagnostic"
    )


def _dump_json(value: Any) -> bytes:
    import orjson

    try:
        return orjson.dumps(value)
    except TypeError:  # e.g. an integer beyond 64 bits: the stdlib writes it verbatim
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def encode_frames(events: Iterable[Any]) -> list[bytes]:
    """Each raw event as one SSE frame (its JSON on ``data:`` lines)."""
    from agentproto._core.sse import encode_sse

    return [encode_sse(_dump_json(event)) for event in events]


def first_run_ids(events: Sequence[Any]) -> tuple[str | None, str | None]:
    """``threadId``/``runId`` of the stream's first ``RUN_STARTED`` (strings only)."""
    for event in events:
        if isinstance(event, dict) and event.get("type") == "RUN_STARTED":
            thread, run = event.get("threadId"), event.get("runId")
            return (
                thread if isinstance(thread, str) else None,
                run if isinstance(run, str) else None,
            )
    return None, None


def completed_input(case: StreamCase) -> dict[str, Any] | None:
    """The stream's ``input`` completed with ``threadId``/``runId`` (and ``messages``).

    Missing ids come from the first ``RUN_STARTED``, else from the stream's name. None
    when the stream has neither an input nor a ``RUN_STARTED`` to take ids from.
    """
    raw = case.data.get("input")
    thread, run = first_run_ids(case.data["stream"])
    if raw is None and thread is None and run is None:
        return None
    out = dict(raw) if isinstance(raw, dict) else {}
    out.setdefault("threadId", thread or f"t-{case.name}")
    out.setdefault("runId", run or f"r-{case.name}")
    out.setdefault("messages", [])
    return out


def peer_version(case: StreamCase) -> str | None:
    """The old peer's era the stream pins (``client.maxProtocolVersion``), if any."""
    client = case.data.get("client")
    version = client.get("maxProtocolVersion") if isinstance(client, dict) else None
    return version if isinstance(version, str) else None


def _conversation_json(consumer: Any) -> Any:
    try:
        return consumer.conversation.to_json()
    except Exception as exc:  # the observation must not crash on a half-failed consumer
        return {"<error>": f"{type(exc).__name__}: {exc}"}


def _runs(consumer: Any) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for run in getattr(consumer.verifier, "runs", ()):
        error = getattr(run, "error", None)
        message = getattr(error, "message", None) if error is not None else None
        out.append((str(run.status), message))
    return out


def build_request(
    case: StreamCase, run_input: dict[str, Any] | None, protocol_version: str
) -> tuple[dict[str, Any] | None, list[Any]]:
    """The ``RunAgentInput`` (wire JSON) the client sends to start the stream's run.

    It is built by the run-input builder (``next_run_input`` then ``dump_run_input``,
    tolerant mode) from the conversation the ``input`` describes, with the input's tools,
    context, forwarded props, parent run and resume entries: what a client holding that
    conversation sends for the stream's thread and run, declaring ``protocol_version``.
    The old peer's era (``client.maxProtocolVersion``) is passed as ``peer_version`` when
    ``next_run_input`` accepts one (it does not yet). Raises the builder's error when it refuses.
    """
    from agentproto._core.unset import UNSET
    from agentproto.agui._consume.consumer import Consumer
    from agentproto.agui._thread import run_input as _run_input

    base = run_input or {"threadId": f"t-{case.name}", "runId": f"r-{case.name}", "messages": []}
    seed = Consumer(
        run_input=base, protocol_version=protocol_version, peer_version=peer_version(case)
    )
    typed = seed.run_input
    assert typed is not None
    diagnostics: list[Any] = []
    kwargs: dict[str, Any] = {
        "thread_id": typed.thread_id,
        "run_id": typed.run_id,
        "tools": typed.tools or (),
        "context": typed.context or (),
        "forwarded_props": UNSET if typed.forwarded_props is None else typed.forwarded_props,
        "resume": typed.resume,
        "parent_run_id": typed.parent_run_id,
        "protocol_version": protocol_version,
        "diagnostics": diagnostics,
    }
    request = _run_input.next_run_input(seed.conversation, **kwargs)
    wire = _run_input.dump_run_input(
        request, diagnostics=diagnostics, peer_version=peer_version(case)
    )
    return wire, diagnostics


def observe(
    case: StreamCase,
    protocol_version: str,
    feeding: str = "frames",
    *,
    with_request: bool = True,
) -> Observation:
    """Run one stream through the real pipeline.

    Args:
        case: the stream.
        protocol_version: what the client declares.
        feeding: ``"frames"`` (one SSE frame per call), ``"whole"`` (all bytes in one
            call) or ``"random"`` (chunks of 1 to 16 bytes, seeded by the stream's name).
        with_request: also build the request the client sends (``request`` keys).
    """
    from agentproto._core.errors import AgentProtoError
    from agentproto.agui import dump_event
    from agentproto.agui._consume.consumer import Consumer

    obs = Observation(outcome="completed")
    run_input = completed_input(case)
    if with_request:
        try:
            obs.request, obs.request_diagnostics = build_request(case, run_input, protocol_version)
        except AgentProtoError as exc:
            obs.outcome, obs.error, obs.error_stage = "failed", exc, "request"
            return obs
    try:
        consumer = Consumer(
            run_input=run_input,
            protocol_version=protocol_version,
            peer_version=peer_version(case),
        )
    except AgentProtoError as exc:
        obs.outcome, obs.error, obs.error_stage = "failed", exc, "consumer"
        return obs
    frames = encode_frames(case.data["stream"])
    if feeding == "frames":
        pieces = frames
    else:
        data = b"".join(frames)
        if feeding == "whole":
            pieces = [data]
        else:
            rng = random.Random(zlib.crc32(case.name.encode()))
            pieces, at = [], 0
            while at < len(data):
                step = rng.randint(1, 16)
                pieces.append(data[at : at + step])
                at += step
    try:
        for piece in pieces:
            obs.delivered += [dump_event(event) for event in consumer.feed_bytes(piece)]
        obs.delivered += [dump_event(event) for event in consumer.close()]
    except AgentProtoError as exc:
        obs.outcome, obs.error, obs.error_stage = "failed", exc, "stream"
    obs.diagnostics = list(consumer.diagnostics)
    obs.conversation = _conversation_json(consumer)
    obs.runs = _runs(consumer)
    return obs


# ---- checking the expectations -----------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """One unmet expectation: the ``expect`` key and why."""

    key: str
    reason: str


def check(
    expect: Mapping[str, Any], obs: Observation, phrases: Mapping[str, Phrase]
) -> list[Failure]:
    """Every base ``expect`` key checked against one observation."""
    failures: list[Failure] = []

    def fail(key: str, reason: str | None) -> None:
        if reason is not None:
            failures.append(Failure(key, reason))

    unknown = set(expect) - set(BASE_EXPECT_KEYS)
    for key in sorted(unknown):
        fail(key, "unknown expect key (the runner does not know how to check it)")

    error_text = ""
    if obs.error is not None:
        error_text = f" ({obs.error_stage}: {type(obs.error).__name__}: {obs.error})"

    if "outcome" in expect:
        want = expect["outcome"]
        if want not in ("completed", "failed"):
            fail("outcome", f"unknown outcome {want!r}")
        elif want != obs.outcome:
            fail("outcome", f"expected {want}, got {obs.outcome}{error_text}")

    if "errorContains" in expect:
        if obs.error is None:
            fail(
                "errorContains",
                f"no error raised (expected one saying {expect['errorContains']!r})",
            )
        else:
            fail(
                "errorContains",
                wording_mismatch(expect["errorContains"], error_evidence(obs.error), phrases),
            )

    if "runError" in expect:
        fail("runError", _run_error_mismatch(expect["runError"], obs.runs))

    types = [event.get("type") for event in obs.delivered]
    if "eventTypes" in expect and list(expect["eventTypes"]) != types:
        fail("eventTypes", f"expected {expect['eventTypes']}, delivered {types}")
    for kind in expect.get("eventTypesAbsent", ()):
        if kind in types:
            fail("eventTypesAbsent", f"{kind} was delivered (at {types.index(kind)})")
    for key, value in expect.get("eventPaths", {}).items():
        fail("eventPaths", event_path_mismatch(obs.delivered, key, value))
    for key in expect.get("eventAbsentPaths", ()):
        fail("eventAbsentPaths", event_absent_mismatch(obs.delivered, key))

    diagnostics = obs.all_diagnostics()
    for wanted in expect.get("warnings", ()):
        fail("warnings", _warning_mismatch(wanted, diagnostics, phrases))
    if expect.get("noWarnings") is True and diagnostics:
        shown = "; ".join(diagnostic_evidence(d).describe() for d in diagnostics[:3])
        more = f" (+{len(diagnostics) - 3} more)" if len(diagnostics) > 3 else ""
        fail("noWarnings", f"{len(diagnostics)} warning(s): {shown}{more}")

    conversation = obs.conversation if isinstance(obs.conversation, dict) else {}
    messages = conversation.get("messages", _MISSING)
    if "messageCount" in expect:
        if not isinstance(messages, list):
            fail("messageCount", f"no messages readable: {_show(obs.conversation)}")
        elif len(messages) != expect["messageCount"]:
            fail(
                "messageCount",
                f"expected {expect['messageCount']}, got {len(messages)}: {_show(messages, 200)}",
            )
    if "messages" in expect:
        if messages is _MISSING:
            fail("messages", f"no messages readable: {_show(obs.conversation)}")
        else:
            fail("messages", subset_mismatch(expect["messages"], messages))
    if "state" in expect:
        state = conversation.get("state", _MISSING)
        if state is _MISSING:
            fail("state", f"no state readable: {_show(obs.conversation)}")
        else:
            fail("state", subset_mismatch(expect["state"], state))

    if "request" in expect or "requestAbsentPaths" in expect:
        if obs.request is None:
            reason = f"no request was built{error_text}"
            for key in ("request", "requestAbsentPaths"):
                if key in expect:
                    fail(key, reason)
        else:
            if "request" in expect:
                fail("request", subset_mismatch(expect["request"], obs.request))
            for dotted in expect.get("requestAbsentPaths", ()):
                value = resolve_dotted(obs.request, dotted)
                if value is not _MISSING:
                    fail("requestAbsentPaths", f"{dotted}: present ({_show(value)})")
    return failures


def _run_error_mismatch(want: Any, runs: Sequence[tuple[str, str | None]]) -> str | None:
    failed = [message for status, message in runs if status == "failed"]
    if not failed:
        return f"no run failed (runs: {runs})"
    if want is True:
        return None
    if isinstance(want, str):
        if any(message is not None and want in message for message in failed):
            return None
        return f"no failed run's RUN_ERROR message contains {want!r} (failed: {failed})"
    return f"unsupported runError value {want!r}"


def _warning_mismatch(
    wanted: str, diagnostics: Sequence[Any], phrases: Mapping[str, Phrase]
) -> str | None:
    if not diagnostics:
        return f"no warning at all (expected one saying {wanted!r})"
    reasons = []
    for diagnostic in diagnostics:
        reason = wording_mismatch(wanted, diagnostic_evidence(diagnostic), phrases)
        if reason is None:
            return None
        reasons.append(reason)
    # closest first: a warning that has every token but the wrong code or no mapped phrase
    reasons.sort(key=lambda reason: reason.startswith("token(s)"))
    if len(reasons) == 1:
        return reasons[0]
    return (
        f"no warning says {wanted!r}; closest: {reasons[0]} (+{len(reasons) - 1} other warning(s))"
    )


# ---- running corpora -----------------------------------------------------------------------


@dataclass
class StreamResult:
    """The verdict on one stream."""

    corpus: str
    name: str
    status: str  # "passed" | "failed" | "excepted" | "stale" (excepted, yet passes)
    failures: list[Failure]  # the stream's unmet expectations (none when passed or stale)
    observation: Observation | None
    exception: str | None = None

    @property
    def id(self) -> str:
        """``<corpus label>/<stream name>``."""
        return f"{self.corpus}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        """Details for the ``--json`` report."""
        obs = self.observation
        return {
            "status": self.status,
            "failures": [{"key": f.key, "reason": f.reason} for f in self.failures],
            "exception": self.exception,
            "outcome": obs.outcome if obs else None,
            "error": error_summary(obs.error) if obs else None,
            "errorStage": obs.error_stage if obs else None,
            "diagnostics": [d.code for d in obs.all_diagnostics()] if obs else [],
            "eventTypes": [e.get("type") for e in obs.delivered] if obs else [],
        }


@dataclass
class CorpusResult:
    """The verdicts on one corpus."""

    corpus: Corpus
    streams: list[StreamResult]
    problems: list[str]
    phrases_needed: set[str] = field(default_factory=set)

    def count(self, status: str) -> int:
        """How many streams have ``status``."""
        return sum(1 for result in self.streams if result.status == status)

    def summary_line(self) -> str:
        """``<label>: P passed, F failed, E excepted`` (stale exceptions count as failed)."""
        failed = self.count("failed") + self.count("stale")
        return (
            f"{self.corpus.label}: {self.count('passed')} passed, {failed} failed, "
            f"{self.count('excepted')} excepted"
        )

    @property
    def ok(self) -> bool:
        """No failure, no stale exception, no problem with the folder."""
        return not self.problems and all(r.status in ("passed", "excepted") for r in self.streams)


def run_stream(
    case: StreamCase,
    corpus: Corpus,
    phrases: Mapping[str, Phrase],
    exceptions: Mapping[str, str],
) -> StreamResult:
    """Run, check and classify one stream (its consistency across feedings included)."""
    failures: list[Failure] = []
    try:
        obs = observe(case, corpus.protocol_version, "frames")
    except Exception as exc:  # a crash in the pipeline is a failure, not a runner crash
        failures.append(Failure("pipeline", f"crashed: {type(exc).__name__}: {exc}"))
        obs = None
    if obs is not None:
        failures += check(case.data["expect"], obs, phrases)
        failures += _consistency(case, corpus, obs)
    reason = exceptions.get(case.name)
    if reason is None:
        status = "failed" if failures else "passed"
    else:
        status = "excepted" if failures else "stale"
    return StreamResult(corpus.label, case.name, status, failures, obs, reason)


def _consistency(case: StreamCase, corpus: Corpus, reference: Observation) -> list[Failure]:
    failures = []
    for feeding in ("whole", "random"):
        try:
            other = observe(case, corpus.protocol_version, feeding, with_request=False)
        except Exception as exc:
            failures.append(
                Failure("chunking", f"{feeding} feed crashed: {type(exc).__name__}: {exc}")
            )
            continue
        # one call loses the events delivered before a fatal error inside it, so the
        # delivered events are compared only on success
        with_events = reference.error is None and other.error is None
        want = reference.verdict(with_events=with_events)
        got = other.verdict(with_events=with_events)
        if want != got:
            differing = [key for key in want if want[key] != got[key]]
            key = differing[0]
            failures.append(
                Failure(
                    "chunking",
                    f"{feeding} feed differs from frame-by-frame on {differing}: "
                    f"{_show(got[key], 160)} vs {_show(want[key], 160)}",
                )
            )
    return failures


def run_corpus(
    corpus: Corpus, phrases: Mapping[str, Phrase], exceptions: Mapping[str, str]
) -> CorpusResult:
    """Run every stream of one corpus."""
    cases, problems = load_streams(corpus)
    results = [run_stream(case, corpus, phrases, exceptions) for case in cases]
    needed = {key for case in cases for key in phrases_needed(case)}
    return CorpusResult(corpus, results, problems, needed)


def report(results: Sequence[CorpusResult], out: Any = sys.stdout) -> None:
    """Print one line per corpus, then each failure with its key and reason."""
    for result in results:
        print(result.summary_line(), file=out)
    for result in results:
        for problem in result.problems:
            print(f"\n{result.corpus.label}: corpus problem: {problem}", file=out)
        for stream in result.streams:
            if stream.status == "failed":
                print(f"\nFAIL {stream.id}", file=out)
                for failure in stream.failures:
                    print(f"  {failure.key}: {failure.reason}", file=out)
            elif stream.status == "stale":
                print(f"\nSTALE {stream.id}", file=out)
                print(
                    f"  exception: excepted ({stream.exception}) but passes; remove it from "
                    f"{EXCEPTIONS_FILE.name}",
                    file=out,
                )


def to_json(results: Sequence[CorpusResult], phrases: Mapping[str, Phrase]) -> dict[str, Any]:
    """The ``--json`` document."""
    used = {key for result in results for key in result.phrases_needed}
    return {
        "corpora": {
            result.corpus.label: {
                "folder": str(result.corpus.folder),
                "protocolVersion": result.corpus.protocol_version,
                "passed": result.count("passed"),
                "failed": result.count("failed") + result.count("stale"),
                "excepted": result.count("excepted"),
                "problems": result.problems,
                "streams": {stream.name: stream.to_json() for stream in result.streams},
            }
            for result in results
        },
        "unusedPhrases": sorted(set(phrases) - used),
    }


def phrases_needed(case: StreamCase) -> set[str]:
    """The phrase-map keys a stream's base ``expect`` needs."""
    expect = case.data["expect"]
    texts = list(expect.get("warnings", ()))
    if "errorContains" in expect:
        texts.append(expect["errorContains"])
    return {text for text in texts if used_phrase(text) is not None}


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.agui_runner",
        description="Run AG-UI conformance corpora through agentproto's consumer.",
    )
    parser.add_argument(
        "--corpus",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a folder of stream files (repeatable); default: the three mirrored corpora",
    )
    parser.add_argument(
        "--protocol-version",
        default="1.0",
        metavar="V",
        help='version the client declares for --corpus folders (default "1.0")',
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write details as JSON")
    parser.add_argument("--phrases", type=Path, default=PHRASES_FILE, help=argparse.SUPPRESS)
    parser.add_argument("--exceptions", type=Path, default=EXCEPTIONS_FILE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        phrases = load_phrases(args.phrases)
        exceptions = load_exceptions(args.exceptions)
        if args.corpus:
            corpora = [corpus_from_dir(folder, args.protocol_version) for folder in args.corpus]
        else:
            corpora = default_corpora()
    except (ConfigError, OSError, tomllib.TOMLDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results = [run_corpus(corpus, phrases, exceptions) for corpus in corpora]
    report(results)
    if args.json is not None:
        document = to_json(results, phrases)
        args.json.write_text(
            json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
