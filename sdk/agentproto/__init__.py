"""agentproto: typed SDK for the AG-UI and ACP v2 agent streaming protocols.

Protocol APIs live in :mod:`agentproto.agui` and :mod:`agentproto.acp`. This package
exports what both share: the exceptions both raise, rooted at :class:`AgentProtoError`
(the whole tree, both protocols' classes included, is drawn in
:mod:`agentproto._core.errors`), and :class:`Diagnostic`, the record of a problem
the protocols say to tolerate.
``agentproto.__version__`` is the installed distribution's version, from its metadata
(whose one source is ``pyproject.toml``).

The library logs on the ``agentproto`` logger and those below it (``agentproto.agui``,
``agentproto.acp``). ``agentproto`` carries a :class:`logging.NullHandler`, so an
application that configures no logging sees none of their records on stderr, and one
that does gets them all.
"""

import logging as _logging
from typing import TYPE_CHECKING, Any

from agentproto._core.diagnostics import Diagnostic, log_diagnostics
from agentproto._core.errors import (
    AgentProtoError,
    CursorError,
    CursorExpiredError,
    DecodeError,
    InternalError,
    LimitError,
    MissingDependencyError,
    PatchError,
    ProtocolError,
    SchemaError,
    StoreError,
    UnknownStreamError,
    UsageError,
)
from agentproto._core.exports import export
from agentproto._core.wire.converter import WireConverter

# the classes both protocols raise; each protocol package exports its own (the whole
# tree is drawn in agentproto._core.errors)
__all__ = [
    "AgentProtoError",
    "CursorError",
    "CursorExpiredError",
    "DecodeError",
    "Diagnostic",
    "InternalError",
    "LimitError",
    "MissingDependencyError",
    "PatchError",
    "ProtocolError",
    "SchemaError",
    "StoreError",
    "UnknownStreamError",
    "UsageError",
    "WireConverter",
    "log_diagnostics",
]

export(__name__, globals(), [name for name in __all__ if name in globals()])

# the library's loggers are all below this one; with a handler here, a record that finds no
# other handler is dropped instead of reaching logging's last resort (stderr)
_logging.getLogger("agentproto").addHandler(_logging.NullHandler())


__version__: str
"""The installed distribution's version (``pyproject.toml`` is its one source)."""

if not TYPE_CHECKING:  # for a type checker, ``__version__`` is the str declared above

    def __getattr__(name: str) -> Any:
        # ``__version__`` is read from the metadata on first use, so that ``import
        # agentproto`` does not pay for importing importlib.metadata
        if name == "__version__":
            from importlib.metadata import PackageNotFoundError, version

            try:
                found = version("agentproto")
            except PackageNotFoundError:  # a source tree on sys.path, never installed
                found = "0+unknown"
            globals()["__version__"] = found
            return found
        raise AttributeError(f"module 'agentproto' has no attribute {name!r}")
