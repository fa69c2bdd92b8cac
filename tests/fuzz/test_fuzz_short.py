"""A short, seeded fuzz run: hostile input never crashes, hangs or balloons (issue 11)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentproto import ProtocolError
from tests.fuzz.mutate import SEED_CORPORA, Seeds, load_seeds
from tests.fuzz.properties import MemoryMeter, PropertyFailure
from tests.fuzz.runner import fuzz, print_report, run_one
from tests.fuzz.targets import TARGETS, Target
from tests.needs import spec_root

EXAMPLES = 400  # 50 per target, about 10 s


@pytest.fixture(scope="module")
def seeds() -> Seeds:
    return load_seeds(spec_root(*SEED_CORPORA))


def test_short_fuzz_run_finds_no_property_failure(seeds: Seeds, tmp_path: Path) -> None:
    """Every target, seeded: only AgentProtoError escapes, nothing hangs, feeds are atomic."""
    report = fuzz(
        examples=EXAMPLES,
        seed="short",
        targets=list(TARGETS),
        seeds=seeds,
        failure_dir=tmp_path,
        do_shrink=False,
    )
    lines: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            lines.append(text)

    print_report(report, Out())  # type: ignore[arg-type]
    assert not report.failed, "".join(lines)


def _fake(run: Any) -> Target:
    return Target("fake", lambda rng, seeds: {"size": 10}, run, "a harness self-test")


def test_harness_flags_escapes_hangs_and_memory() -> None:
    """The harness reports a foreign exception, a hang and a memory blow-up, not an SDK error."""

    def sdk_error(example: dict[str, Any], problems: list[PropertyFailure]) -> None:
        raise ProtocolError("fake.code", "an SDK error escapes legitimately")

    def foreign(example: dict[str, Any], problems: list[PropertyFailure]) -> None:
        raise KeyError("boom")

    def hang(example: dict[str, Any], problems: list[PropertyFailure]) -> None:
        while True:
            time.sleep(0.01)

    def balloon(example: dict[str, Any], problems: list[PropertyFailure]) -> None:
        held = [bytearray(1024) for _ in range(40_000)]  # ~40 MiB for a 10-byte input
        del held

    meter = MemoryMeter(True)
    assert run_one(_fake(sdk_error), {"size": 10}, 0, meter)[0] == []
    assert [f.prop for f in run_one(_fake(foreign), {"size": 10}, 0, meter)[0]] == ["escape"]
    assert [f.prop for f in run_one(_fake(hang), {"size": 10}, 0, meter, 0.2)[0]] == ["hang"]
    assert [f.prop for f in run_one(_fake(balloon), {"size": 10}, 0, meter)[0]] == ["memory"]
