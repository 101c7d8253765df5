"""Write and read JUnit XML with junitparser.

The harness writes one file per test file, with every test in it, crashed and timed-out ones
included, and the exact outcome as a property. It reads its own files and any other JUnit XML
(pytest's --junitxml, unittest-style reports) the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from xml.etree.ElementTree import ParseError

from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from harness.errors import HarnessError
from harness.record.model import TestResult

_RESULT_ELEMENT = {"failed": Failure, "error": Error, "crashed": Error, "timeout": Error,
                   "skipped": Skipped, "xfailed": Skipped}
_ELEMENT_TYPE = {"crashed": "crashed", "timeout": "timeout", "xfailed": "pytest.xfail"}


def write_suite(path: Path, suite_name: str, results: Iterable[TestResult],
                properties: dict[str, str], replay: dict[str, str]) -> None:
    """One <testsuite> with the results; `replay` maps node ids to the command that reruns them.

    Suite properties carry the configuration, tier, file and `replay_prefix` (the command that
    reruns any node ids of this file in this configuration, node ids appended)."""
    suite = TestSuite(suite_name)
    for key, value in properties.items():
        suite.add_property(key, value)
    for result in results:
        case = TestCase(result.name, result.classname, round(result.duration, 6))
        case_properties = Properties()
        case_properties.add_property(Property("outcome", result.outcome))
        if result.nodeid:
            case_properties.add_property(Property("nodeid", result.nodeid))
        if result.nodeid in replay:
            case_properties.add_property(Property("replay", replay[result.nodeid]))
        for number, attempt in enumerate(result.attempts, 1):
            case_properties.add_property(Property(f"attempt.{number}", attempt))
        case.append(case_properties)
        element = _RESULT_ELEMENT.get(result.outcome)
        if element is not None:
            outcome_element = element(result.message, _ELEMENT_TYPE.get(result.outcome, result.outcome))
            outcome_element.text = result.text or None
            case.result = [outcome_element]
        suite.add_testcase(case)
    suite.update_statistics()
    document = JUnitXml()
    document.add_testsuite(suite)
    partial = path.with_suffix(".xml.partial")
    document.write(str(partial), pretty=True)
    partial.replace(path)


def read_results(path: Path) -> list[TestResult]:
    """Every test case of a JUnit XML file; module = the file's stem (one file per test file)."""
    try:
        document = JUnitXml.fromfile(str(path))
    except (ParseError, ValueError, OSError) as error:
        raise HarnessError(f"{path}: not readable as JUnit XML: {error}") from None
    module = path.stem
    return [_result(case, module) for case in _cases(document)]


def _cases(document: JUnitXml | TestSuite) -> Iterator[TestCase]:
    for item in document:
        if isinstance(item, TestSuite):
            yield from _cases(item)
        elif isinstance(item, TestCase):
            yield item


def _result(case: TestCase, module: str) -> TestResult:
    props = {p.name: p.value for p in (case.child(Properties) or [])}
    outcome_element = next(iter(case.result), None)
    message = (outcome_element.message or "") if outcome_element is not None else ""
    text = (outcome_element.text or "") if outcome_element is not None else ""
    return TestResult(
        classname=case.classname or "",
        name=case.name or "",
        outcome=props.get("outcome") or _outcome(outcome_element),
        module=module,
        duration=float(case.time or 0.0),
        message=message,
        text=text,
        nodeid=props.get("nodeid", ""),
        replay=props.get("replay", ""),
        attempts=tuple(props[key] for key in sorted((k for k in props if k.startswith("attempt.")),
                                                    key=lambda k: int(k.split(".")[1]))),
    )


def _outcome(element: object | None) -> str:
    """The outcome of a case written by another tool (no `outcome` property)."""
    if element is None:
        return "passed"
    kind = getattr(element, "type", None) or ""
    if isinstance(element, Skipped):
        return "xfailed" if "xfail" in kind else "skipped"
    if isinstance(element, Failure):
        return "failed"
    return kind if kind in ("crashed", "timeout") else "error"
