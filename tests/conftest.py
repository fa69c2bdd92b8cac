"""Shared test configuration: what tests need from outside, the ``--slow`` switch and the
examples.

What a test needs from outside the repository (the spec material, Node.js, the interop
peers) is described in :mod:`tests.needs`: the hooks here skip a test marked
``spec(prefix, ...)`` when that material cannot be had, skip a test whose schema read
(through ``codegen``) cannot be had, and end the session with one line naming whatever
was missing and how to provide it.

The runnable examples live outside the package, in ``examples/``; tests import them
by module name (``agui_scripted_agent``, ``acp_client``) from that folder.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from codegen.sources import SpecUnavailable
from tests.needs import MISSED, NEEDS, REQUIRE_ALL, check_spec_markers, skip_unavailable

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
"""The runnable examples (outside the wheel), importable by the tests."""
if str(EXAMPLES) not in sys.path:
    sys.path.append(str(EXAMPLES))

settings.register_profile("default", deadline=None)
settings.register_profile("slow", deadline=None, max_examples=10_000)
settings.load_profile("default")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", help="run the long property tests too")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long property runs, enabled with --slow")
    config.addinivalue_line(
        "markers",
        "spec(prefix, ...): needs the pinned upstream files under these mirror paths "
        "(skipped when they cannot be had; see tests/needs.py)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="long property run; use --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    check_spec_markers(item)
    try:  # fixtures (a module-scoped one re-raises its cached error for each test)
        return (yield)
    except SpecUnavailable as exc:
        unavailable = exc
    skip_unavailable(unavailable)  # outside the handler: the skip is not chained to it


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
    try:
        return (yield)
    except SpecUnavailable as exc:
        unavailable = exc
    skip_unavailable(unavailable)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line naming what was missing, how many tests skipped for it, how to provide it."""
    counts: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        text = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        for need in NEEDS:
            if need.marker in text:
                counts[need.marker] = counts.get(need.marker, 0) + 1
    if not counts:
        return
    parts = [
        f"{counts[need.marker]} tests skipped for want of {need.what} "
        f"({MISSED.get(need, 'see the skip reasons')}) - {need.how}"
        for need in NEEDS
        if need.marker in counts
    ]
    terminalreporter.write_line(
        f"agentproto: {' | '.join(parts)}; {REQUIRE_ALL}=1 turns such skips into failures",
        yellow=True,
        bold=True,
    )
