"""The ``argparse`` directive: a command's reference rendered from its parser at build time.

``agentproto`` declares its commands in one :mod:`argparse` parser
(:func:`agentproto.cli.build_parser`); the CLI page shows that parser, never a copy, so
the page cannot go stale. In MyST::

    ```{argparse} agentproto.cli:build_parser
    ```

renders, for the program and then for every sub-command (depth first, in declaration
order), a section titled with the command line (``agentproto acp run``) holding its
description, its usage line and a list of its arguments with their help and defaults.
The usage is formatted 88 columns wide whatever the terminal, so a build is the same
everywhere.
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Iterator
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

WIDTH = "88"


def _load(spec: str) -> argparse.ArgumentParser:
    """``module:function``: the parser the function returns."""
    module, _, name = spec.partition(":")
    parser = getattr(importlib.import_module(module), name)()
    if not isinstance(parser, argparse.ArgumentParser):
        raise TypeError(f"{spec} returned {type(parser).__name__}, not an ArgumentParser")
    return parser


def _commands(
    parser: argparse.ArgumentParser, path: str, summary: str | None
) -> Iterator[tuple[str, str | None, argparse.ArgumentParser]]:
    """The parser, then each sub-command's: (command line, one-line help, parser)."""
    yield path, summary, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}", helps.get(name))


def _usage(parser: argparse.ArgumentParser) -> str:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        return parser.format_usage().strip()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _argument(action: argparse.Action) -> tuple[str, str]:
    """How an argument is written, and what it does (its default appended)."""
    if action.option_strings:
        metavar = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
        written = ", ".join(f"{option}{metavar}" for option in action.option_strings)
    elif isinstance(action, argparse._SubParsersAction):
        written = str(action.metavar or "COMMAND")
    else:
        written = str(action.metavar or action.dest)
    text = action.help or ""
    default = action.default
    if (
        action.option_strings
        and action.nargs != 0
        and default not in (None, False, argparse.SUPPRESS)
        and "default" not in text
    ):
        text += f" (default: {default})"
    return written, text


class ArgparseDirective(SphinxDirective):
    """Render a parser and its sub-commands (the argument is ``module:function``)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        parser = _load(self.arguments[0])
        self.env.note_dependency(importlib.import_module(self.arguments[0].split(":")[0]).__file__)
        sections: list[nodes.Node] = []
        for path, summary, command in _commands(parser, parser.prog, None):
            section = nodes.section(
                ids=[nodes.make_id(path)], names=[nodes.fully_normalize_name(path)]
            )
            section += nodes.title("", "", nodes.literal(path, path))
            about = command.description or summary
            if about:
                section += nodes.paragraph(about, about)
            usage = _usage(command)
            section += nodes.literal_block(usage, usage, language="text")
            items = nodes.definition_list()
            for action in command._actions:
                if isinstance(action, argparse._HelpAction):
                    continue
                written, text = _argument(action)
                if isinstance(action, argparse._SubParsersAction):
                    text = "one of: " + ", ".join(action.choices)
                item = nodes.definition_list_item()
                item += nodes.term("", "", nodes.literal(written, written))
                item += nodes.definition("", nodes.paragraph(text, text))
                items += item
            if items.children:
                section += items
            self.state.document.note_implicit_target(section, section)
            sections.append(section)
        return sections


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("argparse", ArgparseDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
