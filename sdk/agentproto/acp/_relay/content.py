"""The items inside ACP updates whose shape differs between v1 and v2: diffs, terminals, commands.

Theory of operation
-------------------
Most list items (content blocks, locations, plan entries) have one wire shape
in both versions and go through the adapters' tolerant loading unchanged.
Four kinds of item do not, and are converted here, typed item in, wire object
out (:func:`items_to_v2`, :func:`items_to_v1`); the adapters call them on every
list an update carries.

**Diffs.** A v1 diff holds a path and the old and new text of the file (no old
text: a new file); a v2 diff holds structured ``changes`` and optional
``git_patch`` text. v1 → v2 gives one ``add`` or ``modify`` change of a text
file and the patch of the whole file (:mod:`agentproto.acp._relay.gitpatch`). v2 →
v1 gives one v1 diff per change when every change is an ``add`` or ``modify``
whose patch section shows the file whole; any other v2 diff (a delete, move or
copy, partial context, no patch) has no v1 diff form and is sent as text
content holding its patch text (else a line per change), reported as
``lossy-conversion`` (by :class:`~agentproto.acp.V2ToV1Adapter` once per entity
and item: content resent whole does not report the same lost diff again).

**Terminals.** The two versions' terminal items look alike but are different
things (the v2 terminal-output RFD): a v1 terminal is a process the *client*
runs for the agent (``terminal/create``), a v2 terminal an *agent*-owned
display stream fed by ``terminal_update`` / ``terminal_output_chunk``. They
are never converted by shape. v1 → v2: the item is left out, reported (the
adapters convert notifications and do not run the v1 client terminal methods
that would own the process). v2 → v1: a stateful adapter shows the terminal as
text content holding its output so far (:func:`terminal_text`: decoded,
escape sequences and control characters removed) and resends it as output
arrives; a stateless adapter holds no output and leaves the item out,
reported.

**Commands.** v2 commands and command inputs are tagged (``type``); v1 ones are
not. v1 → v2 adds the tags; v2 → v1 strips them, and leaves out a command or
input of a kind v1 lacks, reported as ``not-convertible``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from agentproto._core.errors import UsageError
from agentproto.acp import _generated_v1 as v1
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import CONVERTER as v2_converter
from agentproto.acp._protocol.wire import make_v1_converter
from agentproto.acp._relay.gitpatch import make_patch, read_sections, whole_texts
from agentproto.acp._state.entities import TerminalState

__all__ = ["Report", "items_to_v1", "items_to_v2", "terminal_text", "v1_converter"]

Report = Callable[[str, str, str], None]
"""How a conversion reports a problem: ``report(code, message, subject)``."""

v1_converter = make_v1_converter()
_C = TypeVar("_C")


def _enum(name: str, value: str) -> str:
    """``value`` of the generated v2 enumeration ``name`` (fails loudly once it is gone)."""
    if value not in v2.ENUM_VALUES.get(name, ()):
        raise UsageError(
            "acp.stale-description",
            f"the v2 schema has no {name} {value!r}: edit sdk/agentproto/acp/_relay/content.py",
        )
    return value


_GIT_PATCH = _enum("DiffPatchFormat", "git_patch")
_TEXT_FILE = _enum("DiffFileType", "text")
_WHOLE_FILE = (v2.AddDiffChange, v2.ModifyDiffChange)
# the item classes whose shape differs between the versions (all others pass as they are)
_V1_SHAPES = frozenset({v1.DiffToolCallContent, v1.AvailableCommand, v1.TerminalToolCallContent})
V2_SHAPES = frozenset(
    {
        v2.DiffToolCallContent,
        v2.CommandAvailableCommand,
        v2.OtherAvailableCommand,
        v2.TerminalToolCallContent,
    }
)

# ---- v1 -> v2 ---------------------------------------------------------------------------------


def _diff_to_v2(item: v1.DiffToolCallContent) -> v2.DiffToolCallContent:
    change_cls = v2.AddDiffChange if item.old_text is None else v2.ModifyDiffChange
    text = make_patch(item.path, item.old_text, item.new_text)
    return v2.DiffToolCallContent(
        changes=[change_cls(path=item.path, file_type=_TEXT_FILE)],
        patch=None if text is None else v2.DiffPatch(format=_GIT_PATCH, text=text),
        meta=item.meta,
        extra=item.extra,
    )


def _rebuild_command(
    item: Any, hint: Any, command: Callable[..., _C], command_input: Callable[..., Any]
) -> _C:
    """A command of one version as ``command`` of the other, its input ``hint`` as
    ``command_input`` (the two versions' fields are the same but for the tags)."""
    return command(
        name=item.name,
        description=item.description,
        input=None
        if hint is None
        else command_input(hint=hint.hint, meta=hint.meta, extra=hint.extra),
        meta=item.meta,
        extra=item.extra,
    )


def _command_to_v2(item: v1.AvailableCommand) -> v2.CommandAvailableCommand:
    return _rebuild_command(
        item, item.input, v2.CommandAvailableCommand, v2.TextAvailableCommandInput
    )


def items_to_v2(items: list[Any], wires: list[Any], report: Report) -> list[Any]:
    """The v2 wire objects of a v1 list (``wires``: its items as v1 dumped them).

    Args:
        items: the typed v1 items.
        wires: their v1 wire objects, in the same order.
        report: where problems go.
    """
    if all(item.__class__ not in _V1_SHAPES for item in items):
        return wires
    out = []
    for item, wire in zip(items, wires, strict=True):
        if isinstance(item, v1.DiffToolCallContent):
            out.append(v2_converter.dump(_diff_to_v2(item)))
        elif isinstance(item, v1.AvailableCommand):
            out.append(v2_converter.dump(_command_to_v2(item)))
        elif isinstance(item, v1.TerminalToolCallContent):
            report(
                "not-convertible",
                f"the v1 terminal {item.terminal_id!r} is left out of the tool call content: a "
                "v1 terminal is a process the client runs (terminal/create), not a v2 "
                "agent-owned terminal, and the adapter does not run the v1 terminal methods",
                "terminal",
            )
        else:
            out.append(wire)
    return out


# ---- v2 -> v1 ---------------------------------------------------------------------------------


def _text(text: str) -> dict[str, Any]:
    wire: dict[str, Any] = v1_converter.dump(
        v1.ContentToolCallContent(content=v1.TextContentBlock(text=text))
    )
    return wire


def _change_line(change: Any) -> str:
    old = getattr(change, "old_path", None)
    path = getattr(change, "path", None)
    return " ".join(
        [str(change.operation), *([old, "->"] if old else []), *([path] if path else [])]
    )


def _whole_file_diffs(item: v2.DiffToolCallContent) -> list[v1.DiffToolCallContent] | None:
    """One v1 diff per change of ``item``; ``None`` unless its patch shows every file whole."""
    patch = item.patch
    sections = None if patch is None or patch.format != _GIT_PATCH else read_sections(patch.text)
    by_path = {s.new_path or s.old_path: s for s in sections or ()}
    out = []
    for change in item.changes:
        if not isinstance(change, _WHOLE_FILE) or change.path not in by_path:
            return None
        texts = whole_texts(by_path[change.path])
        if texts is None or (texts[0] is None) != isinstance(change, v2.AddDiffChange):
            return None
        out.append(
            v1.DiffToolCallContent(
                path=change.path, old_text=texts[0], new_text=texts[1], meta=item.meta
            )
        )
    return out or None


def _diff_to_v1(item: v2.DiffToolCallContent, report: Report) -> list[dict[str, Any]]:
    """v1 diffs, one per change, or the text item that stands for the whole diff."""
    diffs = _whole_file_diffs(item)
    if diffs is not None:
        return [v1_converter.dump(diff) for diff in diffs]
    report(
        "lossy-conversion",
        "a v2 diff v1 cannot show as diffs of whole files (a delete, move or copy, a patch "
        "without the whole file, or no patch) is sent as text content",
        "diff",
    )
    if item.patch is not None:
        return [_text(item.patch.text)]
    return [_text("\n".join(_change_line(change) for change in item.changes))]


def _command_to_v1(item: v2.CommandAvailableCommand, report: Report) -> v1.AvailableCommand:
    hint = item.input
    if hint is not None and not isinstance(hint, v2.TextAvailableCommandInput):
        report(
            "not-convertible",
            f"the input of the command {item.name!r} is of a kind v1 lacks ({hint.type!r}): "
            "sent without it",
            "available_commands_update",
        )
        hint = None
    return _rebuild_command(item, hint, v1.AvailableCommand, v1.UnstructuredCommandInput)


def items_to_v1(
    items: list[Any],
    wires: list[Any],
    terminals: Mapping[str, TerminalState] | None,
    report: Report,
) -> list[Any]:
    """The v1 wire objects of a v2 list (``wires``: its items as v2 dumped them).

    Args:
        items: the typed v2 items.
        wires: their v2 wire objects, in the same order.
        terminals: the session's terminals (stateful), ``None`` (stateless).
        report: where problems go.
    """
    if all(item.__class__ not in V2_SHAPES for item in items):
        return wires
    out: list[Any] = []
    for item, wire in zip(items, wires, strict=True):
        if isinstance(item, v2.DiffToolCallContent):
            out += _diff_to_v1(item, report)
        elif isinstance(item, v2.CommandAvailableCommand):
            out.append(v1_converter.dump(_command_to_v1(item, report)))
        elif isinstance(item, v2.OtherAvailableCommand):
            report(
                "not-convertible",
                f"the command {item.name!r} is of a kind v1 lacks ({item.type!r}): left out",
                "available_commands_update",
            )
        elif isinstance(item, v2.TerminalToolCallContent) and terminals is None:
            report(
                "not-convertible",
                f"the v2 terminal {item.terminal_id!r} is left out of the tool call content: "
                "a stateless adapter holds no terminal output to show as text, and a v1 "
                "terminal is a process the client runs",
                "terminal",
            )
        elif isinstance(item, v2.TerminalToolCallContent) and terminals is not None:
            terminal = terminals.get(item.terminal_id)
            out.append(_text(terminal_text(None if terminal is None else terminal.output)))
        else:
            out.append(wire)
    return out


# ---- terminal bytes as text -------------------------------------------------------------------

# ESC sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), then any other ESC + byte
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def terminal_text(data: bytearray | bytes | None) -> str:
    """Terminal output bytes as plain text for a v1 client.

    The bytes are decoded as UTF-8 (invalid bytes become U+FFFD), escape
    sequences and control characters other than newline and tab are removed,
    and a carriage return inside a line keeps only what follows it (as a
    terminal overwrites the line).
    """
    if not data:
        return ""
    text = _ESCAPE.sub("", bytes(data).decode("utf-8", "replace"))
    lines = text.replace("\r\n", "\n").split("\n")
    lines = [line.rstrip("\r").rsplit("\r", 1)[-1] for line in lines]
    return _CONTROL.sub("", "\n".join(lines))
