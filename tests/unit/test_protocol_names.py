"""Every protocol name has one owner: `HARNESS_*` variables, event names and outcome names are
spelled in harness/protocol.py and nowhere else in harness/ or op_manifests/ (docstrings and comments aside); the
`HARNESS_*` names not in the noxfile, the benchmark scripts or the tools either.

A new literal fails here with its file and line: use `Env`, `Setting`, `Event` or `Outcome` instead.
"""

import ast
from pathlib import Path

from harness.protocol import ENV_PREFIX, Event, Outcome

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "harness"
PACKAGES = (*sorted(HARNESS.rglob("*.py")), *sorted((ROOT / "op_manifests").rglob("*.py")))
SCRIPTS = (ROOT / "noxfile.py", *sorted((ROOT / "benchmarks").glob("*.py")), *sorted((ROOT / "tools").glob("*.py")))
OWNER = HARNESS / "protocol.py"
NAMES = {**{outcome.value: "outcome" for outcome in Outcome}, **{event.value: "event" for event in Event}}
# The same words in another vocabulary, where they are not the protocol's names (file: words, why).
OTHER_VOCABULARIES = {
    "configure/tiers.py": {"timeout", "restart"},  # a tier's YAML keys (its time limit, its restart policy)
    "compare/classify.py": {"timeout"},  # the failure class, written for people
    "compare/pairs.py": {"passed"},  # a key of the evidence for a pair of runs
    "compare/validity.py": {"collected"},  # a key of the JIT's read-back state: applied after collection
    "run/events.py": {"error", "collected"},  # keys of an event's fields
    "run/descendant.py": {"error"},  # a key of a descendant process's JIT report
    "run/filerun.py": {"timeout"},  # how a process ended (test_timeout, file_timeout)
    "record/junit.py": {"error", "skipped"},  # JUnit XML's element names
    "perf/record.py": {"failed"},  # a perf run's status
    "op_manifests/report.py": {"collected"},  # a key of the report's dedupe statistics
}


def _docstrings(tree: ast.AST) -> set[int]:
    bodies = [node.body for node in ast.walk(tree)
              if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    return {id(body[0].value) for body in bodies if body and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)}


def literals(paths: tuple[Path, ...] = PACKAGES) -> list[tuple[str, int, str]]:
    """(file, line, text) of every string literal in `paths` outside the protocol, docstrings aside."""
    found = []
    for path in paths:
        if path == OWNER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        found += [(path.relative_to(ROOT).as_posix(), node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip]
    return found


def test_harness_variables_are_named_only_in_the_protocol():
    spelled = [f"{file}:{line}: {text!r}" for file, line, text in literals() + literals(SCRIPTS) if ENV_PREFIX in text]
    assert not spelled, "use harness.protocol.Env or Setting:\n" + "\n".join(spelled)


def test_event_and_outcome_names_are_spelled_only_in_the_protocol():
    spelled = [f"{file}:{line}: {NAMES[text]} {text!r}" for file, line, text in literals()
               if text in NAMES and text not in OTHER_VOCABULARIES.get(file.removeprefix("harness/"), ())]
    assert not spelled, "use harness.protocol.Event or Outcome:\n" + "\n".join(spelled)


def test_reruns_that_ended_in_any_order_are_tallied_the_same_way():
    """Reruns run side by side end in any order; the words for what they did must not follow it."""
    from harness.protocol import tallied
    assert tallied(["passed", "failed"]) == tallied(["failed", "passed"]) == [("failed", 1), ("passed", 1)]
    assert tallied(["passed", "crashed", "passed"]) == [("passed", 2), ("crashed", 1)]
    assert tallied(["not run", "passed"]) == [("passed", 1), ("not run", 1)]  # outside the vocabulary: last
