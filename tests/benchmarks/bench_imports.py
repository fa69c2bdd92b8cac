"""Import-time figures: ``import.agui`` and ``import.acp``, ours against the peers'.

Registered into :data:`tests.benchmarks.bench.REGISTRY` on import (``bench`` imports
this module at its end).

* ``import.agui``: ``import agentproto.agui`` against ag-ui-protocol's
  ``import ag_ui.core`` (its event models, pydantic included);
* ``import.acp``: ``import agentproto.acp`` against agent-client-protocol's ``import acp``.

Each import is timed in a fresh interpreter (``sys.executable -c``, the environment of
the harness, so the build it runs on), from just before the ``import`` statement to just
after it: interpreter start-up is not counted. Each module is imported once untimed (so
bytecode caches are written), then ours and the peer's alternate, ``max(3, --repeat)``
times each, and each keeps its best. Figures are milliseconds; ``ratio = peer / ours``.
"""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys

from tests.benchmarks.bench import BenchError, Figure, PeerMissing, Workload, benchmark

__all__ = ["import_ms"]

_PROBE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
# the harness's environment, bytecode caches allowed: what a user's imports see (a machine
# that sets PYTHONDONTWRITEBYTECODE would otherwise time compiling every module from source)
_CACHING_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def import_ms(module: str) -> float:
    """Milliseconds ``import module`` takes in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(module=module)],
        capture_output=True,
        text=True,
        env=_CACHING_ENV,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"import {module} failed in a fresh interpreter: {last}")
    return float(done.stdout) * 1000.0


def _peer(module: str, dist: str) -> None:
    """Raise :class:`PeerMissing` when the peer's module cannot be imported."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise PeerMissing(
            f"peer {dist} is missing ({exc}); run `nox -s bench` or install the bench group"
        ) from exc


def _compare(ours: str, peer: str, repeat: int) -> tuple[float, float]:
    modules = (ours, peer)
    for module in modules:  # writes the bytecode caches; not timed
        import_ms(module)
    best = [math.inf, math.inf]
    for round_ in range(max(3, repeat)):
        order = (0, 1) if round_ % 2 == 0 else (1, 0)
        for k in order:
            best[k] = min(best[k], import_ms(modules[k]))
    return best[0], best[1]


@benchmark("import.agui")
def bench_import_agui(w: Workload) -> list[Figure]:
    """``import agentproto.agui`` vs ``import ag_ui.core``, in fresh interpreters (ms)."""
    _peer("ag_ui.core", "ag-ui-protocol")
    ours, peer = _compare("agentproto.agui", "ag_ui.core", w.repeat)
    return [Figure.comparison("import.agui", ours, peer, unit="ms")]


@benchmark("import.acp")
def bench_import_acp(w: Workload) -> list[Figure]:
    """``import agentproto.acp`` vs ``import acp``, in fresh interpreters (ms)."""
    _peer("acp", "agent-client-protocol")
    ours, peer = _compare("agentproto.acp", "acp", w.repeat)
    return [Figure.comparison("import.acp", ours, peer, unit="ms")]
