"""Cross-references to Python's builtins (``type``, ``str``, ``ValueError``) stay plain text.

The site has no intersphinx (the build runs offline), so a builtin has no target here.
Left alone, the Python domain does not stop at "not found": a ``class`` reference falls
back to attributes of that name, searched by suffix, and ``type`` (in annotations such as
``type[T]``) then matches the ``type`` field of hundreds of generated schema classes,
an ambiguous-reference warning each. This transform runs before the resolver and turns
every Python-domain reference to a builtin into the text it shows.
"""

from __future__ import annotations

import builtins
from typing import Any

from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

BUILTINS = frozenset(name for name in vars(builtins) if not name.startswith("_"))
"""The names no reference should resolve to a documented object of ours."""

ROLES = frozenset({"class", "exc", "obj", "data", "func"})
"""The reference types a type annotation or a docstring role gives a builtin."""


class BuiltinReferences(SphinxPostTransform):
    """Replace each pending Python reference to a builtin name with its own text."""

    default_priority = 5  # before ReferencesResolver (10)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(addnodes.pending_xref)):
            if (
                node.get("refdomain") == "py"
                and node.get("reftype") in ROLES
                and node.get("reftarget") in BUILTINS
            ):
                conditions = [
                    child
                    for child in node.children
                    if isinstance(child, addnodes.pending_xref_condition)
                    and child.get("condition") == "*"
                ]
                shown = conditions[0].children if conditions else node.children
                node.replace_self([child.deepcopy() for child in shown])


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(BuiltinReferences)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
