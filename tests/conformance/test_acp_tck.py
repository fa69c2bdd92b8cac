"""The ACP v2 conformance kit's requirement ids against agents run over stdio.

One test per requirement id (``test_ACP_BATCH_203``, ...), parametrized by target
(:mod:`tests.conformance.acp_tck.targets`): a failed id fails; an id whose capability
the target does not advertise, whose condition never occurred (vacuous) or whose subject
the pinned schema lacks (not-applicable) skips with that status; an INFORMATIONAL id
passes once recorded. Every target runs once, side by side, in one module fixture
(``nox -s conformance`` prints the same run as a per-tier table:
:mod:`tests.conformance.acp_tck.runner`). The checks themselves are checked against an
agent built to break some ids (:mod:`tests.conformance.acp_tck.broken_agent`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from tests.conformance.acp_tck import checks, runner, wire
from tests.conformance.acp_tck.broken_agent import BROKEN
from tests.conformance.acp_tck.outcome import Outcome, Status
from tests.conformance.acp_tck.probe import Probe
from tests.conformance.acp_tck.registry import REGISTRY, Tier
from tests.conformance.acp_tck.targets import TARGETS, Target

SPEC = pytest.mark.spec(wire.SCHEMA_FILE, wire.V1_SCHEMA_FILE)
Results = dict[str, dict[str, Outcome]]


@pytest.fixture(scope="module")
def outcomes() -> Results:
    return runner.all_results(list(TARGETS))


def _requirement_test(requirement_id: str) -> Callable[[Results, str], None]:
    requirement = REGISTRY[requirement_id]

    @SPEC
    @pytest.mark.parametrize("target", list(TARGETS))
    def test(outcomes: Results, target: str) -> None:
        outcome = outcomes[target][requirement_id]
        if outcome.status is Status.FAILED:
            pytest.fail(
                f"{requirement_id} ({requirement.tier.value}) on {target}: {outcome.detail}"
            )
        if outcome.status in (Status.SKIPPED, Status.VACUOUS, Status.NOT_APPLICABLE):
            pytest.skip(f"{outcome.status.value}: {outcome.detail}")
        assert outcome.status in (Status.PASSED, Status.RECORDED)
        assert (outcome.status is Status.RECORDED) == (requirement.tier is Tier.INFORMATIONAL)

    test.__name__ = test.__qualname__ = requirement.test_name
    test.__doc__ = f"{requirement_id}: {requirement.summary}."
    return test


for _requirement in REGISTRY.values():
    globals()[_requirement.test_name] = _requirement_test(_requirement.id)


def test_registry_has_one_check_per_id() -> None:
    assert set(checks.CHECKS) == set(REGISTRY)
    assert len(REGISTRY) == 106  # the kit's v2 registry
    assert len({r.test_name for r in REGISTRY.values()}) == len(REGISTRY)


@SPEC
def test_the_checks_catch_a_broken_agent() -> None:
    broken = Target(
        "broken", lambda: [sys.executable, "-m", "tests.conformance.acp_tck.broken_agent"]
    )
    found = checks.run_all(Probe(broken), [*BROKEN, "ACP-INFO-PARSE-001"])
    assert {i: found[i].status for i in BROKEN} == dict.fromkeys(BROKEN, Status.FAILED)
    assert found["ACP-INFO-PARSE-001"].status is Status.RECORDED  # never judged


@SPEC
def test_the_runner_table_counts_every_id(outcomes: Results) -> None:
    lines = runner.table("runner", outcomes["runner"])
    totals = [int(line.split()[-1]) for line in lines[2:6]]
    assert sum(totals) == len(REGISTRY)
    assert runner.failed(outcomes["runner"]) == []


@SPEC
def test_an_unadvertised_capability_skips_never_passes(outcomes: Results) -> None:
    example = outcomes["example"]  # advertises session and session.delete only
    for requirement_id in ("ACP-PROMPTCAP-001", "ACP-ADDDIRS-201", "ACP-CONFIG-201"):
        assert example[requirement_id].status is Status.SKIPPED, requirement_id
    assert outcomes["runner"]["ACP-PROMPTCAP-001"].status is Status.PASSED
