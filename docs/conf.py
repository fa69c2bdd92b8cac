"""Sphinx configuration of the agentproto documentation (``nox -s docs`` builds it with
warnings as errors).

Sphinx, not MkDocs: the docstrings are written in reStructuredText with Sphinx roles
(``:class:``, ``:func:``, ``:mod:``) and Google-style sections, which autodoc and
napoleon read as they are; the guides are Markdown (MyST).
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "agentproto"
author = "the agentproto authors"
copyright = "2026, the agentproto authors"
try:
    release = importlib.metadata.version("agentproto")
except importlib.metadata.PackageNotFoundError:
    release = "0+unknown"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "builtin_refs",  # _ext/: references to builtins stay text (no intersphinx offline)
    "cli_reference",  # _ext/: the argparse directive, the CLI page from the parser
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_ext"]
myst_heading_anchors = 3
# command lines and wire names are quoted as written: no "--" turned into a dash, no
# curly quotes around '-' in the CLI's help texts
smartquotes = False

autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "imported-members": True,
    "show-inheritance": True,
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True

html_theme = "furo"
html_title = "agentproto"


def _no_stand_ins(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Warn (a failure, with ``-W``) when the reference would document the stand-in of a
    name whose optional dependency is missing (``agentproto._core.optional``) instead of
    the name itself: the docs need every extra installed (the ``docs`` group has them)."""
    if lines and lines[0].startswith("Stands in for "):
        logging.getLogger(__name__).warning("%s is documented as its stand-in: %s", name, lines[0])


def setup(app: Sphinx) -> None:
    app.connect("autodoc-process-docstring", _no_stand_ins)
