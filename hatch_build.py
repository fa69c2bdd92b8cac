"""Hatchling build hook: the optional mypyc-compiled build of the decode path's hot modules,
and the sdist's file list.

The modules to compile are listed once, in ``pyproject.toml`` under
``[tool.hatch.build.targets.wheel.hooks.custom] compile`` (dotted module names; their
sources are found under the wheel's package folder). A compiled wheel build compiles them
with mypyc into C extensions that sit beside the ``.py`` sources (Python imports the
extension first), so the package behaves the same whichever build is installed.

``AGENTPROTO_COMPILE`` decides:

* unset, empty or ``0`` (default): pure Python. The wheel's build requirements are
  hatchling's alone, so ``pip install agentproto-X.tar.gz`` neither installs mypy (nor
  setuptools, nor the runtime dependencies) into the build environment nor compiles;
* ``1``: compile, and fail the build if that is not possible;
* ``auto``: compile when a C compiler and the Python headers are present, else build pure
  Python; a compilation that fails is reported on stderr and the wheel is built pure.

Compiling needs :data:`BUILD_REQUIRES` and the runtime dependencies in the build
environment; the hook asks for them (``dependencies``) only when the mode may compile.
Editable installs (``pip install -e .``, every nox session) are always pure Python: an
extension beside the source would shadow the ``.py`` file being edited.

For the sdist the hook only drops the ``.gitignore`` that hatchling adds to every sdist:
the sdist's file list is explicit (``[tool.hatch.build.targets.sdist]``), and the wheel
built from it names its one package, so nothing in the sdist needs the ignore rules.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ENV = "AGENTPROTO_COMPILE"
BUILD_REQUIRES = ["mypy==2.4.1", "setuptools>=70"]
"""What compiling needs in the build environment (the runtime dependencies come too:
mypyc type-checks the modules against them). mypy is pinned: the compiled code is
what this version makes of the sources, and a new version may read them more strictly."""


def compile_mode() -> str:
    """``"0"`` (unset), ``"1"`` or ``"auto"`` from ``AGENTPROTO_COMPILE``; anything else is
    refused."""
    mode = os.environ.get(ENV, "").strip().lower() or "0"
    if mode not in ("auto", "0", "1"):
        raise ValueError(f"{ENV} must be 0, 1 or auto, not {os.environ[ENV]!r}")
    return mode


def missing_toolchain() -> str | None:
    """Why no C extension can be built here, or ``None`` when a compiler and headers exist."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(os.environ.get("CC", compiler).split()[0]) is None:
        return f"no C compiler ({compiler!r} is not on PATH)"
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        return f"no Python headers ({headers} is missing)"
    return None


def build_extensions(
    sources: list[Path], source_root: Path, config: Path, work: Path
) -> list[Path]:
    """Compile ``sources`` (files under ``source_root``) with mypyc into ``work``, type
    checked with the mypy configuration in ``config``.

    Returns the built extension files, relative to ``work / "lib"`` the way they sit in
    the wheel (the shared ``agentproto__mypyc`` library and one small module each).
    """
    from mypyc.build import mypycify
    from setuptools import Distribution  # type: ignore[import-untyped]

    here = Path.cwd()
    os.chdir(source_root)  # mypy names each module from the package folders above it
    try:
        options = ["--config-file", str(config), "--cache-dir", str(work / "mypy-cache")]
        # the modules compiled are checked; those they import are read for their types
        # only: the optional dependencies (httpx, Starlette, FastAPI) are not installed here
        options += ["--follow-imports", "silent"]
        extensions = mypycify(
            [*options, *(str(path.relative_to(source_root)) for path in sources)],
            opt_level="3",
            target_dir=str(work / "c"),
            group_name="agentproto",
        )
        distribution = Distribution({"name": "agentproto", "ext_modules": extensions})
        command: Any = distribution.get_command_obj("build_ext")
        command.build_lib = str(work / "lib")
        command.build_temp = str(work / "temp")
        command.ensure_finalized()
        command.run()
    finally:
        os.chdir(here)
    lib = work / "lib"
    return sorted(path.relative_to(lib) for path in lib.rglob("*") if path.is_file())


class MypycBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Adds the compiled extensions to a (non-editable) wheel when asked to, and keeps the
    sdist to its file list; see the module docstring."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        """The build requirements the hook adds: none for a pure build."""
        if self.target_name != "wheel" or compile_mode() == "0":
            return []
        # mypyc type-checks the modules against the runtime dependencies
        return [*BUILD_REQUIRES, *self.metadata.core.dependencies]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "sdist":
            force_include = build_data["force_include"]
            for source, target in list(force_include.items()):
                if target == ".gitignore":
                    del force_include[source]
            return
        mode = compile_mode()
        if self.target_name != "wheel" or version == "editable" or mode == "0":
            return
        problem = missing_toolchain()
        if problem is not None:
            if mode == "1":
                raise RuntimeError(f"{ENV}=1 but {problem}")
            self._say(f"building pure Python: {problem}")
            return
        self._work = Path(tempfile.mkdtemp(prefix="agentproto-mypyc-"))
        try:
            config = Path(self.root) / "pyproject.toml"
            built = build_extensions(self._sources(), self._source_root(), config, self._work)
        except Exception as exc:  # a failed compilation falls back, unless forced
            if mode == "1":
                raise
            self._say(f"building pure Python: mypyc failed ({type(exc).__name__}: {exc})")
            return
        for path in built:
            build_data["force_include"][str(self._work / "lib" / path)] = str(path)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        self._say(f"compiled {len(self._modules())} modules with mypyc")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)

    def _modules(self) -> list[str]:
        modules = self.config.get("compile", [])
        if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
            raise TypeError("hooks.custom.compile must be a list of module names")
        return modules

    def _source_root(self) -> Path:
        packages = self.build_config.target_config.get("packages", [])
        return (Path(self.root) / str(packages[0])).parent

    def _sources(self) -> list[Path]:
        root = self._source_root()
        sources = [root / (module.replace(".", "/") + ".py") for module in self._modules()]
        missing = [str(path) for path in sources if not path.is_file()]
        if missing:
            raise FileNotFoundError(f"modules to compile not found: {', '.join(missing)}")
        return sources

    def _say(self, text: str) -> None:
        print(f"agentproto build: {text}", file=sys.stderr)
