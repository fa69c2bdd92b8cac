"""Shared test configuration: the spec mirror, the ``--slow`` switch and the examples.

The runnable examples live outside the package, in ``examples/``; tests import them
by module name (``agui_scripted_agent``, ``acp_client``) from that folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings

from codegen.sources import spec_mirror

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="long property run; use --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def mirror_dir() -> Path:
    """The spec mirror; tests that need it fail loudly when it is missing."""
    mirror = spec_mirror()
    if mirror is None or not mirror.is_dir():
        raise RuntimeError(
            "spec mirror not found: set AGENTPROTO_SPEC_MIRROR or provide ../shared/spec"
        )
    return mirror
