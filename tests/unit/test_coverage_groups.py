"""tools/coverage_groups.py: every module of a subpackage in exactly one group, the first that
matches, and the share on the path a database check can take counted over the reachable groups."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from harness.record.coverage import Row

pytestmark = pytest.mark.unit
TOOL = Path(__file__).resolve().parents[2] / "tools" / "coverage_groups.py"


def tool():
    spec = importlib.util.spec_from_file_location("coverage_groups", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_each_module_falls_in_the_first_matching_group_or_the_rest():
    groups = tool()
    rows = [Row("torch._dynamo.variables.sets", 95, 7), Row("torch._dynamo.polyfills.itertools", 26, 0),
            Row("torch._dynamo.repro.after_aot", 42, 2), Row("torch._dynamo.symbolic_convert", 295, 184)]
    found = groups.grouped(rows, groups.GROUPS["_dynamo"])
    assert sum(len(members) for members in found.values()) == len(rows)
    assert {group.label.split(" (")[0]: [r.part for r in members] for group, members in found.items() if members} == {
        "tracing rules for Python constructs": ["torch._dynamo.variables.sets"],
        "traced by dynamo, never called": ["torch._dynamo.polyfills.itertools"],
        "debugging and tooling": ["torch._dynamo.repro.after_aot"],
        "the rest": ["torch._dynamo.symbolic_convert"]}
    lines = groups.table("_dynamo", rows, groups.GROUPS["_dynamo"])
    assert lines[0] == "## _dynamo: 193 of 458 compiled (42.1%)"
    assert "On the path a database check can take on a CPU: 191 of 390 (49.0%)." in lines
