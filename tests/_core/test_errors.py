"""The one exception tree: ``agentproto._core.errors`` holds every public exception class, and
its docstring draws them all, each with its bases and where it is exported."""

from __future__ import annotations

import builtins
import importlib
import re
from typing import Any, NamedTuple

import pytest

import agentproto
import agentproto.acp
import agentproto.agui
from agentproto._core import errors

PUBLIC_MODULES = (
    "agentproto",
    "agentproto.stores",
    "agentproto.agui",
    "agentproto.agui.asgi",
    "agentproto.agui.quirks",
    "agentproto.agui.schema",
    "agentproto.acp",
    "agentproto.acp.agent",
    "agentproto.acp.client",
    "agentproto.acp.connection",
    "agentproto.acp.schema",
    "agentproto.acp.schema_v1",
)
"""Every public module; an exception class any of them exports must be in the tree."""
EXPORTED_BY = {None: agentproto, "agui": agentproto.agui, "acp": agentproto.acp}
"""The public home a drawn line's ``[agui]`` / ``[acp]`` (or no mark) names; ``[unexported]``
names none."""

_LINE = re.compile(
    r"(?P<rails>(?:[│ ]   )*)(?P<branch>[├└]── )?(?P<name>\w+)"
    r"(?: \((?P<bases>[\w, ]+)\))?(?: = (?P<alias>\w+))?(?: \[(?P<where>agui|acp|unexported)\])?"
    r": (?P<when>\S.*)"
)


class Drawn(NamedTuple):
    """One line of the drawing."""

    name: str
    parent: str | None  # the class drawn above it, None for the root
    bases: tuple[str, ...]  # the builtin bases drawn in parentheses
    alias: str | None  # ``Name = Target``: an alias of Target
    where: str | None  # "agui", "acp", "unexported", or None for agentproto


def drawn_tree() -> dict[str, Drawn]:
    """The tree drawn in the module docstring (the literal block after its ``::`` line)."""
    doc = errors.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    drawn: dict[str, Drawn] = {}
    stack: list[str] = []
    for text in block.splitlines():
        line = text.removeprefix("    ")
        match = _LINE.fullmatch(line)
        assert match is not None, f"a line of the drawing does not parse: {line!r}"
        depth = len(match["rails"]) // 4 + (1 if match["branch"] else 0)
        assert depth <= len(stack), f"{line!r} is drawn below nothing"
        del stack[depth:]
        bases = tuple(b.strip() for b in (match["bases"] or "").split(",") if b.strip())
        name = match["name"]
        parent = stack[-1] if stack else None
        drawn[name] = Drawn(name, parent, bases, match["alias"], match["where"])
        stack.append(name)
    return drawn


def test_the_drawing_is_read() -> None:
    """The drawing parses, from the root down (an unreadable drawing must not pass vacuously)."""
    drawn = drawn_tree()
    assert drawn["AgentProtoError"].parent is None
    assert drawn["StateShapeError"].parent == "SchemaError"
    assert len(drawn) > 15


def test_the_drawing_is_exactly_the_modules_classes() -> None:
    """The tree draws every name of ``__all__`` and nothing else; each is a class of the
    module (or an alias of one)."""
    drawn = drawn_tree()
    assert sorted(drawn) == sorted(errors.__all__)
    for name in drawn:
        value = getattr(errors, name)
        assert isinstance(value, type) and issubclass(value, errors.AgentProtoError), name


@pytest.mark.parametrize("name", sorted(drawn_tree()))
def test_each_class_has_the_bases_drawn(name: str) -> None:
    """A drawn class's bases are the class drawn above it, then the builtins in parentheses;
    an alias is the very class it names."""
    line = drawn_tree()[name]
    cls = getattr(errors, name)
    if line.alias is not None:
        assert cls is getattr(errors, line.alias)
        return
    above = [] if line.parent is None else [getattr(errors, line.parent)]
    assert cls.__bases__ == (*above, *(getattr(builtins, base) for base in line.bases))


@pytest.mark.parametrize("name", sorted(drawn_tree()))
def test_each_class_is_exported_where_drawn(name: str) -> None:
    """A class marked ``[agui]`` / ``[acp]`` is exported by that protocol's package, one
    marked ``[unexported]`` by no public module, the others by ``agentproto``, as the same
    object."""
    line = drawn_tree()[name]
    if line.where == "unexported":
        homes = [importlib.import_module(module) for module in PUBLIC_MODULES]
        assert not [home.__name__ for home in homes if name in getattr(home, "__all__", ())]
        return
    home = EXPORTED_BY[line.where]
    assert name in home.__all__, f"{home.__name__} does not export {name}"
    assert getattr(home, name) is getattr(errors, name)


def _exported_exceptions() -> list[tuple[str, str, Any]]:
    found = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                found.append((module_name, name, value))
    return found


def test_every_exported_exception_is_in_the_tree() -> None:
    """Every exception class a public module exports is drawn in the tree under its name and
    is the class ``agentproto._core.errors`` holds under that name."""
    drawn = drawn_tree()
    exported = _exported_exceptions()
    assert len(exported) > 15
    for module_name, name, value in exported:
        assert name in drawn and name in errors.__all__, f"{module_name}.{name} is not drawn"
        assert getattr(errors, name) is value, f"{module_name}.{name} is another class"


def test_peer_protocol_error_is_a_deprecated_alias() -> None:
    """``PeerProtocolError`` is ``ProtocolError`` itself (it restated it), kept for one
    release, and the version error derives from ``ProtocolError``."""
    assert agentproto.acp.PeerProtocolError is agentproto.ProtocolError
    assert issubclass(agentproto.acp.UnsupportedVersionError, agentproto.ProtocolError)
    assert drawn_tree()["PeerProtocolError"].alias == "ProtocolError"


def test_a_closed_connection_is_not_a_protocol_error() -> None:
    """``ConnectionClosedError`` is a ``ConnectionError``, not a ``ProtocolError``, and its
    message says who closed the connection."""
    here = errors.ConnectionClosedError(
        "connection.closed", "the connection is closed", by_peer=False
    )
    peer = errors.ConnectionClosedError(
        "connection.closed", "the connection is closed", by_peer=True
    )
    assert not isinstance(here, errors.ProtocolError) and isinstance(here, ConnectionError)
    assert (here.by_peer, peer.by_peer) == (False, True)
    assert str(here) == "the connection is closed (closed here)"
    assert str(peer) == "the connection is closed (closed by the peer)"


def test_the_errors_page_draws_the_same_tree() -> None:
    """The errors page of the docs shows the docstring's drawing as it is (one tree, never
    two that drift)."""
    from tests.docblocks import ROOT

    drawing = (errors.__doc__ or "").split("::\n\n", 1)[1].split("\n\n", 1)[0]
    tree = "\n".join(line.removeprefix("    ") for line in drawing.splitlines())
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert f"```text\n{tree}\n```" in page
