"""What gets published: the sdist's exact file list, the pure wheel an installer builds from
it (no mypy asked for, nothing compiled unless ``AGENTPROTO_COMPILE`` says so), and the
metadata (license, classifiers, extras).

``nox -s package`` builds both the way an installer does (isolated, from the sdist) and runs
``twine check --strict`` on them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.message import Message
from email.parser import HeaderParser
from pathlib import Path
from typing import NamedTuple

import hatchling.build
import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
NAME = f"{PROJECT['name']}-{PROJECT['version']}"
SDIST_TOP = {"PKG-INFO", "pyproject.toml", "README.md", "LICENSE", "hatch_build.py"}
"""The sdist's files outside the package: its metadata and what building the wheel reads."""


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist of the project, built once for this module (the default, pure build)."""
    out = tmp_path_factory.mktemp("sdist")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        patch.delenv("AGENTPROTO_COMPILE", raising=False)
        return out / hatchling.build.build_sdist(str(out))


class FromSdist(NamedTuple):
    """A wheel build from the sdist."""

    requires: list[str]
    """``get_requires_for_build_wheel``: what an installer would put in the build
    environment besides the ``[build-system]`` requirements (hatchling)."""
    wheel: Path
    log: str
    """What the build wrote on stderr."""


@pytest.fixture(scope="module")
def built_from_sdist(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> FromSdist:
    """The wheel built from the unpacked sdist as an installer would, in a fresh isolated
    interpreter (``-I``: no PYTHONPATH, no source tree on the path) whose environment has no
    AGENTPROTO_COMPILE and in which mypy, mypyc and setuptools cannot be imported."""
    work = tmp_path_factory.mktemp("from-sdist")
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    script = (
        "import json, sys\n"
        "for name in ('mypy', 'mypyc', 'setuptools'):\n"
        "    sys.modules[name] = None  # importing one fails\n"
        "import hatchling.build as backend\n"
        "requires = backend.get_requires_for_build_wheel()\n"
        "wheel = backend.build_wheel(sys.argv[1])\n"
        "print(json.dumps({'requires': requires, 'wheel': wheel}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTPROTO_COMPILE"}
    out = work / "wheel"
    done = subprocess.run(
        [sys.executable, "-I", "-c", script, str(out)],
        cwd=work / NAME,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    return FromSdist(found["requires"], out / found["wheel"], done.stderr)


def _package_files() -> set[str]:
    """The package's files as git sees them: tracked or new, less what .gitignore ignores
    (the rules hatchling applies too)."""
    command = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    try:
        done = subprocess.run(
            [*command, "--", "sdk/agentproto"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no git checkout to list the package's files: {exc}")
    names = done.stdout.decode().split("\0")
    return {name for name in names if name and (ROOT / name).is_file()}


def test_the_sdist_holds_exactly_the_package_and_what_builds_it(sdist: Path) -> None:
    """The package's sources and data, pyproject.toml, the build hook, README, LICENSE and
    PKG-INFO: no tests, examples, code generator, schema pins, .gitignore or CI files."""
    with tarfile.open(sdist) as archive:
        members = archive.getmembers()
    assert all(member.name.startswith(f"{NAME}/") for member in members)
    files = {member.name.removeprefix(f"{NAME}/") for member in members if member.isfile()}
    package = _package_files()
    assert "sdk/agentproto/py.typed" in package and "sdk/agentproto/__init__.py" in package
    assert sorted(files - package - SDIST_TOP) == []  # nothing more
    assert sorted((package | SDIST_TOP) - files) == []  # nothing less


def test_the_wheel_from_the_sdist_is_pure_and_needs_no_mypy(built_from_sdist: FromSdist) -> None:
    """Without AGENTPROTO_COMPILE the backend asks for nothing beyond hatchling (no mypy, no
    setuptools, no runtime dependencies) and builds a pure ``py3-none-any`` wheel without
    extensions."""
    assert built_from_sdist.requires == []
    wheel = built_from_sdist.wheel
    assert wheel.name == f"{NAME}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        tags = archive.read(f"{NAME}.dist-info/WHEEL").decode()
    assert [n for n in names if n.endswith((".so", ".pyd", ".c"))] == []
    assert "Root-Is-Purelib: true" in tags and "Tag: py3-none-any" in tags
    assert "agentproto build:" not in built_from_sdist.log  # the hook did not even try


def test_the_wheel_from_the_sdist_has_the_files_of_the_wheel_from_the_tree(
    built_from_sdist: FromSdist, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sdist lacks nothing the wheel needs: both wheels list the same files."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("AGENTPROTO_COMPILE", raising=False)
    from_tree = tmp_path / hatchling.build.build_wheel(str(tmp_path))
    with zipfile.ZipFile(from_tree) as a, zipfile.ZipFile(built_from_sdist.wheel) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())


@pytest.mark.parametrize(
    ("mode", "compiles"), [(None, False), ("", False), ("0", False), ("1", True), ("auto", True)]
)
def test_only_a_compiled_build_asks_for_mypy(
    monkeypatch: pytest.MonkeyPatch, mode: str | None, compiles: bool
) -> None:
    """The wheel's build requirements: none by default; mypy (pinned), setuptools and the
    runtime dependencies (mypyc checks the modules against them) when compiling may
    happen. An editable build stays pure whatever the mode (``test_compiled_build``)."""
    monkeypatch.chdir(ROOT)
    if mode is None:
        monkeypatch.delenv("AGENTPROTO_COMPILE", raising=False)
    else:
        monkeypatch.setenv("AGENTPROTO_COMPILE", mode)
    requires = hatchling.build.get_requires_for_build_wheel()
    assert hatchling.build.get_requires_for_build_sdist() == []
    if not compiles:
        assert requires == []
        return
    assert [r for r in requires if r.startswith("mypy")] == ["mypy==2.4.1"]
    assert [r for r in requires if r.startswith("setuptools")] != []
    assert set(PROJECT["dependencies"]) <= set(requires)


def _metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{NAME}.dist-info/METADATA").decode()
    return HeaderParser().parsestr(text)


def test_the_metadata_declares_the_license_and_ships_its_text(
    built_from_sdist: FromSdist,
) -> None:
    """License-Expression MIT with the LICENSE file in the wheel; no License classifier (PEP
    639: the expression replaces them)."""
    metadata = _metadata(built_from_sdist.wheel)
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert [c for c in metadata.get_all("Classifier", []) if c.startswith("License ::")] == []
    with zipfile.ZipFile(built_from_sdist.wheel) as archive:
        text = archive.read(f"{NAME}.dist-info/licenses/LICENSE").decode()
    assert text.startswith("MIT License") and "the agentproto authors" in text
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert {url.split(",")[0] for url in metadata.get_all("Project-URL", [])} == {
        "Homepage",
        "Documentation",
        "Repository",
        "Issues",
    }


def test_the_classifiers_name_each_python_from_the_oldest_supported() -> None:
    """One ``Programming Language :: Python :: 3.X`` per tested Python (``nox -s
    tests_all`` runs on these), consecutive, the first being requires-python's floor."""
    versions = [
        int(found[1])
        for classifier in PROJECT["classifiers"]
        if (found := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", classifier))
    ]
    floor = re.fullmatch(r">=3\.(\d+)", PROJECT["requires-python"])
    assert floor is not None
    assert versions == list(range(int(floor[1]), int(floor[1]) + len(versions)))
    assert len(versions) >= 3  # 3.11 to 3.13 at least
    assert "Typing :: Typed" in PROJECT["classifiers"]


def test_the_all_extra_is_every_other_extra() -> None:
    extras = dict(PROJECT["optional-dependencies"])
    everything = extras.pop("all")
    assert sorted(everything) == sorted({r for group in extras.values() for r in group})
    assert {"http", "starlette", "fastapi"} <= set(extras)
