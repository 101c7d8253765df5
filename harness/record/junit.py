"""Write JUnit XML with junitparser; read any JUnit XML safely and fast with defusedxml.

The harness writes one file per test file, with every test in it, crashed and timed-out ones
included, the exact outcome, node id, replay command and rerun attempts as properties.

Reading accepts the harness's own files and any other JUnit XML: pytest's --junitxml (xdist and
pytest-rerunfailures included), unittest-style reports, Maven-surefire-style rerun elements.
Reading streams with defusedxml's iterparse instead of junitparser's object model: it refuses
entity declarations (billion laughs), bounds any single token (a billion-character attribute),
and keeps memory flat; junitparser's tree costs several times a bare parse (see
docs/verdicts.md). Every unreadable file ends in one HarnessError naming the file.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse
from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from harness.errors import HarnessError
from harness.record.model import TestResult

_RESULT_ELEMENT = {"failed": Failure, "error": Error, "crashed": Error, "timeout": Error,
                   "skipped": Skipped, "xfailed": Skipped}
_ELEMENT_TYPE = {"crashed": "crashed", "timeout": "timeout", "xfailed": "pytest.xfail"}

READ_CHUNK = 4 << 20  # bytes fed to the parser at once: few feeds keep expat's re-scan of a long token cheap
MAX_TOKEN = 64 << 20  # bytes without a single closed element: no real report has that, a hostile file does
# Surefire-style elements for earlier attempts of a rerun test, and the outcome each stands for.
_ATTEMPT_ELEMENTS = {"rerunFailure": "failed", "flakyFailure": "failed", "rerunError": "error", "flakyError": "error"}
RERUN_ATTEMPT = "failed: rerun (pytest's JUnit XML keeps no details of earlier attempts)"


def build_suite(suite_name: str, results: Iterable[TestResult], properties: dict[str, str],
                replay: dict[str, str], case_properties: dict[str, str] | None = None) -> TestSuite:
    """One junitparser <testsuite>: each test with its outcome, node id, replay (from `replay`, else
    the result's own) and attempts as properties, plus `case_properties` on every test."""
    suite = TestSuite(suite_name)
    for key, value in properties.items():
        suite.add_property(key, value)
    for result in results:  # append, not add_testcase: that recounts the whole suite per case (quadratic)
        suite.append(_case(result, replay.get(result.nodeid, result.replay), case_properties or {}))
    suite.update_statistics()
    return suite


def _case(result: TestResult, replay: str, extra: dict[str, str]) -> TestCase:
    case = TestCase(result.name, result.classname, round(result.duration, 6))
    case_properties = Properties()
    case_properties.add_property(Property("outcome", result.outcome))
    for key, value in extra.items():
        case_properties.add_property(Property(key, value))
    if result.nodeid:
        case_properties.add_property(Property("nodeid", result.nodeid))
    if replay:
        case_properties.add_property(Property("replay", replay))
    for number, attempt in enumerate(result.attempts, 1):
        case_properties.add_property(Property(f"attempt.{number}", attempt))
    case.append(case_properties)
    element = _RESULT_ELEMENT.get(result.outcome)
    if element is not None:
        outcome_element = element(result.message, _ELEMENT_TYPE.get(result.outcome, result.outcome))
        outcome_element.text = result.text or None
        case.result = [outcome_element]
    return case


def write_suite(path: Path, suite_name: str, results: Iterable[TestResult],
                properties: dict[str, str], replay: dict[str, str]) -> None:
    """One <testsuite> with the results; `replay` maps node ids to the command that reruns them.

    Suite properties carry the configuration, tier, file and `replay_prefix` (the command that
    reruns any node ids of this file in this configuration, node ids appended)."""
    write_document(path, [build_suite(suite_name, results, properties, replay)])


def write_document(path: Path, suites: Iterable[TestSuite]) -> None:
    """Write suites as one <testsuites> document, atomically (a reader never sees half a file)."""
    document = JUnitXml()
    for suite in suites:
        document.add_testsuite(suite)
    partial = path.with_suffix(".xml.partial")
    document.write(str(partial), pretty=True)
    partial.replace(path)


def read_results(path: Path) -> list[TestResult]:
    """Every test of a JUnit XML file, in the file's order (the harness writes run order).

    A test written several times in one file (pytest-rerunfailures under --junitxml writes every
    attempt as its own <testcase>) is one result: the last attempt decides, earlier ones become
    its attempts."""
    try:
        with open(path, "rb") as handle:
            return _read(_BoundedReader(handle, path), path)
    except (ParseError, DefusedXmlException, OSError, UnicodeError, ValueError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise HarnessError(f"{path}: not readable as JUnit XML: {type(error).__name__}: {reason}") from None


class _BoundedReader:
    """Feeds the parser large chunks and refuses a file whose single token outgrows MAX_TOKEN."""

    def __init__(self, handle: BinaryIO, path: Path) -> None:
        self.handle = handle
        self.path = path
        self.position = 0
        self.mark = 0  # position when the parser last closed an element

    def read(self, size: int = -1) -> bytes:
        if self.position - self.mark > MAX_TOKEN:
            raise HarnessError(f"{self.path}: not readable as JUnit XML: no element closes within "
                               f"{MAX_TOKEN >> 20} MiB (a corrupt or hostile file)")
        data = self.handle.read(READ_CHUNK)
        self.position += len(data)
        return data


def _read(source: _BoundedReader, path: Path) -> list[TestResult]:
    results: dict[tuple[str, str], TestResult] = {}
    pending: list[Element] = []  # closed cases of the suite being read, before its properties are known
    events = iterparse(source, events=("end",))
    for _, element in events:
        source.mark = source.position
        tag = element.tag
        if tag == "testcase":
            pending.append(element)
        elif tag == "testsuite":
            _settle(pending, _properties(element), path, results)
            element.clear()
    root = events.root  # type: ignore[attr-defined]
    if root is None or root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"root element is <{getattr(root, 'tag', None)}>, not <testsuites> or <testsuite>")
    _settle(pending, {}, path, results)
    return list(results.values())


def _properties(suite: Element) -> dict[str, str]:
    found = suite.find("properties")
    return _property_values(found) if found is not None else {}


def _property_values(element: Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in element if p.tag == "property"}


def _settle(pending: list[Element], suite_properties: dict[str, str], path: Path,
            results: dict[tuple[str, str], TestResult]) -> None:
    """Turn a suite's cases into results, now that its properties (file, replay_prefix) are known."""
    for element in pending:
        result = _result(element, suite_properties, path)
        key = (result.classname, result.name)
        earlier = results.pop(key, None)
        if earlier is not None:  # a rerun: keep the history, the last attempt decides
            result = replace(result, attempts=(*earlier.attempts, _attempt_text(earlier), *result.attempts))
        results[key] = result
        element.clear()
    pending.clear()


def _result(case: Element, suite_props: dict[str, str], path: Path) -> TestResult:
    classname = case.get("classname", "")
    name = case.get("name", "")
    props: dict[str, str] = {}
    outcome_element = None
    attempts = []
    for child in case:
        if child.tag == "properties":
            props = _property_values(child)
        elif child.tag in ("failure", "error", "skipped") and outcome_element is None:
            outcome_element = child
        elif child.tag in _ATTEMPT_ELEMENTS:
            attempts.append(f"{_ATTEMPT_ELEMENTS[child.tag]}: {child.get('message', '')}".rstrip(": "))
    recorded = [props[key] for key in sorted((k for k in props if k.startswith("attempt.")),
                                             key=lambda k: int(k.split(".")[1]) if k.split(".")[1].isdigit() else 0)]
    nodeid = props.get("nodeid", "")
    return TestResult(
        classname=classname,
        name=name,
        outcome=props.get("outcome") or _outcome(outcome_element),
        module=_module(suite_props.get("file") or case.get("file", ""), classname, path),
        duration=_seconds(case.get("time")),
        message=(outcome_element.get("message") or "") if outcome_element is not None else "",
        text=(outcome_element.text or "") if outcome_element is not None else "",
        nodeid=nodeid,
        replay=props.get("replay") or _suite_replay(suite_props, nodeid),
        attempts=(*recorded, *attempts),
    )


def _suite_replay(suite_props: dict[str, str], nodeid: str) -> str:
    prefix = suite_props.get("replay_prefix", "")
    return f"{prefix} {shlex.quote(nodeid)}" if prefix and nodeid else ""


def _module(file: str, classname: str, path: Path) -> str:
    """The test's module: from its file when the report names it, else from the dotted classname
    (the components before the first capitalised one, a class), else the report's file name."""
    if file:
        return file.removesuffix(".py").replace("/", ".").replace("\\", ".")
    parts = []
    for part in classname.split("."):
        if not part or part[0].isupper():
            break
        parts.append(part)
    module = ".".join(parts)
    return module if module and module != "__main__" else path.stem


def _seconds(value: str | None) -> float:
    try:
        return float(value or 0.0)
    except ValueError:
        return 0.0


def _outcome(element: Element | None) -> str:
    """The outcome of a case written by another tool (no `outcome` property)."""
    if element is None:
        return "passed"
    kind = element.get("type") or ""
    if element.tag == "skipped":
        return "xfailed" if "xfail" in kind else "skipped"
    if element.tag == "failure":
        return "failed"
    return kind if kind in ("crashed", "timeout") else "error"


def _attempt_text(result: TestResult) -> str:
    if result.outcome == "passed" and not result.message:
        return RERUN_ATTEMPT
    return f"{result.outcome}: {result.message}".rstrip(": ")
