"""One side's results by test identity (harness/record/identity.py), and what their attempts say.

`index` is the in-memory form of what the results table does while a side streams into it
(harness/record/stream.py): one result per key, a repeated key keeping its history as attempts.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.protocol import Outcome
from harness.record.identity import key_of, merge
from harness.record.model import StoredResult, TestResult


def index(results: Iterable[TestResult]) -> dict[str, TestResult]:
    """Results by key, in order of first appearance; a repeated key keeps the history as attempts."""
    found: dict[str, TestResult] = {}
    for result in results:
        key = key_of(result)
        earlier = found.get(key)
        found[key] = result if earlier is None else merge(earlier, result)
    return found


def attempt_outcomes(result: TestResult | StoredResult) -> list[str]:
    """The outcomes of a test's earlier attempts, oldest first."""
    return [attempt.split(":", 1)[0].strip() for attempt in result.attempts]


def disagreements(ours: Iterable[TestResult], theirs: Iterable[TestResult]) -> list[str]:
    """Where two records of the same run of the same tests disagree: tests one has and the other
    lacks, and different outcomes. pytest's own JUnit XML writes an unexpected pass (xpassed) as a
    pass, so it counts as one here; every other outcome must be the same."""
    def outcomes(results: Iterable[TestResult]) -> dict[str, str]:
        return {key: Outcome.PASSED if result.outcome == Outcome.XPASSED else result.outcome
                for key, result in index(results).items()}

    mine, other = outcomes(ours), outcomes(theirs)
    found = [f"{key}: only in the harness's record ({mine[key]})" for key in mine.keys() - other.keys()]
    found += [f"{key}: only in pytest's own record ({other[key]})" for key in other.keys() - mine.keys()]
    found += [f"{key}: harness {mine[key]}, pytest {other[key]}" for key in mine.keys() & other.keys()
              if mine[key] != other[key]]
    return sorted(found)
