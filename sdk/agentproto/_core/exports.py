"""Public names shown where users import them: :func:`export` sets ``__module__``.

The code of a public name lives in a private subpackage; its public module
re-exports it. Reprs, tracebacks, pickles and generated docs read ``__module__``,
so each public module hands its ``__all__`` to :func:`export`, which names it as
the home of every class and function defined in agentproto. A name exported by
several public modules is shown at the shortest path: ``agentproto.acp.Agent``
rather than ``agentproto.acp.agent.Agent``, whichever imports first. A class's
own string annotations are evaluated first, in the module that wrote them, so that
:func:`typing.get_type_hints` still reads them after the move.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["export"]


def export(module: str, namespace: Mapping[str, Any], names: Iterable[str]) -> None:
    """Set ``__module__`` of each of ``names`` in ``namespace`` to ``module``.

    Only classes and functions of agentproto are renamed, and only when their
    home is private or a public module below ``module``; a typing alias, a
    constant or a name from another library is left as it is. A compiled class or function
    whose ``__module__`` cannot be written keeps its own.
    """
    for name in names:
        value = namespace[name]
        if not isinstance(value, type) and not callable(value):
            continue
        home = getattr(value, "__module__", None)
        if not isinstance(home, str) or not home.startswith("agentproto."):
            continue
        private = any(part.startswith("_") for part in home.split("."))
        if not private and not home.startswith(module + "."):
            continue
        if isinstance(value, type):
            _resolve_annotations(value)
        with contextlib.suppress(AttributeError, TypeError):
            value.__module__ = module


def _resolve_annotations(cls: type) -> None:
    """Evaluate the class's own string annotations where it was written: once its
    ``__module__`` names the public module, :func:`typing.get_type_hints` would look
    its names up there. One a type checker alone can read is left as written."""
    own = inspect.get_annotations(cls)
    if not own or not any(isinstance(hint, str) for hint in own.values()):
        return
    written = sys.modules[cls.__module__].__dict__
    resolved = {}
    for name, hint in own.items():
        try:
            resolved[name] = eval(hint, written, dict(vars(cls))) if isinstance(hint, str) else hint
        except Exception:  # e.g. a name imported under TYPE_CHECKING only
            resolved[name] = hint
    with contextlib.suppress(AttributeError, TypeError):
        cls.__annotations__ = resolved
