"""Optional dependencies: a feature whose library is missing fails when used, not when imported.

A public name that needs an optional library (``HttpAgent`` needs httpx, the
``agentproto[http]`` extra) stays importable without it, so that ``from ... import
*``, ``hasattr`` and ``dir()`` work on every public module. In its place stands
:func:`stand_in`, a class that raises :class:`~agentproto.MissingDependencyError`
when it is called; :func:`missing` turns the ``ModuleNotFoundError`` of an import
done on use into that error.
"""

from __future__ import annotations

from typing import Any, NoReturn

from agentproto._core.errors import MissingDependencyError

__all__ = ["missing", "stand_in"]


def stand_in(feature: str, module: str, install: str) -> type:
    """A class named ``feature`` that raises :class:`MissingDependencyError` when called.

    Args:
        feature: the public dotted name it stands for (``"agentproto.agui.HttpAgent"``).
        module: the missing module (``"httpx"``).
        install: the command that installs it (``"pip install 'agentproto[http]'"``).
    """
    home, _, name = feature.rpartition(".")

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise MissingDependencyError(feature, module, install)

    namespace = {
        "__new__": refuse,
        "__init_subclass__": refuse,
        "__module__": home,
        "__qualname__": name,
        "__slots__": (),
        "__doc__": f"Stands in for {feature}, which needs {module} ({install}): "
        "calling it raises MissingDependencyError.",
    }
    return type(name, (), namespace)


def missing(error: ModuleNotFoundError, feature: str, install: str) -> MissingDependencyError:
    """The error to raise when importing a dependency of ``feature`` failed with ``error``
    (it names the top-level package that is missing)."""
    module = (error.name or "").partition(".")[0] or "a dependency"
    return MissingDependencyError(feature, module, install)
