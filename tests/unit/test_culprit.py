"""Culprit search without a JIT: the search over JIT lists, probe verdicts, CinderX's log, the record.

The real thing (CinderX compiling, forks taking a JIT list) is tests/e2e/test_culprit_end_to_end.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.compare.culprit import cinderx
from harness.compare.culprit.probes import Probe, Rerun
from harness.compare.culprit.search import FlakyProbe, JitList, Verdict, smallest_failing
from harness.record.culprits import (Culprit, CulpritFunction, CulpritStatus, jit_list_path, read_culprits,
                                     write_culprit)

pytestmark = pytest.mark.unit

CANDIDATES = tuple(f"mod:f{i:02d}" for i in range(16))


class Fake:
    """first_failing over a rule: which lists fail; counts the lists probed."""

    def __init__(self, fails) -> None:
        self.fails = fails
        self.probed: list[JitList] = []

    def __call__(self, lists: Sequence[JitList]) -> int | None:
        for index, jit_list in enumerate(lists):
            self.probed.append(jit_list)
            if self.fails(set(jit_list)):
                return index
        return None


def test_one_culprit_among_sixteen_is_found_by_halving():
    probe = Fake(lambda names: "mod:f11" in names)
    assert smallest_failing(CANDIDATES, probe) == ("mod:f11",)
    assert len(probe.probed) <= 2 * 4  # at most two probes per halving


def test_two_functions_that_fail_only_together_are_both_kept():
    probe = Fake(lambda names: {"mod:f02", "mod:f13"} <= names)
    assert smallest_failing(CANDIDATES, probe) == ("mod:f02", "mod:f13")


def test_the_same_inputs_give_the_same_answer_and_probes():
    runs = [Fake(lambda names: {"mod:f05", "mod:f06", "mod:f09"} <= names) for _ in range(2)]
    answers = [smallest_failing(CANDIDATES, probe) for probe in runs]
    assert answers[0] == answers[1] == ("mod:f05", "mod:f06", "mod:f09")
    assert runs[0].probed == runs[1].probed


def rerun(outcome: str) -> Rerun:
    return Rerun(outcome, cinderx.Log(True, (), (), (), {}))


def half_of_the_time(count: int):
    """first_failing over real Probe verdicts of `count` reruns each, for a failure that needs f02
    and f13 every time, and happens in every other rerun with f13 alone compiled."""
    runs = itertools.count(1)

    def outcome(names: set[str]) -> str:
        if {"mod:f02", "mod:f13"} <= names:
            return "failed"
        if "mod:f13" in names:
            return "failed" if next(runs) % 2 else "passed"
        return "passed"

    def first_failing(lists: Sequence[JitList]) -> int | None:
        for index, jit_list in enumerate(lists):
            probe = Probe(jit_list, None, tuple(rerun(outcome(set(jit_list))) for _ in range(count)))
            if probe.verdict is Verdict.FLAKY:
                raise FlakyProbe(jit_list, probe.seen)
            if probe.verdict is Verdict.FAILS:
                return index
        return None

    return first_failing


def test_two_reruns_per_probe_report_a_flaky_probe_where_one_would_converge_on_a_wrong_culprit():
    wrong = smallest_failing(CANDIDATES, half_of_the_time(1))
    assert wrong != ("mod:f02", "mod:f13")  # followed the coin toss
    with pytest.raises(FlakyProbe) as stopped:
        smallest_failing(CANDIDATES, half_of_the_time(2))
    assert "mod:f13" in stopped.value.jit_list and "mod:f02" not in stopped.value.jit_list
    assert str(stopped.value) == "with 8 function(s) on the JIT list the test failed 1 of 2 reruns, passed 1 of 2 reruns"
    assert set(stopped.value.narrowed) >= {"mod:f02", "mod:f13"}  # how far the failure was narrowed, soundly


def test_a_probe_fails_only_when_every_rerun_fails_and_passes_only_when_every_rerun_passes():
    def verdict(*outcomes: str) -> Verdict:
        return Probe((), None, tuple(map(rerun, outcomes))).verdict

    assert verdict("failed", "crashed") is Verdict.FAILS
    assert verdict("passed", "passed") is Verdict.PASSES
    assert verdict("passed", "failed") is Verdict.FLAKY
    assert verdict("passed", "skipped") is Verdict.FLAKY  # a skip is no pass: no verdict from it


LOG = """\
JIT: cinderx/Jit/jit_flag_processor.cpp:183 -- CINDERX_JIT_LOG_FILE has been specified
JIT: cinderx/Jit/compiler.cpp:259 -- Compiling test_injected:scale
JIT: cinderx/Jit/hir/inliner.cpp:586 -- Inlining function test_injected:add_one into test_injected:scale
JIT: cinderx/Jit/compiler.cpp:86 -- HIR for test_injected:scale after pass SSAify:
JIT: cinderx/Jit/compiler.cpp:86 -- HIR for test_injected:scale after pass InlineFunctionCalls:
JIT: cinderx/Jit/compiler.cpp:329 -- Finished compiling test_injected:scale in 1635µs, code size: 728 bytes
JIT: cinderx/Jit/compiler.cpp:259 -- Compiling annotationlib:get_annotations
JIT: cinderx/Jit/pyjit.cpp:5365 -- Cannot compile annotationlib:get_annotations to HIR because it uses banned global 'eval'
JIT: cinderx/Jit/pyjit.cpp:4437 -- Background compile failed: 8 for annotationlib:get_annotations
JIT: cinderx/Jit/compiler.cpp:259 -- Compiling torch.fx._symbolic_trace:Tracer.trace
"""


def test_cinderx_log_names_compiles_inlining_passes_and_what_was_still_compiling(tmp_path: Path):
    path = tmp_path / "jit.log"
    path.write_text(LOG, encoding="utf-8")
    log = cinderx.read_log(path)
    assert log.compiled == ("test_injected:scale", "annotationlib:get_annotations", "torch.fx._symbolic_trace:Tracer.trace")
    assert log.unfinished == ("torch.fx._symbolic_trace:Tracer.trace",)
    assert log.inlined_into("test_injected:scale") == ("test_injected:add_one",)
    assert log.names == ("test_injected:scale", "annotationlib:get_annotations", "torch.fx._symbolic_trace:Tracer.trace",
                         "test_injected:add_one")
    assert log.passes["test_injected:scale"] == {"SSAify", "InlineFunctionCalls"}
    assert log.outside(["test_injected:scale", "annotationlib:get_annotations"]) == (
        "torch.fx._symbolic_trace:Tracer.trace",)
    assert not cinderx.read_log(tmp_path / "absent.log").written
    (tmp_path / "jit.log.4242").write_text(" -- Compiling worker:step\n")  # a process the test started
    assert cinderx.read_log(path).compiled[-1] == "worker:step"


INLINER_LOG = """\
JIT: cinderx/Jit/hir/inliner.cpp:1012 -- Pruning cold call to dataclasses:fields from torch.fx.proxy:TracerBase.create_arg: callee called 1 times vs caller's 1782
JIT: cinderx/Jit/hir/inliner.cpp:573 -- Tried to inline annotationlib:get_annotations into inspect:_signature_from_callable, but failed with Cannot compile
JIT: cinderx/Jit/hir/inliner.cpp:963 -- Refusing to inline functions into torch.utils._pytree:tree_iter: function is a generator
JIT: cinderx/Jit/hir/inliner.cpp:586 -- Inlining function torch.fx.node:_get_qualified_name into torch.fx.graph:CodeGen._gen_python_code.<locals>._get_repr
JIT: cinderx/Jit/hir/inliner.cpp:758 -- Can't inline non-function v800:Object into torch.fx.graph:CodeGen._gen_python_code.<locals>._get_repr
"""


def test_the_inliner_log_alone_names_the_function_it_was_working_on_last(tmp_path: Path):
    path = tmp_path / "jit.log"
    path.write_text(INLINER_LOG, encoding="utf-8")
    log = cinderx.read_log(path)
    repr_ = "torch.fx.graph:CodeGen._gen_python_code.<locals>._get_repr"
    assert log.compiled == () and log.compiling == (repr_,)
    assert log.inlining == ("torch.fx.proxy:TracerBase.create_arg", "inspect:_signature_from_callable",
                            "torch.utils._pytree:tree_iter", repr_)
    assert log.inlined_into(repr_) == ("torch.fx.node:_get_qualified_name",)
    assert log.outside([repr_]) == log.inlining[:3]  # what the inliner worked on, the list did not name
    assert cinderx.settings(path, inliner_only=True) == {"CINDERX_JIT_DEBUG_INLINER": "1", "CINDERX_JIT_LOG_FILE": str(path),
                                                         "HARNESS_COMPILED": str(path) + ".compiled"}


def test_probe_settings_are_cinderx_options_it_lists(tmp_path: Path):
    settings = cinderx.settings(tmp_path / "x.log", tmp_path / "x.jitlist", "DeadCodeElimination")
    assert settings == {"CINDERX_JIT_DEBUG": "1", "CINDERX_JIT_LOG_FILE": str(tmp_path / "x.log"),
                        "HARNESS_COMPILED": str(tmp_path / "x.log.compiled"),
                        "CINDERX_JIT_LIST_FILE": str(tmp_path / "x.jitlist"), "CINDERX_JIT_LIST_MATCH_LINE_NUMBERS": "1",
                        "CINDERX_JIT_DEAD_CODE_ELIM": "0", "CINDERX_JIT_DUMP_HIR_PASSES": "1"}
    assert (tmp_path / "x.log.compiled").is_dir()  # where the rerun's processes write what they compiled
    assert len(cinderx.PASSES) == len(set(cinderx.PASSES.values())) == 11


def test_culprits_accumulate_in_the_run_directory_and_read_back_as_written(tmp_path: Path):
    found = Culprit(CulpritStatus.FOUND, (CulpritFunction("m:f", "m.py", 3, ("m:g",)),), passes=("Simplify",),
                    reproducer="env X=1 sh -c 'pytest'", jit_list="l", probes=5, reruns=10, seconds=1.5)
    flaky = Culprit(CulpritStatus.FLAKY, note="stopped at a flaky probe")
    write_culprit(tmp_path, "m::test_a", found)
    write_culprit(tmp_path, "m::test_b", flaky)
    assert read_culprits(tmp_path) == {"m::test_a": found, "m::test_b": flaky}
    assert found.functions[0].where == "m:f (m.py:3)"
    paths = {jit_list_path(tmp_path, test) for test in ("m::test[a/b]", "m::test[a_b]")}
    assert len(paths) == 2 and all(p.parent == tmp_path / "culprits" and "/" not in p.name for p in paths)


DUMP = """Fatal Python error: Segmentation fault

Current thread 0x00007fad50fff6c0 [bg_cx_compile] (most recent call first):
  <no Python frame>

Thread 0x00007fae14573740 [python] (most recent call first):
  File "/site-packages/torch/fx/proxy.py", line 800 in __torch_function__
"""


def test_faulthandler_names_cinderx_compile_thread():
    assert cinderx.died_compiling(DUMP)
    assert not cinderx.died_compiling(DUMP.replace("[bg_cx_compile]", "[python]"))


class FakeProber:
    """The prober's interface over a rule: a list's reruns crash when it names `crasher`; the full
    JIT (no list) crashes only in the `crash_at`-th rerun of the catch, compiling `crasher`."""

    def __init__(self, tmp_path: Path, crasher: str, crash_at: int | None, crashes_alone: bool) -> None:
        from harness.compare.culprit.probes import Budget

        self.budget, self.folder = Budget(count=2, attempts=5), tmp_path
        self.crasher, self.crash_at, self.crashes_alone = crasher, crash_at, crashes_alone
        self.probes = self.reruns = 0

    def log(self, compiled=(), unfinished=()) -> cinderx.Log:
        return cinderx.Log(True, (*compiled, *unfinished), tuple(unfinished), (("m:helper", self.crasher),), {})

    def probe(self, jit_list, without_pass=None) -> Probe:
        return self.probe_all([(jit_list, without_pass)])[0]

    def probe_all(self, wanted):
        found = []
        for jit_list, _ in wanted:
            self.probes += 1
            crashes = jit_list is not None and self.crasher in jit_list and self.crashes_alone
            outcome = "crashed" if crashes else "passed"
            found.append(Probe(jit_list, None, tuple(Rerun(outcome, self.log(("m:a", "m:b"))) for _ in range(2))))
        return found

    def catch_crash(self, attempts: int) -> list[Rerun]:
        made = []
        for number in range(1, attempts + 1):
            crashed = number == self.crash_at
            made.append(Rerun("crashed" if crashed else "passed",
                              self.log(("m:a",), (self.crasher,) if crashed else ())))
            if crashed:
                break
        return made

    def probe_commands(self, commands):
        return [self.probe_all([(jit_list, None)])[0] for _, jit_list in commands]


def compile_thread_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **rule) -> Culprit:
    from harness.compare.culprit import blame
    from harness.compare.culprit.probes import Target

    monkeypatch.setattr(blame, "locate", lambda prefix, nodeid, names, timeout: {name: ("", None) for name in names})
    target = Target("m::test_loop", "test_m.py::test_loop", "false", "crashed", DUMP, tmp_path)
    return blame._blame(target, FakeProber(tmp_path, "torch.fx.graph:Graph.create_node", **rule), lambda line: None)


def test_a_compile_thread_crash_that_comes_back_names_the_function_cinderx_was_compiling(tmp_path, monkeypatch):
    culprit = compile_thread_crash(tmp_path, monkeypatch, crash_at=3, crashes_alone=False)
    assert culprit.status is CulpritStatus.COMPILING
    assert [f.name for f in culprit.functions] == ["torch.fx.graph:Graph.create_node"]
    assert culprit.functions[0].inlined == ("m:helper",)  # what it was inlining when it died
    assert culprit.compiling == ("torch.fx.graph:Graph.create_node",)
    assert culprit.reproducer.startswith("env CINDERX_JIT_LIST_FILE=") and culprit.passes == ()
    assert Path(culprit.jit_list).read_text() == "torch.fx.graph:Graph.create_node\n"
    assert "with only that on the JIT list it passed 2 of 2 reruns" in culprit.note
    assert compile_thread_crash(tmp_path, monkeypatch, crash_at=3, crashes_alone=True).status is CulpritStatus.FOUND


def test_a_compile_thread_crash_that_never_comes_back_is_not_reproduced(tmp_path, monkeypatch):
    culprit = compile_thread_crash(tmp_path, monkeypatch, crash_at=None, crashes_alone=False)
    assert culprit.status is CulpritStatus.NOT_REPRODUCED and culprit.functions == ()
    assert culprit.note == ("it died in CinderX's compile thread (bg_cx_compile) in the run, but not again in 7 "
                            "reruns under the JIT as recorded (--attempts sets how many are tried)")


def jit_run(root: Path, jit: str = "on") -> Path:
    """A run directory whose test_mod.py had a pass, a failure and a crash, with replay commands."""
    from harness.record import junit
    from harness.record.model import TestResult
    from harness.record.store import RunDirectory
    from tests.unit.test_diff import record

    run = RunDirectory(root)
    run.create()
    run.write_record(record(jit=jit))
    results = [TestResult("test_mod", name, outcome, "test_mod", nodeid=f"test_mod.py::{name}",
                          text="Fatal Python error" if outcome == "crashed" else "")
               for name, outcome in (("test_a", "passed"), ("test_b", "failed"), ("test_c", "crashed"))]
    junit.write_suite(run.junit("test_mod"), "test_mod", results, properties={},
                      replay={r.nodeid: f"cd /t && python -m pytest {r.nodeid}" for r in results})
    return root


def test_a_run_directory_gives_its_crashes_or_the_failing_tests_named(tmp_path: Path):
    from harness.compare.culprit import targets
    from harness.errors import HarnessError
    from harness.compare.sides import load_side

    side = load_side(jit_run(tmp_path / "run"))
    [crash] = targets.from_run(side, [])
    assert (crash.test, crash.nodeid, crash.prefix, crash.run) == (
        "test_mod::test_c", "test_mod.py::test_c", "cd /t && python -m pytest", tmp_path / "run")
    assert [t.test for t in targets.from_run(side, ["test_mod.py::test_b"])] == ["test_mod::test_b"]
    with pytest.raises(HarnessError, match="--test test_mod::test_a: it passed in .*: no failure to explain"):
        targets.from_run(side, ["test_mod::test_a"])
    with pytest.raises(HarnessError, match="--test test_mod::test_z: no such failing test"):
        targets.check_named(["test_mod::test_z"], targets.from_run(side, ["test_mod::test_z"]))


def test_a_report_gives_its_confirmed_regressions_crashes_and_timeouts_with_their_run(tmp_path: Path):
    import json

    from harness.compare.culprit import targets
    from harness.errors import HarnessError

    run = jit_run(tmp_path / "run")
    entry = {"module": "test_mod", "baseline": "passed", "polluters": []}
    report = {"valid": True, "candidate_runs": [str(run)], "regressions": [
        {**entry, "test": "test_mod::test_b", "nodeid": "test_mod.py::test_b", "candidate": "failed",
         "confirmed": None, "candidate_replay": "cd /t && python -m pytest test_mod.py::test_b"},
        {**entry, "test": "test_mod::test_c", "nodeid": "test_mod.py::test_c", "candidate": "crashed",
         "confirmed": None, "candidate_replay": "cd /t && python -m pytest test_mod.py::test_c", "polluters": ["p"]}]}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    [(side, [crash])] = targets.from_report(path, [])  # the unconfirmed failure is not searched
    assert (crash.test, crash.run, crash.polluters, crash.text) == ("test_mod::test_c", run, ("p",), "Fatal Python error")
    report["regressions"][0]["confirmed"] = True
    path.write_text(json.dumps(report))
    assert [t.test for _, found in targets.from_report(path, []) for t in found] == ["test_mod::test_b", "test_mod::test_c"]
    assert targets.from_report(path, ["test_mod::test_b"])[0][1][0].test == "test_mod::test_b"
    path.write_text(json.dumps({**report, "valid": False}))
    assert targets.from_report(path, []) == []  # an invalid comparison's regressions are not believed
    del report["candidate_runs"]
    path.write_text(json.dumps(report))
    with pytest.raises(HarnessError, match="no .candidate_runs. in the report"):
        targets.from_report(path, [])


def test_every_cinderx_setting_the_search_uses_is_one_cinderx_knows(tmp_path: Path):
    """CinderX ignores variables it does not know: a misspelled setting would probe nothing."""
    from harness.configure import cinderx_variables

    used = {*cinderx.settings(tmp_path / "l", tmp_path / "j", "Simplify"), *cinderx.settings(tmp_path / "l", inliner_only=True),
            *cinderx.PASSES.values()}
    assert used - cinderx_variables.known() == {"HARNESS_COMPILED"}  # the harness's own: the code of what compiled


def test_a_culprit_found_for_one_regression_of_a_polluter_group_is_checked_first_for_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Regressions after the same polluter in one run: the first is searched; for the others its
    culprit is checked (reuse) and only searched for where it does not explain them; a regression
    with other polluters, or none, is searched on its own. The record says which culprit was reused."""
    from harness.commands import culprit as command
    from harness.compare.culprit import blame
    from harness.compare.culprit.probes import Budget, Target

    polluter = ("test_a.py::test_pollutes",)
    found = Culprit(CulpritStatus.FOUND, (CulpritFunction("mod:f", "mod.py", 3),), polluters=polluter)
    searched: list[str] = []
    reused: list[tuple[str, str]] = []

    def fake_blame(target, budget, announce):
        searched.append(target.test)
        return found

    def fake_reuse(target, known, source, budget, announce):
        reused.append((target.test, source))
        if target.test == "test_a::test_unexplained":
            return None
        return Culprit(CulpritStatus.FOUND, known.functions, polluters=target.polluters, reused_from=source,
                       note=f"reused: the culprit found for {source}")

    monkeypatch.setattr(blame, "blame", fake_blame)
    monkeypatch.setattr(blame, "reuse", fake_reuse)

    def target(name: str, polluters: tuple[str, ...] = polluter) -> Target:
        return Target(f"test_a::{name}", f"test_a.py::{name}", "python -m pytest", "failed", "", tmp_path, polluters)

    names = ["test_one", "test_two", "test_unexplained", "test_three"]
    lines = command.search([*map(target, names), target("test_alone", ())], Budget(), lambda line: None)
    assert searched == ["test_a::test_one", "test_a::test_unexplained", "test_a::test_alone"]
    assert reused == [(f"test_a::{name}", "test_a::test_one") for name in ("test_two", "test_unexplained", "test_three")]
    recorded = read_culprits(tmp_path)
    assert recorded["test_a::test_three"].reused_from == "test_a::test_one"
    assert recorded["test_a::test_one"].reused_from == ""
    assert "reused: the culprit found for test_a::test_one" in lines[3]
