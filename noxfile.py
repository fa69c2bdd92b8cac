"""Development tasks: ``nox -s tests lint typecheck regen check_generated bench``."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|venv"
nox.options.sessions = ["lint", "typecheck", "check_generated", "tests"]
nox.options.reuse_existing_virtualenvs = True

PYPROJECT = nox.project.load_toml("pyproject.toml")


def _install(session: nox.Session, *groups: str) -> None:
    requirements: list[str] = []
    for group in groups:
        requirements += nox.project.dependency_groups(PYPROJECT, group)
    session.install("-e", ".", *requirements)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (pass pytest options after --, e.g. -- --slow)."""
    _install(session, "test", "codegen")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def conformance(session: nox.Session) -> None:
    """AG-UI conformance corpora (-- --corpus DIR --protocol-version V --json PATH)."""
    _install(session, "test", "codegen")
    session.run("python", "-m", "tests.conformance.agui_runner", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting check of the hand-written code."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


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
def demo(session: nox.Session) -> None:
    """The main job: serve the example AG-UI agent, consume one run, print the result."""
    session.install("-e", ".", "httpx", "uvicorn")
    session.run("python", "-m", "agentproto.agui.examples.demo")


@nox.session
def interop(session: nox.Session) -> None:
    """The real peers against agentproto: @ag-ui/client, and for ACP the TypeScript SDK's
    experimental/v2 (both installed with npm into .interop/) and the Python v1 SDK."""
    _install(session, "test")
    session.run("python", "-m", "pytest", "tests/interop", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks side by side with the peer SDKs (-- --json PATH writes the figures)."""
    _install(session, "bench")
    session.run("python", "-m", "tests.benchmarks.bench", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """Mutation fuzzing of the public entry points (-- --examples N --seed S --target NAME
    --json PATH); exit 1 when a property failed, reproducers in .fuzz-failures/."""
    _install(session, "test", "codegen")
    session.run("python", "-m", "tests.fuzz", *session.posargs)
