"""One JUnit XML over every side of a comparison, for CI test viewers (written by junitparser).

Each (side, module) is one <testsuite> named `CONFIGURATION: module`, with the side's
configuration, role, tier and threshold as suite properties; every test case carries the
configuration as a property too, so a viewer that flattens suites still tells the sides apart.
"""

from __future__ import annotations

from pathlib import Path

from harness.record.junit import build_suite, write_document
from harness.record.model import TestResult
from harness.compare.sides import Side


def write_merged(path: Path, sides: list[tuple[str, Side]]) -> None:
    """`sides` are (role, side) pairs; a side given twice (one baseline, several candidates) is written once."""
    suites = []
    seen: set[Path] = set()
    for role, side in sides:
        if side.path in seen:
            continue
        seen.add(side.path)
        properties = _side_properties(role, side)
        for module, results in _by_module(side.results).items():
            suites.append(build_suite(f"{side.label}: {module}", results, {**properties, "module": module}, {},
                                      case_properties={"configuration": side.label}))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_document(path, suites)


def _side_properties(role: str, side: Side) -> dict[str, str]:
    properties = {"configuration": side.label, "role": role, "source": str(side.path)}
    if side.record is not None:
        properties["tier"] = side.record.tier
        if side.record.threshold is not None:
            properties["threshold"] = str(side.record.threshold)
    return properties


def _by_module(results: tuple[TestResult, ...]) -> dict[str, list[TestResult]]:
    modules: dict[str, list[TestResult]] = {}
    for result in results:
        modules.setdefault(result.module, []).append(result)
    return modules
