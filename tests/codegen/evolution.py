"""The evolution harness: change a copy of a pinned schema, regenerate, run the runtime on it.

Theory of operation. An evolution test plays the maintainer after an upstream release:

1. :func:`pinned_schema` reads the pinned schema (sha256 checked) as a dict the test edits;
2. :func:`regenerate` writes the edited schema into a scratch spec mirror, at the pinned
   layout, pins a :class:`~codegen.sources.Source` to its sha256 and runs the generator
   into a scratch folder. It never raises: a failure is a :class:`Regen` whose ``error``
   is the message the maintainer would read (what to edit);
3. :func:`runtime_tree` copies ``sdk/agentproto`` into a scratch folder with the
   regenerated modules in place of the sealed ones (the real tree is never touched);
4. :func:`probe` runs ``evolution_probe.py`` on that copy in a subprocess and returns the
   JSON it prints; :func:`typecheck` runs mypy on the copy, as ``nox -s typecheck`` would.

Everything that depends on the codegen's API (how to call it, where a source's overlay
and names file live) is in this module, so that a new codegen needs edits here only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codegen import generate as generate_module
from codegen.generate import sealed_paths
from codegen.sources import ROOT, SOURCES_TOML, Source, load_sources, read_source

SOURCES, TARGETS = load_sources()
PROBE = Path(__file__).with_name("evolution_probe.py")
PACKAGE = ROOT / "sdk" / "agentproto"


def pinned_schema(source_name: str) -> dict[str, Any]:
    """A fresh copy of the pinned schema of ``source_name``, to edit."""
    schema: dict[str, Any] = json.loads(read_source(SOURCES[source_name]))
    return schema


def target_of(source_name: str) -> str:
    """The repository path of the sealed module generated from ``source_name``."""
    for target in TARGETS.values():
        if target.source == source_name:
            return target.module
    raise LookupError(f"no target is generated from source {source_name!r}")


def _source_entry(source_name: str) -> dict[str, Any]:
    entry: dict[str, Any] = tomllib.loads(SOURCES_TOML.read_text(encoding="utf-8"))[source_name]
    return entry


def overlay_file(source_name: str) -> str:
    """The file name of the overlay of ``source_name``: an error about it must name it.

    ``sources.toml`` may name it (``overlay = "schema/overlays/…"``); otherwise it is the
    JSON patch ``schema/overlays/<source>.json``.
    """
    explicit = _source_entry(source_name).get("overlay")
    if isinstance(explicit, str):
        return Path(explicit).name
    return f"{source_name}.json"


def names_file_pattern(source_name: str) -> re.Pattern[str]:
    """What naming the names file of ``source_name`` looks like in an error message.

    The names for anonymous members live in ``schema/overlays/<source>.names.toml``, or
    in the overlay ``sources.toml`` names for the source (a TOML overlay may carry both
    the patch marks and the names).
    """
    names = [re.escape(f"{source_name}.names.toml")]
    explicit = _source_entry(source_name).get("overlay")
    if isinstance(explicit, str) and explicit.endswith(".toml"):
        names.append(re.escape(Path(explicit).name))
    return re.compile("|".join(names))


@dataclasses.dataclass(frozen=True)
class Regen:
    """The outcome of one regeneration.

    Attributes:
        source: the source pinned to the edited schema's sha256.
        module: the regenerated module (``None`` when generation failed).
        error: the failure's message, what the maintainer reads (``None`` on success).
    """

    source: Source
    module: Path | None
    error: str | None

    def expect_failure(self) -> str:
        """The failure message; a regeneration that succeeded fails the test."""
        assert self.error is not None, (
            f"regenerating {self.source.name} succeeded ({self.module}); the change must "
            "stop generation with a message saying what to edit"
        )
        return self.error

    def expect_module(self) -> Path:
        """The regenerated module; a regeneration that failed fails the test."""
        assert self.module is not None, f"regenerating {self.source.name} failed:\n{self.error}"
        return self.module


@contextlib.contextmanager
def _mirror(folder: Path) -> Iterator[None]:
    old = os.environ.get("AGENTPROTO_SPEC_MIRROR")
    os.environ["AGENTPROTO_SPEC_MIRROR"] = str(folder)
    try:
        yield
    finally:
        if old is None:
            del os.environ["AGENTPROTO_SPEC_MIRROR"]
        else:
            os.environ["AGENTPROTO_SPEC_MIRROR"] = old


def regenerate(source_name: str, schema: dict[str, Any], workdir: Path) -> Regen:
    """Regenerate the module of ``source_name`` from an edited copy of its schema.

    The edited schema is written where the pinned one lives in a spec mirror (same
    relative path, so anchors keep their file name), inside ``workdir/mirror``; the
    module is written to ``workdir/out/<module name>``. The repository's overlay and
    names file for the source apply, as they would after an upstream release; its pinned
    stable counterpart (if any) is copied beside it unedited.
    """
    pinned = SOURCES[source_name]
    data = json.dumps(schema, indent=2).encode()
    mirror = workdir / "mirror"
    (mirror / pinned.mirror).parent.mkdir(parents=True, exist_ok=True)
    (mirror / pinned.mirror).write_bytes(data)
    if pinned.stable is not None:  # read for the stable marks of METHODS, unedited
        (mirror / pinned.stable.mirror).parent.mkdir(parents=True, exist_ok=True)
        (mirror / pinned.stable.mirror).write_bytes(read_source(pinned.stable))
    source = dataclasses.replace(pinned, sha256=hashlib.sha256(data).hexdigest())
    out = workdir / "out" / Path(target_of(source_name)).name
    out.parent.mkdir(parents=True, exist_ok=True)
    with _mirror(mirror):
        try:
            generate_module.generate(source, out)
        except Exception as exc:  # whatever the codegen raises is what the maintainer reads
            return Regen(source=source, module=None, error=f"{type(exc).__name__}: {exc}")
    return Regen(source=source, module=out, error=None)


def runtime_tree(workdir: Path, *regens: Regen) -> Path:
    """A copy of ``sdk/agentproto`` under ``workdir/tree/sdk`` with regenerated modules.

    Returns the tree's root, which holds ``sdk/agentproto`` and the repository's
    ``pyproject.toml`` (for mypy's settings).
    """
    tree = workdir / "tree"
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(PACKAGE, tree / "sdk" / "agentproto", ignore=skip)
    shutil.copyfile(ROOT / "pyproject.toml", tree / "pyproject.toml")
    for regen in regens:
        dest = tree / target_of(regen.source.name)
        made_module = regen.expect_module()
        for made in sealed_paths(made_module):  # the classes and the modules written with them
            shutil.copyfile(made, dest.parent / made.relative_to(made_module.parent))
    return tree


def probe(
    tree: Path, name: str, *, allow_import_error: bool = False, timeout: float = 120
) -> dict[str, Any]:
    """Run ``evolution_probe.py NAME`` against the runtime in ``tree``; its JSON result.

    When importing the runtime fails, the result is ``{"import_error": {...}}``, which
    fails the test unless ``allow_import_error`` (a case where that is a loud failure
    saying what to edit).
    """
    env = {**os.environ, "PYTHONPATH": str(tree / "sdk"), "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [sys.executable, str(PROBE), name, str(tree)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tree,
        timeout=timeout,
    )
    assert result.returncode == 0, f"probe {name} crashed:\n{result.stdout}\n{result.stderr}"
    lines = result.stdout.strip().splitlines()
    assert lines, f"probe {name} printed nothing:\n{result.stderr}"
    data: dict[str, Any] = json.loads(lines[-1])
    assert allow_import_error or "import_error" not in data, (
        f"importing the runtime against the regenerated modules failed: {data['import_error']}"
    )
    return data


def mypy_command() -> list[str] | None:
    """How to run mypy here: this interpreter's, else the ``nox -s typecheck`` venv's."""
    if importlib.util.find_spec("mypy") is not None:
        return [sys.executable, "-m", "mypy"]
    for python in (ROOT / ".nox" / "typecheck" / "bin" / "python",):
        if python.is_file():
            found = subprocess.run(
                [str(python), "-c", "import mypy"], capture_output=True, check=False
            )
            if found.returncode == 0:
                return [str(python), "-m", "mypy"]
    return None


@dataclasses.dataclass(frozen=True)
class Typecheck:
    """What mypy says about a runtime tree: exit status and its output."""

    status: int
    output: str

    def runtime_errors(self) -> list[str]:
        """The error lines about hand-written runtime files (not the sealed modules)."""
        return [
            line
            for line in self.output.splitlines()
            if ": error:" in line
            and "/agentproto/" in line.replace(os.sep, "/")
            and "_generated" not in line.split(":", 1)[0]
        ]


def typecheck(tree: Path, timeout: float = 300) -> Typecheck | None:
    """``mypy`` (the repository's settings) on the runtime in ``tree``; ``None`` without mypy."""
    command = mypy_command()
    if command is None:
        return None
    result = subprocess.run(
        [*command, "--cache-dir", str(tree / ".mypy_cache"), "sdk/agentproto"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tree,
        timeout=timeout,
        env={**os.environ, "MYPYPATH": str(tree / "sdk")},
    )
    return Typecheck(status=result.returncode, output=result.stdout + result.stderr)


def defs(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``$defs`` of a schema (what every edit changes)."""
    found: dict[str, Any] = schema["$defs"]
    return found
