"""Culprit search on real CPython 3.14 + CinderX: an injected JIT-only failure traced to its function.

tests/fixtures/culprit/test_injected.py fails only when CinderX compiled `scale` (seen through
CinderX's own API); test_half.py fails in half of its runs when one of its two culprits is compiled
alone. The runs, the diff and the search go through the harness's real commands.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.compare.culprit import cinderx
from harness.compare.replay import Rerunner
from harness.record.junit import replay_prefix as prefix_of
from harness.record.culprits import CulpritStatus, read_culprits
from harness.compare.sides import load_side
from tests.e2e.test_cinderx_end_to_end import ROOT, harness, nox, only_run, session_python

pytestmark = pytest.mark.e2e
FIXTURES = ROOT / "tests" / "fixtures" / "culprit"
INJECTED = "test_injected.py::test_scale_must_stay_interpreted"
QUIET = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # no third-party plugins: a fresh rerun starts in a second


@pytest.fixture(scope="module")
def sessions() -> None:
    """The stock and cinderx-jit session environments (built once, reused)."""
    done = nox("-s", "stock-p0", "cinderx-jit-p0", "--install-only", env={})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def run(config: str, results: Path, select: str, env: dict[str, str] | None = None) -> Path:
    python = session_python("stock-p0" if config == "stock" else "cinderx-jit-p0")
    done = harness(python, "run", "--config", config, "--tier", "p0", "--tests-dir", str(FIXTURES), "--select", select,
                   "--results", str(results), env={**QUIET, **(env or {})})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return only_run(results)


@pytest.fixture(scope="module")
def injected(sessions: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """README's way: a baseline and a JIT run, then `diff --culprit` with every report format."""
    root = tmp_path_factory.mktemp("culprit")
    runs = {config: run(config, root / config, "test_injected.py") for config in ("stock", "cinderx-jit")}
    reports = root / "reports"
    done = harness(sys.executable, "diff", str(runs["stock"]), str(runs["cinderx-jit"]), "--culprit", "--jobs", "2",
                   "--format", "md", "json", "html", "--out", str(reports), env=QUIET)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return {**runs, "reports": reports}


def test_injected_failure_is_traced_to_the_exact_function_with_a_reproducer(injected: dict[str, Path]):
    report = json.loads((injected["reports"] / "report.json").read_text())
    [regression] = report["regressions"]
    assert regression["nodeid"] == INJECTED and regression["confirmed"] is True
    culprit = regression["culprit"]
    assert culprit["status"] == "found", culprit
    assert [f["name"] for f in culprit["functions"]] == ["test_injected:scale"]
    [function] = culprit["functions"]
    assert (Path(function["file"]), function["line"]) == (FIXTURES / "test_injected.py", 16)
    assert function["inlined"] == ["test_injected:add_one"]
    assert culprit["candidates"] >= 8 and culprit["probes"] > 0 and culprit["reruns"] >= 2 * culprit["probes"]
    assert culprit["passes"] == []  # being compiled at all is the failure: no single HIR pass matters
    jit_list = Path(culprit["jit_list"])
    assert jit_list.parent == injected["cinderx-jit"] / "culprits" and jit_list.read_text() == "test_injected:scale\n"
    assert read_culprits(injected["cinderx-jit"])["test_injected::test_scale_must_stay_interpreted"].status \
        is CulpritStatus.FOUND


def test_the_reproducer_fails_with_its_jit_list_and_passes_without_it(injected: dict[str, Path], tmp_path: Path):
    culprit = json.loads((injected["reports"] / "report.json").read_text())["regressions"][0]["culprit"]
    with_it = subprocess.run(["/bin/sh", "-c", culprit["reproducer"]], capture_output=True, text=True,
                             env={**os.environ, **QUIET})
    assert with_it.returncode == 1 and "scale ran as JIT-compiled code" in with_it.stdout, with_it.stdout[-2000:]
    empty = tmp_path / "empty.jitlist"
    empty.write_text("")
    without = subprocess.run(["/bin/sh", "-c", culprit["reproducer"].replace(culprit["jit_list"], str(empty))],
                             capture_output=True, text=True, env={**os.environ, **QUIET})
    assert without.returncode == 0, without.stdout[-2000:]


def test_every_report_form_shows_the_culprit(injected: dict[str, Path]):
    markdown = (injected["reports"] / "report.md").read_text()
    assert f"  - culprit: `test_injected:scale ({FIXTURES / 'test_injected.py'}:16)` (found: " in markdown
    assert "  - inlined into it: test_injected:scale ← test_injected:add_one" in markdown
    assert "  - reproducer (JIT list `" in markdown
    page = (injected["reports"] / "report.html").read_text()
    findings = json.loads(page.split('<script id="findings-data" type="application/json">')[1].split("</script>")[0])
    assert findings[0]["culprit"] == f"test_injected:scale ({FIXTURES / 'test_injected.py'}:16)"
    assert findings[0]["culprit_reproducer"].startswith("env CINDERX_JIT_LIST_FILE=")


def test_a_jit_list_loaded_in_a_fork_restricts_compilation_as_one_given_at_start_up(
        injected: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The warm path's claim, read back from CinderX: the same functions compile in a fork of a
    collected host that loads the list before it engages the JIT as in a process started with it."""
    for name, value in QUIET.items():
        monkeypatch.setenv(name, value)
    side = load_side(injected["cinderx-jit"])
    result = next(r for r in side.results if r.nodeid == INJECTED)
    jit_list = tmp_path / "two.jitlist"
    cinderx.write_jit_list(jit_list, ["test_injected:scale", "test_injected:shift"])
    compiled = {}
    for restart in ("warm", "fresh"):
        with Rerunner(60, restart, settable=True) as rerunner:
            log = tmp_path / f"{restart}.log"
            outcome = rerunner.outcome(prefix_of(result.replay, INJECTED), [INJECTED], INJECTED,
                                       cinderx.settings(log, jit_list))
            assert outcome == "failed" and (rerunner.warm_reruns, rerunner.fresh_reruns) == (
                (1, 0) if restart == "warm" else (0, 1))
        compiled[restart] = set(cinderx.read_log(log).compiled)
    assert compiled["warm"] == compiled["fresh"] == {"test_injected:scale", "test_injected:shift"}


def test_a_failure_in_half_of_the_probes_is_reported_flaky_not_followed(sessions: None, tmp_path: Path):
    env = {**QUIET, "CULPRIT_FIXTURE_COUNTER": str(tmp_path / "counter")}
    jit_run = run("cinderx-jit", tmp_path / "results", "test_half.py", env)
    done = harness(sys.executable, "culprit", str(jit_run), "--test", "test_half.py::test_half", "--probes", "2",
                   env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    culprit = read_culprits(jit_run)["test_half::test_half"]
    assert culprit.status is CulpritStatus.FLAKY and culprit.functions == () and not culprit.reproducer
    assert re.fullmatch(r"stopped at a flaky probe: with \d+ function\(s\) on the JIT list the test failed 1 of 2 "
                        r"reruns, passed 1 of 2 reruns; the failure was narrowed to \d+ function\(s\) that failed "
                        r"every rerun", culprit.note), culprit.note
    assert "test_half::test_half: flaky" in done.stdout
    assert os.path.exists(env["CULPRIT_FIXTURE_COUNTER"])


def test_a_culprit_found_for_one_regression_of_a_polluter_group_is_checked_and_reused_for_the_next(
        sessions: None, tmp_path: Path):
    """Two regressions that fail only after the same earlier test: one search, then the other takes
    its culprit once the culprit's JIT list and reproducer fail for it too (real reruns, real CinderX)."""
    runs = {config: run(config, tmp_path / config, "test_polluted.py") for config in ("stock", "cinderx-jit")}
    done = harness(sys.executable, "diff", str(runs["stock"]), str(runs["cinderx-jit"]), "--culprit", "--jobs", "2",
                   "--format", "json", "--out", str(tmp_path / "reports"), env=QUIET)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    regressions = json.loads((tmp_path / "reports" / "report.json").read_text())["regressions"]
    assert [r["nodeid"] for r in regressions] == ["test_polluted.py::test_first", "test_polluted.py::test_second"]
    assert all(r["confirmed"] and r["polluters"] == ["test_polluted.py::test_pollute"] for r in regressions)
    first, second = (r["culprit"] for r in regressions)
    assert first["status"] == second["status"] == "found", (first, second)
    assert [f["name"] for f in first["functions"]] == [f["name"] for f in second["functions"]] == ["test_polluted:scale"]
    assert not first.get("reused_from") and second["reused_from"] == "test_polluted::test_first"
    assert second["probes"] < first["probes"]
    with_it = subprocess.run(["/bin/sh", "-c", second["reproducer"]], capture_output=True, text=True,
                             env={**os.environ, **QUIET})
    assert with_it.returncode == 1 and "scale ran as JIT-compiled code after test_pollute" in with_it.stdout
