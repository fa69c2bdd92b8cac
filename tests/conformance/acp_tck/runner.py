"""Run every ACP v2 requirement id against each target and print the per-tier table.

    python -m tests.conformance.acp_tck.runner [TARGET ...] [-v]

Per target, one line per tier: ``passed/failed/skipped(capability)/vacuous/recorded/
not-applicable/total``, then the failing ids with their reasons (``-v``: every id's
outcome). Exits 1 when a MANDATORY, CAPABILITY or ADVISORY id failed on any target.
``vacuous`` counts ids whose condition never occurred (nothing to judge: e.g. no
permission request during the turn); ``recorded`` counts INFORMATIONAL observations.
Neither, nor ``skipped(capability)`` or ``not-applicable``, is ever a pass.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import sys

from tests.conformance.acp_tck.checks import run_all
from tests.conformance.acp_tck.harness import NoAnswer
from tests.conformance.acp_tck.outcome import Outcome, Status
from tests.conformance.acp_tck.probe import Probe
from tests.conformance.acp_tck.registry import REGISTRY, Tier
from tests.conformance.acp_tck.targets import TARGETS

JUDGED = (Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY)


@functools.cache
def results(target: str) -> dict[str, Outcome]:
    """Every id's outcome against ``target`` (run once per process)."""
    try:
        probe = Probe(TARGETS[target])
    except (NoAnswer, OSError, LookupError) as error:  # no agent to judge: every id fails
        return {i: Outcome(Status.FAILED, f"the agent did not start: {error}") for i in REGISTRY}
    return run_all(probe)


def all_results(targets: list[str]) -> dict[str, dict[str, Outcome]]:
    """:func:`results` of every target, the targets run side by side (they mostly wait)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(targets) or 1) as pool:
        return dict(zip(targets, pool.map(results, targets), strict=True))


def table(target: str, outcomes: dict[str, Outcome], verbose: bool = False) -> list[str]:
    """The report lines of one target."""
    lines = [
        f"== {target}",
        f"   {'tier':<14}" + "".join(f"{s.value:>{len(s.value) + 2}}" for s in Status) + "  total",
    ]
    for tier in Tier:
        ids = [i for i in REGISTRY if REGISTRY[i].tier is tier]
        counts = [sum(outcomes[i].status is status for i in ids) for status in Status]
        lines.append(
            f"   {tier.value:<14}"
            + "".join(f"{c:>{len(s.value) + 2}}" for s, c in zip(Status, counts, strict=True))
            + f"{len(ids):>7}"
        )
    for requirement_id, outcome in outcomes.items():
        if outcome.status is Status.FAILED or verbose:
            tier_name = REGISTRY[requirement_id].tier.value
            status = outcome.status.value
            status = status.upper() if outcome.status is Status.FAILED else status
            lines.append(f"   {status:<20} {requirement_id:<28} {tier_name:<14} {outcome.detail}")
    return lines


def failed(outcomes: dict[str, Outcome]) -> list[str]:
    """The judged ids that failed."""
    return [
        i for i, o in outcomes.items() if o.status is Status.FAILED and REGISTRY[i].tier in JUDGED
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", choices=[[], *TARGETS], default=[])
    parser.add_argument("-v", "--verbose", action="store_true", help="every id's outcome")
    args = parser.parse_args(argv)
    bad = 0
    for target, outcomes in all_results(args.targets or list(TARGETS)).items():
        print("\n".join(table(target, outcomes, args.verbose)))
        bad += len(failed(outcomes))
    print(f"ACP v2 conformance: {bad} judged failure(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
