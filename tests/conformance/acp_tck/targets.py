"""The agents the conformance checks run against, each as a command line.

* ``runner``: :mod:`tests.conformance.acp_tck.full_agent`, everything agentproto serves;
* ``example``: ``examples/acp_hello_agent.py`` as shipped;
* ``serve-example``: ``python -m agentproto acp serve-example`` (the CLI's scripted agent);
* ``guide``: the agent of docs/guides/acp-agents.md (the README has no ACP agent of its
  own), its code block extracted at run time and run from a temporary file.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.docblocks import ROOT, doc_block

GUIDE_PAGE = "docs/guides/acp-agents.md"
GUIDE_HEADING = "ACP agents: serve a session"


@dataclass(frozen=True)
class Target:
    name: str
    argv: Callable[[], list[str]]
    """The command (computed when the agent starts: it may write a file)."""

    def env(self) -> dict[str, str]:
        """The environment: this checkout's ``sdk`` and root first on the path."""
        paths = [str(ROOT / "sdk"), str(ROOT)]
        if os.environ.get("PYTHONPATH"):
            paths.append(os.environ["PYTHONPATH"])
        return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PYTHONUNBUFFERED": "1"}


@functools.cache
def _guide_script() -> str:
    folder = Path(tempfile.mkdtemp(prefix="acp-tck-guide-"))
    script = folder / "echo_agent.py"
    script.write_text(doc_block(GUIDE_PAGE, GUIDE_HEADING), encoding="utf-8")
    return str(script)


def _guide_agent() -> list[str]:
    return [sys.executable, _guide_script()]


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target("runner", lambda: [sys.executable, "-m", "tests.conformance.acp_tck.full_agent"]),
        Target("example", lambda: [sys.executable, str(ROOT / "examples" / "acp_hello_agent.py")]),
        Target(
            "serve-example", lambda: [sys.executable, "-m", "agentproto", "acp", "serve-example"]
        ),
        Target("guide", _guide_agent),
    )
}
