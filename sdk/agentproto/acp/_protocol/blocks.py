"""Content blocks: the text, images and resources a prompt or a message carries.

Both sides accept :data:`Content` where the schema wants a list of
``ContentBlock``: a string is one text block, a block is itself, a sequence is
taken as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from agentproto.acp import _generated_v2 as v2

__all__ = ["Content", "content_blocks"]

Content = str | v2.ContentBlock | Sequence[v2.ContentBlock]
"""Message content: text, one content block, or blocks."""


def content_blocks(content: Content) -> list[v2.ContentBlock]:
    """The content blocks of ``content`` (a string is one text block)."""
    if isinstance(content, str):
        return [v2.TextContentBlock(text=content)]
    if isinstance(content, list | tuple):
        return list(content)
    return [cast(v2.ContentBlock, content)]
