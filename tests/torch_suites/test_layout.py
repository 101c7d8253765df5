"""harness/torch_suites/ is grouped by what it checks (eager/, optim/, compiled/, dynamo/, fx/,
inductor/, export/, shared/), while the tier folders keep the thin files that runs name: a test's id
is its tier file's path, so the known-regressions file and the run history keep matching across
any regrouping of the check bodies. Proved here on a real collection of today's tree."""

from __future__ import annotations

import os
import sys

import pytest

from harness.compare.known import load
from harness.record.identity import key
from harness.record.model import junit_names
from harness.run.collect import collect_together
from harness.torch_suites.shared.catalog import ROOT, SUITES, TIERS

pytestmark = pytest.mark.integration
PREFIX = "harness.torch_suites."


def test_every_known_regression_of_the_bundled_suites_still_names_tests_a_run_collects():
    entries = [entry for entries in load().by_configuration.values() for entry in entries
               if entry.known.pattern.startswith(PREFIX)]
    tiers = {entry.known.pattern.removeprefix(PREFIX).split(".")[0] for entry in entries}
    assert entries and tiers <= set(TIERS), tiers
    files = sorted(path.relative_to(ROOT).as_posix() for tier in tiers for path in (SUITES / tier).glob("test_*.py"))
    found = collect_together(sys.executable, ROOT, files, os.environ)
    assert all(collected.error is None for collected in found.values()), found
    tests = {key(*junit_names(nodeid)) for collected in found.values() for nodeid in collected.nodeids}
    unmatched = sorted({entry.known.pattern for entry in entries if not any(map(entry.matches, tests))})
    assert not unmatched, f"known regressions that name no collected test: {unmatched}"
