"""The documentation holds: every code block runs as written or is claimed by a named
test, the limits tables say what the signatures say, the reference covers every public
module, the CLI examples run, and the links between pages lead somewhere.

The site itself is built by ``nox -s docs`` (Sphinx, warnings as errors); these tests
need no Sphinx. The block runner is :mod:`tests.docblocks`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docblocks import (
    ROOT,
    ClaimError,
    blocks,
    check_page,
    name,
    pages,
)
from tests.layout import PUBLIC

# ---- every code block runs, or a named test runs it ----------------------------------------


@pytest.mark.parametrize("page", pages(), ids=name)
def test_every_python_block_runs_or_is_claimed(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's Python blocks run as written, in order, in one namespace (in a scratch
    folder); a block marked ``<!-- tested by PATH -->`` is claimed by a test that
    exists and names the page and the block's heading."""
    monkeypatch.chdir(tmp_path)
    check_page(page)


def test_the_pages_are_found() -> None:
    """The walk sees the front page, the architecture and the docs (so the test above
    cannot pass by finding nothing)."""
    found = {name(page) for page in pages()}
    assert {"README.md", "ARCHITECTURE.md", "docs/index.md", "docs/limits.md"} <= found
    assert "docs/guides/client-authors.md" in found
    assert not any("_build" in page for page in found)
    assert sum(len(blocks(page)) for page in pages()) > 30


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_a_new_unmarked_block_that_fails_fails_the_check(tmp_path: Path) -> None:
    """A block nobody claims runs, and its failure is the check's failure, with a
    traceback pointing at the page's own line."""
    page = _page(
        tmp_path,
        "# Page\n\n```python\nx = 1\n```\n\n## Later\n\n```python\nassert x == 1\nx / 0\n```\n",
    )
    with pytest.raises(ZeroDivisionError) as failed:
        check_page(page, root=tmp_path)
    last = failed.traceback[-1]
    assert Path(str(last.path)) == page and last.lineno + 1 == 11


def test_the_blocks_of_a_page_share_one_namespace(tmp_path: Path) -> None:
    """Blocks run in order and see what earlier blocks defined; ``py`` is Python too."""
    page = _page(
        tmp_path, "```python\nx = 2\n```\n\ntext\n\n```py\nassert x == 2\n```\n\n```bash\nx\n```\n"
    )
    assert check_page(page, root=tmp_path) == (2, 0)


def test_a_claimed_block_is_checked_not_run(tmp_path: Path) -> None:
    """A claimed block is not run; its test must exist and name the page and heading."""
    text = "## Needs a peer\n\n<!-- tested by tests/test_peer.py -->\n```python\n1 / 0\n```\n"
    page = _page(tmp_path, text)
    with pytest.raises(ClaimError, match="does not exist"):
        check_page(page, root=tmp_path)
    (tmp_path / "tests").mkdir()
    claim = tmp_path / "tests" / "test_peer.py"
    claim.write_text('PAGE = "page.md"\n', encoding="utf-8")
    with pytest.raises(ClaimError, match="never mentions 'Needs a peer'"):
        check_page(page, root=tmp_path)
    claim.write_text('run_doc_block("page.md", "Needs a peer")\n', encoding="utf-8")
    assert check_page(page, root=tmp_path) == (0, 1)


def test_an_unknown_fence_language_is_refused(tmp_path: Path) -> None:
    """A block in a language the runner does not know fails: no Python block can hide as
    ``pycon`` or ``python3.11``."""
    page = _page(tmp_path, "```pycon\n>>> 1 / 0\n```\n")
    with pytest.raises(ValueError, match="unknown fence language 'pycon'"):
        check_page(page, root=tmp_path)


# ---- the CLI examples -----------------------------------------------------------------------


def _cli_examples() -> Iterator[tuple[str, list[str]]]:
    """Each ``agentproto ...`` line of a shell block, as argument lists to run: without
    its optional ``[--flags]``, then with them; ``[FILE]``-style placeholders dropped."""
    for page in pages():
        for block in blocks(page):
            if block.language not in {"bash", "console", "shell"}:
                continue
            for line in block.code.splitlines():
                command = line.split("#", 1)[0].strip().removeprefix("$ ")
                if not command.startswith("agentproto ") or "CMD" in command:
                    continue
                words = command.split()
                plain = [w for w in words if not w.startswith("[")]
                options = [w.strip("[]") for w in words if w.startswith("[-")]
                yield f"{name(page)}: {command}", plain
                if options:
                    yield f"{name(page)}: {command} (options)", plain + options


CLI_EXAMPLES = list(_cli_examples())


def test_the_cli_examples_are_found() -> None:
    """The walk finds the command line page's examples."""
    assert any("agentproto validate" in label for label, _ in CLI_EXAMPLES)


@pytest.mark.parametrize(("label", "words"), CLI_EXAMPLES, ids=[x for x, _ in CLI_EXAMPLES])
def test_the_cli_examples_run(label: str, words: list[str], tmp_path: Path) -> None:
    """Each documented ``agentproto`` command runs on the bundled data and exits 0
    (``agentproto`` is ``python -m agentproto`` of this tree, wherever it appears)."""
    argv: list[str] = []
    for word in words:
        argv += [sys.executable, "-m", "agentproto"] if word == "agentproto" else [word]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "sdk")}
    done = subprocess.run(
        argv,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


# ---- the limits page says what the signatures say -------------------------------------------

LIMITS = ROOT / "docs" / "limits.md"
REFERENCE = ROOT / "docs" / "reference"
SCHEMAS = frozenset({"agentproto.agui.schema", "agentproto.acp.schema", "agentproto.acp.schema_v1"})


def _public_modules() -> list[str]:
    """The modules the reference documents: the packages, ``agentproto.cli`` and the
    public modules below them (``tests/layout.py``), ``__main__`` aside."""
    below = [f"{package}.{module}" for package, names in PUBLIC.items() for module in names]
    return sorted(
        {"agentproto", "agentproto.agui", "agentproto.acp", "agentproto.cli", *below}
        - {"agentproto.__main__"}
    )


def _is_limit(parameter: str) -> bool:
    return parameter.startswith("max_") or parameter.endswith("timeout")


def _callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every public function, class and public method, by the name a page writes
    (``Consumer``, ``AcpClient.prompt``); exceptions aside (their ``limit`` or
    ``timeout`` argument reports a limit, it does not set one)."""
    for module_name in _public_modules():
        if module_name in SCHEMAS:
            continue
        module = importlib.import_module(module_name)
        for export in module.__all__:
            value = getattr(module, export)
            if inspect.isclass(value):
                if issubclass(value, BaseException):
                    continue
                yield export, value
                for attribute in vars(value):
                    method = getattr(value, attribute, None)
                    if not attribute.startswith("_") and callable(method):
                        yield f"{export}.{attribute}", method
            elif inspect.isfunction(value):
                yield export, value


def _limits_in_code() -> dict[tuple[str, str], Any]:
    """(callable, parameter) -> default, for every limit a public signature takes."""
    found: dict[tuple[str, str], Any] = {}
    for label, target in _callables():
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):
            continue
        for parameter in signature.parameters.values():
            if _is_limit(parameter.name):
                found[(label, parameter.name)] = parameter.default
    return found


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _ticked(text: str) -> set[str]:
    return set(re.findall(r"`([A-Za-z_][\w.]*)`", text))


def _limit_rows() -> list[tuple[str, set[str], str, bool]]:
    """(argument, callables it is for, default cell, whether the table names them) for
    every table row of the limits page; a table without an ``of`` column is for the
    callables its section's text names."""
    rows: list[tuple[str, set[str], str, bool]] = []
    sections = re.split(r"^## ", LIMITS.read_text(encoding="utf-8"), flags=re.M)
    for text in sections:
        lines = text.splitlines()
        prose = "\n".join(line for line in lines if not line.startswith("|"))
        header: list[str] | None = None
        for line in lines:
            if not line.startswith("|"):
                header = None
                continue
            cells = _cells(line)
            if header is None:
                header = cells
            elif set("".join(cells)) <= set("-: "):
                continue
            else:
                row = dict(zip(header, cells, strict=True))
                argument = row["argument"].strip("`")
                named = "of" in row
                owners = _ticked(row["of"]) if named else _ticked(prose)
                rows.append((argument, owners, row["default"], named))
    return rows


def _parse_default(cell: str) -> Any:
    """The value a default cell states (``64 MiB``, ``30 s``, ``250,000``, ``None``), or
    the cell itself when it states it in words."""
    text = cell.replace("`", "").strip()
    if text == "None":
        return None
    if match := re.fullmatch(r"([\d,]+) MiB", text):
        return int(match.group(1).replace(",", "")) * 1024 * 1024
    if match := re.fullmatch(r"([\d.]+) s", text):
        return float(match.group(1))
    if re.fullmatch(r"[\d,]+", text):
        return int(text.replace(",", ""))
    return cell


def test_the_limits_page_lists_every_limit_with_its_default() -> None:
    """Every ``max_*`` and ``*timeout`` parameter of a public signature has a row on the
    limits page naming its callable, and a default stated as a number or ``None`` is the
    signature's."""
    rows = _limit_rows()
    assert len(rows) > 15
    problems = []
    for (label, parameter), default in sorted(_limits_in_code().items()):
        owner = label.split(".")[0] if "." not in label else label
        matching = [row for row in rows if row[0] == parameter and owner in row[1]]
        if not matching:
            problems.append(f"{label}({parameter}=...) is on no row of docs/limits.md")
            continue
        if default is None or isinstance(default, int | float):
            stated = [_parse_default(row[2]) for row in matching]
            if default not in stated:
                problems.append(f"{label}({parameter}={default!r}): the page says {stated}")
    assert not problems, "\n".join(problems)


def _resolve(label: str) -> Any:
    head, _, attribute = label.partition(".")
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        if head in getattr(module, "__all__", ()):
            value = getattr(module, head)
            return getattr(value, attribute) if attribute else value
    raise LookupError(label)


def test_every_row_of_the_limits_page_is_a_real_parameter() -> None:
    """Each callable a row names takes that argument (or passes ``**options`` on), so a
    renamed or removed limit cannot stay documented."""
    problems = []
    for argument, owners, _, named in _limit_rows():
        if not named:
            continue
        for owner in owners:
            parameters = inspect.signature(_resolve(owner)).parameters
            passes_on = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
            if argument not in parameters and not passes_on:
                problems.append(f"{owner} takes no {argument}")
    assert not problems, "\n".join(problems)


# ---- the reference and the links ------------------------------------------------------------


def test_the_reference_has_one_page_per_public_module() -> None:
    """``docs/reference`` documents exactly the public modules, each with ``automodule``,
    and its index lists every page."""
    pages_found = {path.stem for path in REFERENCE.glob("*.rst")} - {"index"}
    assert pages_found == set(_public_modules())
    index = (REFERENCE / "index.rst").read_text(encoding="utf-8")
    for module in _public_modules():
        text = (REFERENCE / f"{module}.rst").read_text(encoding="utf-8")
        assert f".. automodule:: {module}\n" in text
        assert f"   {module}\n" in index


_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+)\)")


def test_relative_links_lead_to_files() -> None:
    """Every relative link of the README, the architecture and the docs names a file
    that exists (the README's table of contents among them)."""
    broken = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for target in _LINK.findall(text):
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not path.exists():
                broken.append(f"{name(page)}: {target}")
    assert not broken, "\n".join(broken)


def test_the_readme_links_every_page_of_the_docs() -> None:
    """The front page's table of contents reaches every page of the site."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in pages():
        relative = name(page)
        if relative.startswith("docs/") and relative not in {
            "docs/index.md",
            "docs/architecture.md",  # the README links ARCHITECTURE.md itself
        }:
            assert f"]({relative})" in readme, relative
