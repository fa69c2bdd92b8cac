"""Development tasks: ``nox -s tests lint typecheck regen check_generated bench package docs``."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|venv"
nox.options.sessions = ["lint", "typecheck", "check_generated", "tests"]
nox.options.reuse_existing_virtualenvs = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
PURE = {"AGENTPROTO_COMPILE": "0"}
"""An editable install is pure Python anyway (hatch_build.py); this keeps mypy and
setuptools out of its build environment even when the caller's shell exports
``AGENTPROTO_COMPILE=1``."""


def _install(session: nox.Session, *groups: str) -> None:
    requirements: list[str] = []
    for group in groups:
        requirements += nox.project.dependency_groups(PYPROJECT, group)
    session.install("-e", ".", *requirements, env=PURE)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (pass pytest options after --, e.g. -- --slow)."""
    _install(session, "test", "codegen")
    session.run("python", "-m", "pytest", *session.posargs)


TESTED_PYTHONS = [
    classifier.rpartition(" :: ")[2]
    for classifier in PYPROJECT["project"]["classifiers"]
    if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", classifier)
]
"""The Pythons the package declares (one classifier each): ``tests_all`` runs on them."""


def _interpreter(version: str) -> str:
    """The interpreter nox is to use for ``version`` (``"3.12"``): the newest pyenv
    installation of it, active or not, else the bare version, which nox looks up on PATH
    (and among uv's Pythons)."""
    versions = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = []
    for home in versions.glob(f"{version}.*"):
        patch = home.name.removeprefix(f"{version}.")
        python = home / "bin" / f"python{version}"
        if patch.isdigit() and python.is_file():
            found.append((int(patch), str(python)))
    return max(found)[1] if found else version


@nox.session(download_python="never")
@nox.parametrize("python", [_interpreter(v) for v in TESTED_PYTHONS], ids=TESTED_PYTHONS)
def tests_all(session: nox.Session) -> None:
    """The test suite on each declared Python present here (``tests_all(3.12)`` for one);
    a Python that is not installed is skipped (an error where the CI variable is set)."""
    _install(session, "test", "codegen")
    session.run("python", "-m", "pytest", *session.posargs)


COMPILED_TESTS = [
    "tests/test_compiled_build.py",
    "tests/_core",
    "tests/agui",
    "tests/acp",
    "tests/conformance",
    "tests/test_cli.py",
    "tests/test_cli_text.py",
    "tests/test_robustness.py",
    "tests/test_roundtrip_property.py",
]
"""What ``tests_compiled`` runs: everything but the code generator, the npm interop and
the benchmark harness, none of which runs the compiled modules differently."""


def _compiled_wheel(session: nox.Session) -> Path:
    """Build the mypyc-compiled wheel (``AGENTPROTO_COMPILE=1``: no silent pure fallback)."""
    out = Path(session.create_tmp()) / "wheel"
    shutil.rmtree(out, ignore_errors=True)
    env = {"AGENTPROTO_COMPILE": "1"}
    if session.venv_backend == "uv":
        python = str(Path(session.bin) / "python")  # the wheel is for the session's Python
        session.run(
            "uv", "build", "--python", python, "--wheel", "--out-dir", str(out), ".", env=env
        )
    else:
        session.install("build")
        session.run("python", "-m", "build", "--wheel", "--outdir", str(out), ".", env=env)
    (wheel,) = out.glob("agentproto-*.whl")
    return wheel


@nox.session
def tests_compiled(session: nox.Session) -> None:
    """The test suite against the compiled wheel, installed (not editable); it checks that
    the compiled modules are the ones imported."""
    wheel = _compiled_wheel(session)
    requirements = nox.project.dependency_groups(PYPROJECT, "test")
    session.install("--force-reinstall", str(wheel), *requirements)
    args = session.posargs or COMPILED_TESTS
    session.run("python", "-m", "pytest", *args, env={"AGENTPROTO_EXPECT_COMPILED": "1"})


@nox.session
def conformance(session: nox.Session) -> None:
    """AG-UI conformance corpora (-- --corpus DIR --protocol-version V --json PATH), then
    the ACP v2 conformance kit's requirement ids against the ACP agents (per-tier table)."""
    _install(session, "test", "codegen")
    session.run("python", "-m", "tests.conformance.agui_runner", *session.posargs)
    session.run("python", "-m", "tests.conformance.acp_tck.runner")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting check of the hand-written code; a module size report."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # module sizes, reported (never asserted: modules are cut by concept, DESIGN.md)
    session.run("python", "-m", "tests.layout", silent=False)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the hand-written code."""
    _install(session, "typecheck", "codegen")
    session.run("mypy")


@nox.session
def regen(session: nox.Session) -> None:
    """Regenerate the sealed modules, all or none (-- --acp PATH, --agui 1.1 --out DIR, ...).

    Paths after ``--`` are relative to the folder nox was started from.
    """
    _install(session, "codegen")
    root = str(Path(__file__).resolve().parent)
    session.chdir(session.invoked_from)
    session.run("python", "-m", "codegen", *session.posargs, env={"PYTHONPATH": root})


@nox.session
def check_generated(session: nox.Session) -> None:
    """Regenerate into a temporary folder and fail on any difference."""
    _install(session, "codegen")
    session.run("python", "-m", "codegen", "--check")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site into docs/_build/html, strictly: any warning fails the
    build (-W), and every warning is reported before it fails (--keep-going). The whole
    site is read again each time (-E), so a warning is never hidden by a cached page."""
    _install(session, "docs")
    out = Path("docs") / "_build" / "html"
    sphinx = ["python", "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-E"]
    session.run(*sphinx, "docs", str(out), *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: an AG-UI run (example agent served, consumed by HttpAgent), then an
    ACP turn (example agent over stdio, AcpClient), each side's view printed."""
    session.install("-e", ".", "httpx", "uvicorn", env=PURE)
    session.run("python", "examples/demo.py")


@nox.session
def interop(session: nox.Session) -> None:
    """The real peers against agentproto: @ag-ui/client, and for ACP the TypeScript SDK's
    experimental/v2 (both installed with npm into .interop/) and the Python v1 SDK."""
    _install(session, "test")
    session.run("python", "-m", "pytest", "tests/interop", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks side by side with the peer SDKs, for the pure and the compiled build
    (-- --json PATH writes the figures)."""
    _install(session, "bench")
    compiled = Path(session.create_tmp()) / "compiled-site"
    shutil.rmtree(compiled, ignore_errors=True)
    session.install("--no-deps", "--target", str(compiled), str(_compiled_wheel(session)))
    bench = ["python", "-m", "tests.benchmarks.bench", "--compiled-site", str(compiled)]
    session.run(*bench, *session.posargs)
    # the compiled build's gain, the two builds timed in alternation (steadier than above)
    session.run("python", "-m", "tests.benchmarks.paired", "--compiled-site", str(compiled))


@nox.session
def package(session: nox.Session) -> None:
    """Build the sdist, then the wheel from it, as an installer would (isolated, without
    AGENTPROTO_COMPILE: pure Python), and check both with ``twine check --strict`` (the
    metadata, and that the README renders as the long description)."""
    out = Path(session.create_tmp()) / "dist"
    shutil.rmtree(out, ignore_errors=True)
    env = {"AGENTPROTO_COMPILE": None}  # the default build, whatever the shell exports
    session.install("twine>=6.1")
    if session.venv_backend == "uv":
        python = str(Path(session.bin) / "python")
        session.run("uv", "build", "--python", python, "--out-dir", str(out), ".", env=env)
    else:
        session.install("build")
        session.run("python", "-m", "build", "--outdir", str(out), ".", env=env)
    built = sorted(path.name for path in out.glob("agentproto-*"))  # uv adds a .gitignore
    pure = "agentproto-{}-py3-none-any.whl".format(PYPROJECT["project"]["version"])
    if len(built) != 2 or pure not in built:
        session.error(f"expected the sdist and {pure}, built {built}")
    session.run("twine", "check", "--strict", *(str(out / name) for name in built))


@nox.session
def fuzz(session: nox.Session) -> None:
    """Mutation fuzzing of the public entry points (-- --examples N --seed S --target NAME
    --json PATH); exit 1 when a property failed, reproducers in .fuzz-failures/."""
    _install(session, "test", "codegen")
    session.run("python", "-m", "tests.fuzz", *session.posargs)
