"""The ACP v2 requirement ids of the maintainers' conformance kit, with this repository's
own one-line summaries (``requirements.toml``, in the kit's order).

The ids, tiers and capability gates are the kit's (``agentclientprotocol/acp-tck``,
``src/tck/v2/requirements.py``, the v2 draft registry); the summaries are ours. Fields:

* ``tier``: ``MANDATORY`` (always judged), ``CAPABILITY`` (judged when the agent
  advertises the gate), ``ADVISORY`` (a SHOULD: judged, reported), ``INFORMATIONAL``
  (recorded, never judged);
* ``capability``: the gate, a dotted path of the ``initialize`` result
  (``capabilities.session...``), or ``inferred:<field>`` for support seen on the wire;
* ``spec``: the prose page (under ``docs/protocol/v2/``) or the pinned schema definition
  (``#/$defs/...`` of ``schema.unstable.json``) the requirement rests on;
* ``pinned``: what the check uses where the kit's later alpha schema names something the
  pinned schema (npm ``@agentclientprotocol/sdk`` 2.4.0) does not have in that form;
* ``not_applicable``: the exact schema reference, for a requirement whose subject the
  pinned schema lacks altogether (judged ``not-applicable``, never passed).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

FILE = Path(__file__).with_name("requirements.toml")


class Tier(StrEnum):
    MANDATORY = "MANDATORY"
    CAPABILITY = "CAPABILITY"
    ADVISORY = "ADVISORY"
    INFORMATIONAL = "INFORMATIONAL"


@dataclass(frozen=True)
class Requirement:
    id: str
    tier: Tier
    capability: str | None
    summary: str
    spec: str
    pinned: str | None = None
    not_applicable: str | None = None

    @property
    def test_name(self) -> str:
        """The pytest function named by the id."""
        return "test_" + self.id.replace("-", "_")


def _load() -> dict[str, Requirement]:
    with FILE.open("rb") as file:
        table = tomllib.load(file)
    return {
        ident: Requirement(
            id=ident,
            tier=Tier(row["tier"]),
            capability=row.get("capability"),
            summary=row["summary"],
            spec=row["spec"],
            pinned=row.get("pinned"),
            not_applicable=row.get("not_applicable"),
        )
        for ident, row in table.items()
    }


REGISTRY: dict[str, Requirement] = _load()
