"""What tests need from outside the repository, and what happens when it is missing.

* The spec material: the published schemas, AG-UI fixtures and conformance corpora and
  the RFC 6902 cases, pinned in ``schema/sources.toml`` and ``schema/spec-files.tsv``.
  It is read from the spec mirror (``AGENTPROTO_SPEC_MIRROR``, else ``../shared/spec``),
  else from the download cache ``.cache/spec/``, else downloaded there once, every file
  checked against its sha256 (:func:`codegen.sources.fetch_spec`).
* Node.js and npm, and the peer packages npm installs, for the interop tests.
* A real ``redis-server`` (Debian's package ``redis-server``; ``.ci/run`` installs it) and
  the ``redis`` package, for the Redis stores: :func:`redis_server` starts one per session.

A test that needs something missing is skipped with a reason saying what is missing and
how to provide it, and the session ends with one line naming all of it (``conftest.py``).
Only those tests skip: a test asks for the material where it uses it (:func:`spec_dir`,
the ``spec`` marker, :func:`spec_params` for parameters built from it), and a schema read
through ``codegen`` that cannot be had skips the test that read it. With
``AGENTPROTO_REQUIRE_ALL=1`` (CI) every such skip is a failure instead.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from codegen.sources import SpecUnavailable, fetch_spec
from tests.redis_server import RedisUnavailable
from tests.redis_server import start as start_redis

REQUIRE_ALL = "AGENTPROTO_REQUIRE_ALL"
"""Set to 1, every skip for a missing need is a failure (CI proves everything)."""


@dataclass(frozen=True)
class Need:
    """Something tests need from outside the repository."""

    what: str
    how: str
    """How to provide it."""

    @property
    def marker(self) -> str:
        """How a skip reason for this need begins (the summary counts them by it)."""
        return f"{self.what} missing"


SPEC = Need(
    "spec material",
    "set AGENTPROTO_SPEC_MIRROR to a spec mirror folder, or let the pinned files download "
    "into .cache/spec (from raw.githubusercontent.com, and with npm for the ACP schemas)",
)
NODE = Need("Node.js", "install Node.js 18+ with npm to run the interop tests")
PEERS = Need(
    "interop peers",
    "allow npm to install the pinned peer packages into .interop/, and install the "
    "'test' dependency group",
)
REDIS = Need(
    "Redis",
    "install redis-server (Debian: apt-get install redis-server; .ci/run does) and the "
    "'test' dependency group (the redis package)",
)
NEEDS = (SPEC, NODE, PEERS, REDIS)


def require_all() -> bool:
    """Whether a missing need fails the test instead of skipping it."""
    return os.environ.get(REQUIRE_ALL, "") not in ("", "0")


MISSED: dict[Need, str] = {}
"""What was missing this session, in a few words (the first time), for the summary line."""


def missing(need: Need, detail: str, short: str | None = None) -> NoReturn:
    """Skip the current test (or module, at import) for want of ``need``, saying why
    (``detail``; ``short`` for the session's summary line); fail it instead under
    ``AGENTPROTO_REQUIRE_ALL=1``."""
    MISSED.setdefault(need, short or detail)
    reason = f"{need.marker}: {detail} ({need.how})"
    if require_all():
        pytest.fail(f"{reason}; {REQUIRE_ALL}=1 turns this skip into a failure", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


# ---- spec material ------------------------------------------------------------------------


@functools.cache
def _lookup(prefixes: tuple[str, ...]) -> Path | SpecUnavailable:
    """The folder holding ``prefixes``, or why it cannot be had (tried once per session)."""
    try:
        return fetch_spec(*prefixes)
    except SpecUnavailable as exc:
        return exc


def find_spec(*prefixes: str) -> Path | None:
    """The folder holding every pinned file under ``prefixes`` at its mirror path, or None.

    For what is optional, or computed at import (parameters): the tests that need the
    material still ask for it with :func:`spec_root`, the ``spec`` marker or
    :func:`spec_params`.

    Raises:
        SourceError: a file that does not match its pin (that is never skipped).
    """
    found = _lookup(prefixes)
    return found if isinstance(found, Path) else None


def spec_root(*prefixes: str) -> Path:
    """The folder holding every pinned file under ``prefixes``; skips (fails under
    ``AGENTPROTO_REQUIRE_ALL=1``) when they cannot be had."""
    found = _lookup(prefixes)
    if isinstance(found, SpecUnavailable):
        missing(SPEC, str(found), found.reason)
    return found


def spec_dir(prefix: str) -> Path:
    """Where the pinned file or folder ``prefix`` (a mirror path) is; skips as
    :func:`spec_root` does."""
    return spec_root(prefix) / prefix


def spec_params(build: Callable[[Path], list[Any]], *prefixes: str, width: int = 1) -> list[Any]:
    """Test parameters ``build`` makes from the folder holding ``prefixes`` (as
    :func:`find_spec` gives it), or, when they cannot be had, one placeholder of ``width``
    values whose test skips with the reason."""
    root = find_spec(*prefixes)
    if root is None:
        mark = pytest.mark.spec(*prefixes)
        return [pytest.param(*[None] * width, id="spec-missing", marks=mark)]
    return build(root)


def check_spec_markers(item: pytest.Item) -> None:
    """Skip ``item`` at setup when a ``spec(prefix, ...)`` marker names what is missing."""
    for marker in item.iter_markers("spec"):
        spec_root(*marker.args)


def skip_unavailable(exc: SpecUnavailable) -> NoReturn:
    """A schema read inside a test (through ``codegen``) that cannot be had skips it."""
    missing(SPEC, str(exc), exc.reason)


# ---- Node.js, npm and peers ---------------------------------------------------------------


def need_node() -> None:
    """Skip unless ``node`` and ``npm`` are on PATH."""
    absent = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if absent:
        missing(NODE, f"{' and '.join(absent)} not on PATH")


def npm_install(folder: Path, packages: list[str]) -> None:
    """``npm install`` the pinned ``packages`` into ``folder``; skip when npm cannot."""
    need_node()
    try:
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", *packages],
            cwd=folder,
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        lines = (exc.stderr or "").strip().splitlines() if isinstance(exc.stderr, str) else []
        missing(PEERS, f"npm install {' '.join(packages)} failed: {lines[-1] if lines else exc}")


# ---- a real Redis server --------------------------------------------------------------------


def redis_server() -> str:
    """The URL of the ``redis-server`` started for this test session
    (:func:`tests.redis_server.start`); skip when it cannot be had."""
    try:
        return start_redis()
    except RedisUnavailable as exc:
        missing(REDIS, str(exc), exc.short)
