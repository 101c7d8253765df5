"""Which failing tests a culprit search explains, from a comparison, a report or a run directory.

From a valid comparison (`diff --culprit`) or its report.json: every confirmed regression, and
every crash or timeout, of a JIT configuration. From a run directory alone (no baseline to confirm
against): its crashes and timeouts. `--test` narrows either to the tests it names (by key,
`classname::name`, or node id), and in a run directory may name any test that failed. Each
target reruns with its recorded replay command; a test without one (plain JUnit XML) cannot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.compare import identity
from harness.compare.culprit.probes import Target
from harness.compare.diff import Regression
from harness.errors import HarnessError
from harness.protocol import BAD_OUTCOMES, JitMode, Outcome
from harness.record.junit import replay_prefix
from harness.record.model import TestResult
from harness.compare.sides import Side, load_runs
from harness.record.store import RUN_RECORD

ALWAYS = frozenset({Outcome.CRASHED, Outcome.TIMEOUT})  # searched without confirmation


def from_regressions(regressions: Iterable[Regression], candidate: Side, tests: Sequence[str]) -> list[Target]:
    """Targets among a comparison's regressions: confirmed ones, crashes and timeouts."""
    if candidate.record is None or candidate.record.jit_mode != JitMode.ON:
        return []
    chosen = [r for r in regressions if (r.confirmed or r.candidate in ALWAYS) and _named(tests, r.test, r.nodeid)]
    texts = _texts(candidate.results, {r.test for r in chosen})
    return [target for r in chosen
            if (target := _target(r.test, r.nodeid, r.replay, r.candidate, texts.get(r.test, r.detail), candidate,
                                  r.module, r.polluters)) is not None]


def from_run(side: Side, tests: Sequence[str]) -> list[Target]:
    """Targets in a run directory: its crashes and timeouts, or the failing tests `tests` names."""
    if side.record is None or side.record.jit_mode != JitMode.ON:
        raise HarnessError(f"{side.path}: not a run of a JIT configuration (jit: on): nothing to blame on a JIT")
    results = identity.index(side.results)
    chosen = {key: result for key, result in results.items()
              if (_named(tests, key, result.nodeid) if tests else result.outcome in ALWAYS)}
    for key, result in chosen.items():
        if result.outcome not in BAD_OUTCOMES:
            raise HarnessError(f"--test {key}: it {result.outcome} in {side.path}: no failure to explain")
    return [target for key, result in chosen.items()
            if (target := _target(key, result.nodeid, result.replay, result.outcome, result.text or result.message,
                                  side, result.module)) is not None]


def from_report(path: Path, tests: Sequence[str]) -> list[tuple[Side, list[Target]]]:
    """Targets of every comparison in a report.json, each with its candidate side (run directories)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise HarnessError(f"{path}: not a readable report.json: {error}") from None
    found = []
    for document in data if isinstance(data, list) else [data]:
        if isinstance(document, dict) and document.get("valid") is False:
            continue  # no verdict: its regressions are not believed, as `diff --culprit` skips them
        runs = document.get("candidate_runs") if isinstance(document, dict) else None
        if not runs:
            raise HarnessError(f"{path}: no 'candidate_runs' in the report (written by an older harness, or from "
                               "plain JUnit XML): give the candidate's run directory instead")
        missing = [run for run in runs if not (Path(run) / RUN_RECORD).is_file()]
        if missing:
            raise HarnessError(f"{path}: candidate run directory {missing[0]} is gone")
        side = load_runs([Path(run) for run in runs])
        found.append((side, from_regressions(map(_regression, document.get("regressions", [])), side, tests)))
    return found


def check_named(tests: Sequence[str], targets: Iterable[Target]) -> None:
    """Every --test must name a target: a typo is bad usage, not an empty search."""
    found = [(t.test, t.nodeid) for t in targets]
    for test in tests:
        if not any(test in names for names in found):
            raise HarnessError(f"--test {test}: no such failing test to search (a confirmed regression, a crash or "
                               "a timeout of a JIT configuration; in a run directory, any failing test)")


def _regression(entry: dict[str, Any]) -> Regression:
    try:
        return Regression(test=entry["test"], module=entry["module"], baseline=entry["baseline"],
                          candidate=entry["candidate"], detail=entry.get("detail", ""),
                          classification=entry.get("classification", ""), replay=entry.get("candidate_replay", ""),
                          confirmed=entry.get("confirmed"), nodeid=entry.get("nodeid", ""),
                          polluters=tuple(entry.get("polluters", ())))
    except (KeyError, TypeError) as error:
        raise HarnessError(f"report.json: a regression lacks {error}") from None


def _named(tests: Sequence[str], key: str, nodeid: str) -> bool:
    return not tests or key in tests or nodeid in tests


def _texts(results: Iterable[TestResult], keys: set[str]) -> dict[str, str]:
    """The recorded failure text (a crash: faulthandler's dump) of the tests in `keys`."""
    found = {}
    for result in results:
        key = identity.key_of(result)
        if key in keys:
            found[key] = result.text or result.message
    return found


def _target(test: str, nodeid: str, replay_command: str, outcome: str, text: str, side: Side, module: str,
            polluters: tuple[str, ...] = ()) -> Target | None:
    prefix = replay_prefix(replay_command, nodeid)
    if not prefix:
        return None
    run = next((path for path, record in side.parts if any(f.module == module for f in record.files)), side.path)
    return Target(test, nodeid, prefix, outcome, text, run, polluters)
