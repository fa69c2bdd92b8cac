"""The one exception hierarchy of agentproto.

Every fatal problem the SDK reports is an instance of :class:`AgentProtoError`.
The branches separate who broke what, as h11 does:

* :class:`SchemaError`: a document does not match the published schema. It names
  the JSON Schema ``keyword`` that failed and the ``location`` (a JSON Pointer
  into the instance, ``""`` for the top level) exactly as a JSON Schema
  validator would report it.
* :class:`DecodeError`: bytes could not be framed or decoded (SSE, JSON Lines,
  JSON, UTF-8, base64, size and depth limits).
* :class:`ProtocolError`: the peer broke a behavioural rule of the protocol
  (ordering, lifecycle, attribution).
* :class:`UsageError`: the caller broke a rule (for example a producer emitting
  an event the protocol does not allow at that point).
* :class:`PatchError`: a well-formed JSON Patch could not be applied.
* :class:`LimitError`: input would take a container past a configured limit
  (entities of an ACP session, sessions of a store); it names the parameter.
* :class:`InternalError`: a bug in agentproto (or in a caller's hook) surfaced
  while processing input; the original exception is its ``__cause__``.
* :class:`MissingDependencyError` (also an ``ImportError``): a feature whose
  optional dependency is not installed was used; it names what to install.

Locations are JSON Pointers into untrusted input; one longer than
:data:`~agentproto._core.describe.MAX_POINTER_CHARS` keeps only its two ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from agentproto._core.describe import cut_pointer

__all__ = [
    "AgentProtoError",
    "DecodeError",
    "InternalError",
    "LimitError",
    "MissingDependencyError",
    "PatchError",
    "ProtocolError",
    "SchemaError",
    "UsageError",
]
"""The exception hierarchy, which :mod:`agentproto` exports as it stands here; the
helpers :func:`as_sdk_error` and :func:`chained` serve the SDK's own modules."""

_E = TypeVar("_E", bound=BaseException)


class AgentProtoError(Exception):
    """Root of every exception agentproto raises on purpose."""


class SchemaError(AgentProtoError, ValueError):
    """A document does not match the schema.

    ``keyword``, ``location`` and ``detail`` describe the first problem found; where
    the SDK parses or checks a whole document for a caller (``parse_event``,
    ``WireConverter.load``, the encoders' check, ...) it then looks on, and
    :attr:`problems` lists every problem of the document.

    Attributes:
        keyword: the JSON Schema keyword that rejected the document
            (``"type"``, ``"required"``, ``"oneOf"``, ``"const"``, ...).
        location: JSON Pointer of the rejected instance (``""`` is the root).
        detail: a human-readable explanation.
    """

    def __init__(
        self,
        keyword: str,
        location: str,
        detail: str,
        *,
        more: Sequence[SchemaError] = (),
    ) -> None:
        self.keyword = keyword
        self.location = location = cut_pointer(location)
        self.detail = detail
        self._more = tuple(more)
        message = f"{location or '<root>'}: {detail} [{keyword}]"
        if self._more:
            message += f" (and {len(self._more)} more problem(s), listed in .problems)"
        super().__init__(message)

    @property
    def problems(self) -> tuple[SchemaError, ...]:
        """Every problem found, this error's own first; each has ``keyword``,
        ``location`` and ``detail`` (``(self,)`` when only one was looked for)."""
        return (self, *self._more)

    def with_problems(self, problems: Sequence[SchemaError]) -> SchemaError:
        """The same error listing ``problems`` too (after its own; one at this error's
        keyword and location is left out as a repeat of it)."""
        mine = (self.keyword, self.location)
        more = [*self._more, *(p for p in problems if (p.keyword, p.location) != mine)]
        return SchemaError(self.keyword, self.location, self.detail, more=more)

    def at(self, prefix: str) -> SchemaError:
        """The same error with its location (and every problem's) moved under ``prefix``."""
        more = [problem.at(prefix) for problem in self._more]
        return SchemaError(self.keyword, prefix + self.location, self.detail, more=more)


class DecodeError(AgentProtoError, ValueError):
    """Bytes that could not be framed or decoded.

    Attributes:
        offset: byte offset into the input where the problem was found, when known.
        line: 1-based line number, for line-oriented inputs, when known.
    """

    def __init__(self, message: str, *, offset: int | None = None, line: int | None = None) -> None:
        self.offset = offset
        self.line = line
        where = []
        if line is not None:
            where.append(f"line {line}")
        if offset is not None:
            where.append(f"byte {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class ProtocolError(AgentProtoError):
    """The peer broke a behavioural rule of the protocol.

    Attributes:
        code: a stable machine-readable code (for example ``"run.not-started"``).
        subject: what the rule is about (an id, an event type), when there is one.
    """

    def __init__(self, code: str, message: str, *, subject: str | None = None) -> None:
        self.code = code
        self.subject = subject
        super().__init__(message)


class UsageError(AgentProtoError):
    """The caller asked for something the protocol does not allow.

    Attributes:
        code: a stable machine-readable code.
    """

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


class PatchError(AgentProtoError, ValueError):
    """A JSON Patch operation could not be applied; the document is unchanged.

    Attributes:
        index: index of the failing operation in the patch.
        path: the operation's ``path`` (or ``from``) that failed.
        limit: the name of the :class:`~agentproto.PatchLimits` field the patch
            exceeded, ``None`` when no limit was the cause.
    """

    def __init__(self, message: str, *, index: int, path: str, limit: str | None = None) -> None:
        self.index = index
        self.path = path
        self.limit = limit
        super().__init__(f"operation {index} ({cut_pointer(path)!r}): {message}")


class LimitError(AgentProtoError, ValueError):
    """Input would take a container past a configured limit; nothing was changed.

    Attributes:
        limit: the name of the parameter that sets the limit (raise it there).
        value: the limit's value.
    """

    def __init__(self, message: str, *, limit: str, value: int) -> None:
        self.limit = limit
        self.value = value
        super().__init__(f"{message} (limit {limit}={value}; raise it to accept more)")


class InternalError(AgentProtoError):
    """An unexpected exception while processing input: a bug, not the peer's fault.

    The stream that raised it is failed like for any fatal error; the original
    exception is chained as ``__cause__`` (and kept as :attr:`original`) so the
    bug stays visible.

    Attributes:
        original: the exception that was raised.
    """

    def __init__(self, stage: str, original: BaseException) -> None:
        self.original = original
        super().__init__(
            f"internal error in {stage}: {type(original).__name__}: {str(original)[:200]}"
        )


class MissingDependencyError(AgentProtoError, ImportError):
    """A feature was used whose optional dependency is not installed.

    Importing the feature works (``import *``, ``hasattr`` and ``dir()`` included);
    using it raises this error, which says what to install.

    Attributes:
        feature: what was used, e.g. ``"agentproto.agui.HttpAgent"``.
        name: the missing module, e.g. ``"httpx"`` (as for every ``ImportError``).
        install: the command that installs it, e.g. ``"pip install 'agentproto[http]'"``.
    """

    def __init__(self, feature: str, module: str, install: str) -> None:
        self.feature = feature
        self.install = install
        super().__init__(f"{feature} needs {module}: {install}", name=module)


def as_sdk_error(exc: BaseException, stage: str) -> AgentProtoError:
    """``exc`` itself when it is an SDK error, else an :class:`InternalError` chaining it."""
    if isinstance(exc, AgentProtoError):
        return exc
    error = InternalError(stage, exc)
    error.__cause__ = exc
    return error


def chained(error: _E, cause: BaseException | None) -> _E:
    """``error`` with ``cause`` as its ``__cause__``: ``raise chained(e, c)`` is ``raise e from c``.

    The modules of the compiled build (``hatch_build.py``) raise this way: mypyc drops
    the ``from`` clause of a ``raise`` (the cause, and the context hidden by ``from None``).
    """
    error.__cause__ = cause  # also hides the context, as ``from`` does
    return error
