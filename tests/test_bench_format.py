"""The benchmark harness: its generated run and the format of its ``--json`` output.

Runs the real harness on a tiny run, so it is fast and needs no peer SDK; when
ag-ui-protocol is not importable the comparison figures must be reported as missing.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from agentproto.agui import dump_event, parse_event
from tests.benchmarks import bench, builds, paired
from tests.benchmarks.run_generator import generate_run, to_jsonl, to_sse

TINY = ["--events", "200", "--repeat", "1"]
KEYS = {"name", "unit", "ours", "peer", "ratio", "better", "build"}
PEER_FIGURES = {"agui.decode_json", "agui.encode_json", "agui.decode_sse", "agui.encode_sse"}
PEER_INSTALLED = (
    importlib.util.find_spec("ag_ui") is not None
    and importlib.util.find_spec("pydantic") is not None
)


def _run(tmp_path: Path, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    out = tmp_path / "figures.json"
    status = bench.main([*TINY, "--json", str(out), *extra])
    return status, json.loads(out.read_text())


def _check_figure(fig: dict[str, Any]) -> None:
    assert set(fig) == KEYS
    assert isinstance(fig["name"], str) and fig["name"] in bench.REGISTRY
    assert fig["better"] in ("higher", "lower")
    assert isinstance(fig["ours"], float) and fig["ours"] > 0
    assert fig["build"] == builds.build_of()  # the build this test process imports
    if fig["unit"] in ("us/event", "ms") and fig["peer"] is not None:  # a comparison
        assert isinstance(fig["peer"], float) and fig["peer"] > 0
        assert fig["better"] == "higher"
        assert math.isclose(fig["ratio"], fig["peer"] / fig["ours"], rel_tol=1e-4)
    elif fig["unit"] == "us/event":  # a scaling figure of ours alone
        assert isinstance(fig["ratio"], float) and fig["better"] == "lower"
    elif fig["unit"] in ("ms", "KiB"):  # a measurement of ours alone
        assert fig["peer"] is None and fig["ratio"] is None and fig["better"] == "lower"
    else:  # a throughput figure
        assert fig["unit"] == "events/s"
        assert fig["peer"] is None and fig["ratio"] is None


def test_generated_run_is_deterministic_and_framed() -> None:
    """The same length and seed give the same run, bounded by RUN_STARTED and RUN_FINISHED."""
    run = generate_run(300, seed=7)
    assert run == generate_run(300, seed=7)
    assert run != generate_run(300, seed=8)
    assert len(run) == 300
    assert run[0]["type"] == "RUN_STARTED" and run[-1]["type"] == "RUN_FINISHED"
    assert all(e["type"] not in ("RUN_STARTED", "RUN_FINISHED") for e in run[1:-1])
    assert [len(generate_run(n)) for n in (2, 3, 4, 5)] == [2, 3, 4, 5]


def test_generated_run_parses_strictly_and_round_trips() -> None:
    """Every generated event is schema-valid for our strict parser and dumps back unchanged."""
    for event in generate_run(1_000, seed=3):
        assert dump_event(parse_event(event)) == event


OPENS = {
    "TEXT_MESSAGE_START": ("text", "messageId"),
    "TOOL_CALL_START": ("tool", "toolCallId"),
    "REASONING_START": ("reasoning", "messageId"),
    "REASONING_MESSAGE_START": ("reasoning message", "messageId"),
    "STEP_STARTED": ("step", "stepName"),
}
CLOSES = {
    "TEXT_MESSAGE_END": ("text", "messageId"),
    "TOOL_CALL_END": ("tool", "toolCallId"),
    "REASONING_END": ("reasoning", "messageId"),
    "REASONING_MESSAGE_END": ("reasoning message", "messageId"),
    "STEP_FINISHED": ("step", "stepName"),
}
MINTS = {
    **OPENS,
    "TOOL_CALL_RESULT": ("result", "messageId"),
    "ACTIVITY_SNAPSHOT": ("activity", "messageId"),
}


def test_generated_run_closes_what_it_opens_and_never_reuses_an_id() -> None:
    """Every opened message, tool call, reasoning span and step is closed, and ids never repeat."""
    run = generate_run(2_000, seed=1)
    open_: set[tuple[str, str]] = set()
    minted: list[str] = [run[0]["threadId"], run[0]["runId"]]
    for event in run:
        kind = event["type"]
        if kind in OPENS:
            family, key = OPENS[kind]
            assert (family, event[key]) not in open_
            open_.add((family, event[key]))
        elif kind in CLOSES:
            family, key = CLOSES[kind]
            open_.remove((family, event[key]))
        if kind in MINTS:
            minted.append(event[MINTS[kind][1]])
    assert not open_
    assert len(minted) == len(set(minted))


def test_sse_and_jsonl_frame_one_compact_document_per_event() -> None:
    """``to_sse`` writes ``data: <json>\\n\\n`` and ``to_jsonl`` one line per event."""
    run = generate_run(20)
    frames = to_sse(run).split(b"\n\n")
    assert frames[-1] == b"" and len(frames) == 21
    assert [json.loads(f.removeprefix(b"data: ")) for f in frames[:-1]] == run
    lines = to_jsonl(run).split(b"\n")
    assert lines[-1] == b"" and [json.loads(line) for line in lines[:-1]] == run
    assert b"\n" not in lines[0] and b": " not in lines[0]


@pytest.mark.skipif(not PEER_INSTALLED, reason="ag-ui-protocol not installed")
def test_json_output_with_peer(tmp_path: Path) -> None:
    """With the peer installed every figure is written with the documented keys and ratio."""
    status, figures = _run(tmp_path, "--only", "agui.*")
    assert status == 0
    assert [f["name"] for f in figures] == [n for n in bench.REGISTRY if n.startswith("agui.")]
    for fig in figures:
        _check_figure(fig)


def test_missing_peer_is_reported_not_faked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ag-ui-protocol its comparisons are named as skipped, not written with a null peer."""
    monkeypatch.setitem(sys.modules, "ag_ui", None)
    monkeypatch.setitem(sys.modules, "ag_ui.core", None)
    status, figures = _run(tmp_path, "--only", "agui.*")
    assert status == 1
    err = capsys.readouterr().err
    for name in PEER_FIGURES:
        assert f"SKIPPED {name}: peer ag-ui-protocol is missing" in err
    assert "peer missing:" in err
    # every figure that needs no peer is still measured and written
    assert {f["name"] for f in figures} == {
        n for n in bench.REGISTRY if n.startswith("agui.") and n not in PEER_FIGURES
    }
    for fig in figures:
        _check_figure(fig)


def test_only_filters_figures(tmp_path: Path) -> None:
    """``--only`` keeps the figures whose name matches the glob, and nothing else runs."""
    status, figures = _run(tmp_path, "--only", "agui.decode_fl*")
    assert status == 0
    assert [f["name"] for f in figures] == ["agui.decode_floor"]


def test_figure_constructors_follow_the_documented_conventions() -> None:
    """Comparison, scaling and throughput figures carry their documented unit, ratio, better."""
    cmp_ = bench.Figure.comparison("x", 2.0, 3.0)
    assert (cmp_.unit, cmp_.ratio, cmp_.better) == ("us/event", 1.5, "higher")
    scale = bench.Figure.scaling("y", 2.0, 5.0)
    assert (scale.ours, scale.peer, scale.ratio, scale.better) == (5.0, None, 2.5, "lower")
    tput = bench.Figure.throughput("z", 123456.0)
    assert (tput.unit, tput.peer, tput.ratio, tput.better) == ("events/s", None, None, "higher")
    for fig in (cmp_, scale, tput):
        assert set(fig.to_json()) == KEYS


ACP_PEER_INSTALLED = importlib.util.find_spec("acp") is not None


@pytest.mark.skipif(not (PEER_INSTALLED and ACP_PEER_INSTALLED), reason="peers not installed")
def test_import_figures_with_peers(tmp_path: Path) -> None:
    """Import times are comparisons in ms, ours against each peer's, ratio = peer / ours."""
    status, figures = _run(tmp_path, "--only", "import.*")
    assert status == 0
    assert [f["name"] for f in figures] == ["import.agui", "import.acp"]
    for fig in figures:
        _check_figure(fig)
        assert fig["unit"] == "ms"


def test_import_figures_name_a_missing_peer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the peers the import figures are skipped and named, never written."""
    for module in ("ag_ui", "ag_ui.core", "acp"):
        monkeypatch.setitem(sys.modules, module, None)
    status, figures = _run(tmp_path, "--only", "import.*")
    assert (status, figures) == (1, [])
    err = capsys.readouterr().err
    assert "SKIPPED import.agui: peer ag-ui-protocol is missing" in err
    assert "SKIPPED import.acp: peer agent-client-protocol is missing" in err


def test_import_time_is_measured_in_a_fresh_interpreter() -> None:
    """The probe imports the module in a new process: a module this process already holds
    still costs its import there, and one that does not exist is an error."""
    from tests.benchmarks.bench_imports import import_ms

    assert "agentproto.agui" in sys.modules
    assert import_ms("agentproto.agui") > 0.5  # our AG-UI package cannot import in 0.5 ms
    with pytest.raises(bench.BenchError, match="no_such_module_here"):
        import_ms("no_such_module_here")


def test_child_argv_drops_the_parent_only_options() -> None:
    """The compiled run gets the same figures and sizes, never the parent's JSON path or site."""
    argv = ["--events", "9", "--compiled-site", "/x", "--json", "o.json", "--json=p", "--only", "a"]
    assert builds.child_argv(argv) == ["--events", "9", "--only", "a"]


def _fig(build: str, ours: float, peer: float | None, ratio: float | None, unit: str) -> Any:
    better = "lower" if peer is None and ratio is not None else "higher"
    return {"name": "x", "unit": unit, "ours": ours, "peer": peer, "ratio": ratio,
            "better": better, "build": build}  # fmt: skip


def test_side_by_side_shows_both_builds_and_the_gain() -> None:
    """One line per figure: both builds' costs, both ratios, the compiled build's gain."""
    pure = _fig("pure", 5.0, 4.0, 0.8, "us/event")
    compiled = _fig("compiled", 2.5, 3.0, 1.2, "us/event")
    line = builds.side_by_side([pure], [compiled]).splitlines()[2].split()
    assert line == ["x", "us/event", "5.000", "2.500", "4.000", "0.80x", "1.20x", "1.50x", "higher"]
    fast = builds.side_by_side(
        [_fig("pure", 100_000.0, None, None, "events/s")],
        [_fig("compiled", 150_000.0, None, None, "events/s")],
    )
    assert fast.splitlines()[2].split()[2:] == [
        "100,000",
        "150,000",
        "—",
        "—",
        "—",
        "1.50x",
        "higher",
    ]
    missing = builds.side_by_side([pure], []).splitlines()[2].split()
    assert missing[3] == "—" and missing[6:8] == ["—", "—"]


def test_compiled_site_figures_are_written_beside_the_pure_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --compiled-site the JSON holds this run's figures, then the compiled run's, and
    the side-by-side table is printed."""
    seen: list[tuple[Path, list[str]]] = []
    compiled = _fig("compiled", 1.0, 2.0, 2.0, "us/event") | {"name": "agui.decode_floor"}

    def fake(site: Path, argv: list[str]) -> tuple[list[dict[str, Any]], int]:
        seen.append((site, argv))
        return [compiled], 0

    monkeypatch.setattr(builds, "run_compiled", fake)
    status, figures = _run(tmp_path, "--only", "agui.decode_fl*", "--compiled-site", "/c")
    assert status == 0 and seen == [(Path("/c"), [*TINY, "--only", "agui.decode_fl*"])]
    assert [(f["name"], f["build"]) for f in figures] == [
        ("agui.decode_floor", builds.build_of()),
        ("agui.decode_floor", "compiled"),
    ]
    assert "# both builds" in capsys.readouterr().out


def test_a_compiled_run_that_imports_the_pure_build_is_refused() -> None:
    """A --compiled-site holding no compiled build (here: the sources, pure whichever build
    this process runs) is an error: its figures are not reported as the compiled build's."""
    with pytest.raises(RuntimeError, match="measured the pure build"):
        builds.run_compiled(builds.ROOT / "sdk", [*TINY, "--only", "agui.decode_fl*"])


def test_paired_comparison_times_every_loop_in_both_workers() -> None:
    """Each loop gets a positive best time from both workers, and one table line."""
    results = paired.measure(builds.ROOT / "sdk", 200, 1, require_compiled=False)
    assert list(results) == list(paired.LOOPS)
    assert all(pure > 0 and compiled > 0 for pure, compiled in results.values())
    lines = paired.table(results).splitlines()
    assert len(lines) == 2 + len(paired.LOOPS)
    pure, compiled = results["orjson"]
    assert lines[3].split() == [
        "orjson",
        f"{pure:.3f}",
        f"{compiled:.3f}",
        f"{pure / compiled:.2f}x",
    ]


def test_paired_comparison_refuses_a_site_without_the_compiled_build() -> None:
    """A site that imports the pure build is not measured as the compiled one."""
    with pytest.raises(RuntimeError, match="the pure and the pure build"):
        paired.measure(builds.ROOT / "sdk", 200, 1)
