"""Sphinx configuration of the agentproto documentation (``nox -s docs`` builds it with
warnings as errors).

Sphinx, not MkDocs: the docstrings are written in reStructuredText with Sphinx roles
(``:class:``, ``:func:``, ``:mod:``) and Google-style sections, which autodoc and
napoleon read as they are; the guides are Markdown (MyST).
"""

from __future__ import annotations

import importlib.metadata

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
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3

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
