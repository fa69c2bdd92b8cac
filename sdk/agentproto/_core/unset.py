"""The ``UNSET`` sentinel of three-state patch fields.

An ACP patch field has three states: omitted (``UNSET``, leave the value as it
is), ``None`` (clear it) and a value (replace it whole).
"""

from __future__ import annotations

import enum
from typing import Final, Literal

__all__ = ["UNSET", "Unset"]


class Unset(enum.Enum):
    """Type of :data:`UNSET`; its only member is the sentinel itself."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __str__(self) -> str:
        return "UNSET"

    def __bool__(self) -> Literal[False]:
        return False


UNSET: Final = Unset.UNSET
