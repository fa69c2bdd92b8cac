"""Shared test configuration: the spec mirror and the ``--slow`` switch."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from codegen.sources import spec_mirror

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
