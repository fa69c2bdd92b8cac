"""The optional compiled build (``hatch_build.py``): which build is imported, the hook's
fallback to pure Python, and the source rules the compiled modules keep.

``nox -s tests`` runs this on the editable (pure) install; ``nox -s tests_compiled`` runs
it, with ``AGENTPROTO_EXPECT_COMPILED=1``, on the installed compiled wheel.
"""

from __future__ import annotations

import ast
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import hatchling.build
import pytest

import hatch_build
from agentproto._core.errors import DecodeError
from agentproto._core.json.codec import loads
from agentproto.agui import EventDecoder
from tests.benchmarks.builds import ROOT, build_of, compiled_modules

EXPECT_COMPILED = os.environ.get("AGENTPROTO_EXPECT_COMPILED") == "1"


def _source(module: str) -> Path:
    return ROOT / "sdk" / (module.replace(".", "/") + ".py")


def test_the_expected_build_is_the_one_imported() -> None:
    """Every listed module is a C extension in the compiled session, a .py file otherwise
    (an editable install never compiles)."""
    assert compiled_modules(), "the list of compiled modules is empty"
    assert build_of() == ("compiled" if EXPECT_COMPILED else "pure")


def test_every_listed_module_exists() -> None:
    """The list names real modules (a renamed module would otherwise fail only the build)."""
    assert [m for m in compiled_modules() if not _source(m).is_file()] == []


def _where_compiled(found: Callable[[ast.AST], bool]) -> list[str]:
    """``module:line`` of each node of a compiled module's source that ``found`` picks."""
    places = []
    for module in compiled_modules():
        tree = ast.parse(_source(module).read_text(encoding="utf-8"))
        places += [f"{module}:{node.lineno}" for node in ast.walk(tree) if found(node)]
    return places


def test_compiled_modules_chain_errors_without_raise_from() -> None:
    """mypyc drops the ``from`` of a ``raise``: the compiled modules write
    ``raise chained(error, cause)`` instead, so both builds chain the same way."""
    found = _where_compiled(lambda node: isinstance(node, ast.Raise) and node.cause is not None)
    assert found == [], "use raise chained(error, cause) at " + ", ".join(found)


def test_compiled_modules_read_the_class_with_type() -> None:
    """mypyc compiles ``type(x)`` to a pointer read and ``x.__class__`` (on a value not
    of a compiled class) to a generic attribute lookup: the compiled modules write the
    first."""
    found = _where_compiled(
        lambda node: isinstance(node, ast.Attribute) and node.attr == "__class__"
    )
    assert found == [], "use type(x) at " + ", ".join(found)


def test_a_wrapped_error_keeps_its_cause() -> None:
    """The decoder's error for a broken event chains the parser's (the CLI reads it)."""
    with pytest.raises(DecodeError) as info:
        EventDecoder().feed_bytes(b'data: {"type": x}\n\n')
    assert isinstance(info.value.__cause__, DecodeError)
    assert info.value.__suppress_context__


def test_from_none_hides_the_context() -> None:
    """An error raised ``from None`` shows no context, in both builds."""
    with pytest.raises(DecodeError) as info:
        loads(b'{"a": "\xff"}')
    assert info.value.__cause__ is None and info.value.__suppress_context__


# -- the build hook, without compiling ------------------------------------------------


def _wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, editable: bool = False) -> Path:
    monkeypatch.chdir(ROOT)
    build = hatchling.build.build_editable if editable else hatchling.build.build_wheel
    return tmp_path / build(str(tmp_path))


def _extensions(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return [n for n in archive.namelist() if n.endswith(".so") or n.endswith(".pyd")]


def test_no_compiler_builds_a_pure_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a C compiler the ``auto`` build falls back to a pure-Python wheel, saying so."""
    monkeypatch.setenv("AGENTPROTO_COMPILE", "auto")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    wheel = _wheel(tmp_path, monkeypatch)
    assert wheel.name.endswith("-py3-none-any.whl") and _extensions(wheel) == []
    assert "building pure Python: no C compiler" in capsys.readouterr().err


def test_forced_compilation_without_a_compiler_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AGENTPROTO_COMPILE=1 never falls back silently."""
    monkeypatch.setenv("AGENTPROTO_COMPILE", "1")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(RuntimeError, match="AGENTPROTO_COMPILE=1 but no C compiler"):
        _wheel(tmp_path, monkeypatch)


@pytest.mark.parametrize(
    ("mode", "editable"), [(None, False), ("", False), ("0", False), ("1", True)]
)
def test_pure_by_default_when_turned_off_or_editable(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str | None,
    editable: bool,
) -> None:
    """AGENTPROTO_COMPILE unset, empty or 0 builds pure Python without trying to compile (a
    compiler is not even looked for); an editable install is pure even when compiling is
    forced (an extension would shadow the source being edited)."""
    if mode is None:
        monkeypatch.delenv("AGENTPROTO_COMPILE", raising=False)
    else:
        monkeypatch.setenv("AGENTPROTO_COMPILE", mode)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    wheel = _wheel(tmp_path, monkeypatch, editable=editable)
    assert wheel.name.endswith("-py3-none-any.whl") and _extensions(wheel) == []
    assert "agentproto build:" not in capsys.readouterr().err


def test_an_unknown_mode_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTPROTO_COMPILE", "yes")
    with pytest.raises(ValueError, match="AGENTPROTO_COMPILE must be 0, 1 or auto"):
        _wheel(tmp_path, monkeypatch)


def _project_listing(tmp_path: Path, modules: list[str]) -> Path:
    """A copy of the project whose compile list is ``modules``."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "sdk", project / "sdk", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("hatch_build.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project / name)
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = "".join(f'    "{m}",\n' for m in compiled_modules())
    assert listed in config
    wanted = "".join(f'    "{m}",\n' for m in modules)
    (project / "pyproject.toml").write_text(config.replace(listed, wanted), encoding="utf-8")
    return project


@pytest.mark.parametrize("mode", ["auto", "1"])
def test_a_failed_compilation_falls_back_unless_forced(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str,
) -> None:
    """A compilation that fails (here: a listed module that does not exist) gives the pure
    wheel and says why; with AGENTPROTO_COMPILE=1 the build fails instead."""
    problem = hatch_build.missing_toolchain()
    if mode == "auto" and problem:
        pytest.skip(f"the build falls back before compiling: {problem}")
    monkeypatch.setenv("AGENTPROTO_COMPILE", mode)
    monkeypatch.chdir(_project_listing(tmp_path, ["agentproto.no_such_module"]))
    if mode == "1":
        with pytest.raises(FileNotFoundError, match="no_such_module"):
            hatchling.build.build_wheel(str(tmp_path))
        return
    wheel = tmp_path / hatchling.build.build_wheel(str(tmp_path))
    assert wheel.name.endswith("-py3-none-any.whl") and _extensions(wheel) == []
    assert "building pure Python: mypyc failed (FileNotFoundError" in capsys.readouterr().err
