"""From one failing test to the JIT-compiled function(s) that make it fail, and a reproducer.

1. Candidates: the test is rerun K times under the JIT as recorded (no JIT list), with CinderX's
   debug log: every function it compiled or inlined, sorted (a stable order). A process that died
   leaves the compiles it never finished in the log: what CinderX was compiling when it died,
   tried on its own first. A recorded crash in CinderX's background compile thread (faulthandler
   names it) that does not happen every time is rerun until it happens again (at most
   `Budget.attempts` times), from then on with only the inliner's log (the full one makes such a
   crash rarer): the function(s) being compiled then are the culprit, whose reproducer is checked
   as far as the crash reproduces.
2. Sanity: with every candidate on the JIT list it must fail K times of K, with an empty list pass
   K of K; otherwise no JIT list explains it, and the culprit says why.
3. Search (search.py): the smallest list that still fails, each probe K reruns; a flaky probe stops it.
4. Passes: for a single culprit function, each optional HIR pass is switched off in turn; the
   passes without which it passes are the ones that matter (the pass dump shows each was off).
5. Reproducer: the culprit's JIT list is written into the run directory and the replay command
   reads it the way CinderX does; it is run K times in fresh processes, and must fail every time,
   and pass every time with an empty list.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from harness.compare import replay
from harness.compare.culprit import cinderx, generated
from harness.compare.culprit.locate import locate
from harness.compare.culprit.probes import Budget, Probe, Prober, ProbeError, Rerun, Target
from harness.compare.culprit.search import FlakyProbe, JitList, Verdict, smallest_failing
from harness.protocol import Outcome
from harness.record.culprits import Culprit, CulpritFunction, CulpritStatus, jit_list_path
from harness.record.writing import make_folder

Announce = Callable[[str], None]


def blame(target: Target, budget: Budget, announce: Announce) -> Culprit:
    """The culprit of `target`'s failure, with the probes, reruns and seconds it took."""
    began = time.monotonic()
    with Prober(target, budget) as prober:
        try:
            culprit = _blame(target, prober, announce)
        except ProbeError as error:
            culprit = Culprit(CulpritStatus.NOT_REPRODUCED, note=str(error))
        seconds = round(time.monotonic() - began, 1)
        announce(f"  {culprit.status}: {prober.probes} probes, {prober.reruns} reruns "
                 f"({prober.where_reruns_ran()}), {seconds} s")
        return replace(culprit, probes=prober.probes, reruns=prober.reruns, seconds=seconds, polluters=target.polluters)


def reuse(target: Target, known: Culprit, source: str, budget: Budget, announce: Announce) -> Culprit | None:
    """The culprit found for `source`, a regression after the same polluters in the same run, checked
    for `target` instead of a search of its own: with only its functions on the JIT list the test
    fails K of K reruns, and its reproducer fails K of K with that list and passes K of K with an
    empty one, in fresh processes. None when it does not explain `target` (then: a search)."""
    began = time.monotonic()
    found = tuple(function.name for function in known.functions)
    with Prober(target, budget) as prober:
        try:
            probe = prober.probe(found)
            command, path, problem = _reproducer(target, found, prober) if probe.verdict is Verdict.FAILS else \
                ("", Path(), f"with only it on the JIT list the test {probe.seen}")
        except ProbeError as error:
            command, path, problem = "", Path(), str(error)
        seconds = round(time.monotonic() - began, 1)
        if problem:
            announce(f"  the culprit of {source} does not explain it ({problem}): searching")
            return None
        announce(f"  the culprit of {source} (same polluters) explains it: {prober.probes} probes, {prober.reruns} "
                 f"reruns, {seconds} s")
        functions = _functions(target, found, probe.reruns, budget.timeout)
        return Culprit(CulpritStatus.FOUND, functions, (), command, str(path), candidates=known.candidates,
                       probes=prober.probes, reruns=prober.reruns, seconds=seconds, polluters=target.polluters,
                       reused_from=source, note=(
                           f"reused: the culprit found for {source}, which fails after the same tests; checked for "
                           f"this test (with only it on the JIT list it {probe.seen}; the reproducer fails with it and "
                           "passes without it), not searched again, and its HIR passes not told apart"))


def _blame(target: Target, prober: Prober, announce: Announce) -> Culprit:
    full = prober.probe(None)
    candidates = tuple(sorted({name for rerun in full.reruns for name in rerun.log.names}))
    compiling = _compiling(full.reruns)
    announce(f"  under the JIT as recorded it {full.seen}; {len(candidates)} function(s) compiled or inlined")
    if full.verdict is not Verdict.FAILS and cinderx.died_compiling(target.text):
        died = list(full.reruns)
        if not compiling:
            announce(f"  it died in CinderX's compile thread: rerunning with only the inliner's log until it "
                     f"does again (at most {prober.budget.attempts} times)")
            prober.inliner_only = True  # the full debug log makes such a crash rarer (cinderx.py)
            died += prober.catch_crash(prober.budget.attempts)
        if _compiling(died):
            return _died_compiling(target, prober, died, len(candidates), announce)
        return Culprit(CulpritStatus.NOT_REPRODUCED, candidates=len(candidates), note=(
            f"it died in CinderX's compile thread ({cinderx.COMPILE_THREAD}) in the run, but not again in "
            f"{len(died)} reruns under the JIT as recorded (--attempts sets how many are tried)"))
    seen = Culprit(CulpritStatus.NOT_REPRODUCED, compiling=compiling, candidates=len(candidates))
    stopped = _sanity(target, prober, full, candidates, announce)
    if stopped is not None:
        return replace(seen, status=stopped[0], note=stopped[1])
    space = compiling if compiling and prober.probe(compiling).verdict is Verdict.FAILS else candidates
    try:
        found = smallest_failing(space, prober.first_failing)
    except FlakyProbe as flaky:
        return replace(seen, status=CulpritStatus.FLAKY, note=(
            f"stopped at a flaky probe: {flaky}; the failure was narrowed to {len(flaky.narrowed)} function(s) "
            "that failed every rerun"))
    announce(f"  smallest failing JIT list: {', '.join(found)} ({prober.probes} probes so far)")
    passes, passes_note = _passes(found[0], prober) if len(found) == 1 else ((), "")
    functions = _functions(target, found, prober.probe(found).reruns, prober.budget.timeout)
    command, path, problem = _reproducer(target, found, prober)
    notes = [note for note in (problem, passes_note) if note]
    return replace(seen, status=CulpritStatus.NOT_REPRODUCED if problem else CulpritStatus.FOUND,
                   functions=functions, passes=passes, reproducer=command, jit_list=str(path), note="; ".join(notes))


def _compiling(reruns: Sequence[Rerun]) -> JitList:
    """What CinderX was still compiling when a rerun's process died."""
    return tuple(sorted({name for rerun in reruns if rerun.outcome == Outcome.CRASHED for name in rerun.log.compiling}))


def _died_compiling(target: Target, prober: Prober, reruns: Sequence[Rerun], candidates: int,
                    announce: Announce) -> Culprit:
    """A crash in CinderX's compile thread that does not happen every time: the function(s) it was
    compiling when it died (in `reruns`) are the culprit, with what it was inlining into them then,
    and their reproducer, checked as far as the crash reproduces."""
    compiling = _compiling(reruns)
    announce(f"  it died again while CinderX compiled {', '.join(compiling)}")
    prober.inliner_only = True  # from here on: the full debug log makes such a crash rarer (cinderx.py)
    alone = prober.probe(compiling)
    functions = _functions(target, compiling, [*reruns, *alone.reruns], prober.budget.timeout)
    command, path, problem = _reproducer(target, compiling, prober)
    found = alone.verdict is Verdict.FAILS and not problem
    passes, passes_note = _passes(compiling[0], prober) if found and len(compiling) == 1 else ((), "")
    note = (f"the process died in CinderX's background compile thread ({cinderx.COMPILE_THREAD}) while it compiled "
            f"{', '.join(compiling)}; with only that on the JIT list it {alone.seen}")
    return Culprit(CulpritStatus.FOUND if found else CulpritStatus.COMPILING, functions, passes, command, str(path),
                   compiling, candidates, note="; ".join(filter(None, [note, problem, passes_note])))


def _sanity(target: Target, prober: Prober, full: Probe, candidates: JitList,
            announce: Announce) -> tuple[CulpritStatus, str] | None:
    """Why no JIT list can explain the failure (status, note), or None when the search may start:
    it failed every rerun as recorded, fails with every candidate listed, passes with none."""
    if full.verdict is not Verdict.FAILS:
        alone = "" if full.verdict is Verdict.FLAKY or target.polluters else _ALONE
        return _status(full), f"rerun under the JIT as recorded (no JIT list), it {full.seen}{alone}"
    if not candidates:
        return CulpritStatus.NO_CANDIDATES, "CinderX's debug log names no function it compiled while the test failed"
    everything, nothing = prober.probe_all([(candidates, None), ((), None)])
    announce(f"  every candidate on the JIT list: it {everything.seen}; an empty list: it {nothing.seen}")
    if everything.verdict is not Verdict.FAILS:
        return _status(everything, Verdict.PASSES), (
            f"with all {len(candidates)} candidates on the JIT list it {everything.seen}: the failure needs more "
            "than these functions compiled (the JIT's own timing, or code compiled outside the debug log)")
    if nothing.verdict is not Verdict.PASSES:
        return _status(nothing, Verdict.FAILS), (
            f"with an empty JIT list (nothing compiled) it {nothing.seen}: the failure is not caused by compiled "
            "code (CinderX's runtime, or the test itself)")
    return None


_ALONE = ("; it may fail only after other tests of its file (order dependence): `harness diff --confirm K "
          "--culprit` finds those and puts them in front of it in every probe")


def _status(probe: Probe, unexplained: Verdict | None = None) -> CulpritStatus:
    """A probe that stopped the search: flaky, not bisectable (its verdict is `unexplained`), or
    the failure did not come back."""
    if probe.verdict is Verdict.FLAKY:
        return CulpritStatus.FLAKY
    return CulpritStatus.NOT_BISECTABLE if probe.verdict is unexplained else CulpritStatus.NOT_REPRODUCED


def _passes(function: str, prober: Prober) -> tuple[tuple[str, ...], str]:
    """The HIR passes without which the failure disappears; a note on those that could not be told."""
    probes = prober.probe_all([((function,), name) for name in cinderx.PASSES])
    matter, unclear = [], []
    for name, probe in zip(cinderx.PASSES, probes):
        if probe.verdict is Verdict.FLAKY:
            unclear.append(f"{name} off: {probe.seen}")
        elif probe.verdict is Verdict.PASSES:
            ran = [rerun.log.passes.get(function, frozenset()) for rerun in probe.reruns]
            if all(passes and name not in passes for passes in ran):
                matter.append(name)
            else:
                unclear.append(f"{name} off: passed, but the pass dump does not show {function} compiled without it")
    return tuple(matter), ("HIR passes not told apart: " + "; ".join(unclear)) if unclear else ""


def _functions(target: Target, found: JitList, reruns: Sequence[Rerun], timeout: float) -> tuple[CulpritFunction, ...]:
    """Each function with its place, what CinderX inlined into it in these reruns, and what generated
    it. A function named by its code has its place from the reruns; the others are located."""
    by_code = {name: place for rerun in reruns for name, place in rerun.log.by_code.items()}
    places = {**locate(target.prefix, target.nodeid, [name for name in found if name not in by_code], timeout),
              **by_code}
    inlined = {name: tuple(dict.fromkeys(callee for rerun in reruns for callee in rerun.log.inlined_into(name)))
               for name in found}
    return tuple(CulpritFunction(name, *places.get(name, ("", None)), inlined=inlined[name],
                                 origin=generated.origin(name, places.get(name, ("", None))[0])) for name in found)


def _reproducer(target: Target, found: JitList, prober: Prober) -> tuple[str, Path, str]:
    """The reproducer's command and JIT list (in the run directory), and what was wrong with it
    in fresh processes ("" when it failed every time with the list and passed every time without)."""
    path = jit_list_path(target.run, target.test)
    make_folder(path.parent)
    cinderx.write_jit_list(path, found)
    empty = prober.folder / "empty.jitlist"
    cinderx.write_jit_list(empty, ())
    command = reproducer(target, path, found)
    with_it, without = prober.probe_commands([(command, found), (reproducer(target, empty), ())])
    if with_it.verdict is Verdict.FAILS and without.verdict is Verdict.PASSES:
        return command, path, ""
    return command, path, (f"the reproducer in fresh processes: with the culprit listed it "
                                            f"{with_it.seen}; with an empty list it {without.seen}")


def reproducer(target: Target, jit_list: Path, found: JitList = ()) -> str:
    """The replay command, run with CinderX reading `jit_list` (its environment variable), which
    matches a function named by its code (in `found`) by its first line too."""
    replay_command = replay.command(target.prefix, target.nodeids)
    lines = f" {cinderx.MATCH_LINE_NUMBERS}=1" if any(map(cinderx.named_by_code, found)) else ""
    return f"env {cinderx.JIT_LIST_FILE}={shlex.quote(str(jit_list))}{lines} sh -c {shlex.quote(replay_command)}"
