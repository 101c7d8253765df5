"""Write JUnit XML with junitparser; read any JUnit XML safely and fast with defusedxml.

The harness writes one file per test file, with every test in it, crashed and timed-out ones
included, the exact outcome, node id, replay command and rerun attempts as properties.

Reading accepts the harness's own files and any other JUnit XML: pytest's --junitxml (xdist and
pytest-rerunfailures included), unittest-style reports, Maven-surefire-style rerun elements.
Reading streams through pyexpat with defusedxml's guards rather than junitparser's object model
or defusedxml's iterparse, both several times slower than a bare ElementTree parse (numbers in
docs/verdicts.md): entity declarations and external references are refused (billion laughs),
a tag longer than MAX_TOKEN is refused (a billion-character attribute), memory stays flat.
Every unreadable file ends in one HarnessError naming the file.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO
from pyexpat import ExpatError, ParserCreate

from defusedxml import DefusedXmlException, EntitiesForbidden, ExternalReferenceForbidden
from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from harness.errors import HarnessError
from harness.protocol import Outcome
from harness.record.model import StoredResult, TestResult

_RESULT_ELEMENT = {Outcome.FAILED: Failure, Outcome.ERROR: Error, Outcome.CRASHED: Error, Outcome.TIMEOUT: Error,
                   Outcome.SKIPPED: Skipped, Outcome.XFAILED: Skipped}
_ELEMENT_TYPE = {Outcome.XFAILED: "pytest.xfail"}  # any other outcome is its own type (crashed, timeout)

# Characters XML 1.0 cannot hold, not even as references (C0 controls but tab, newline and carriage
# return; lone surrogates; U+FFFE, U+FFFF). Test output carries them: torch.load's error message
# has ANSI colour codes, and one such character made a whole file's report unwritable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
READ_CHUNK = 4 << 20  # bytes fed to the parser at once
# Bytes of one tag still open (a name, an attribute): expat re-scans an open tag on every feed, so
# a billion-character attribute would take minutes; no real report has a tag this long.
MAX_TOKEN = 16 << 20
# Surefire-style elements for earlier attempts of a rerun test, and the outcome each stands for.
_ATTEMPT_ELEMENTS = {"rerunFailure": Outcome.FAILED, "flakyFailure": Outcome.FAILED, "rerunError": Outcome.ERROR,
                     "flakyError": Outcome.ERROR}
RERUN_ATTEMPT = "failed: rerun (pytest's JUnit XML keeps no details of earlier attempts)"


def build_suite(suite_name: str, results: Iterable[TestResult], properties: dict[str, str],
                replay: dict[str, str], case_properties: dict[str, str] | None = None) -> TestSuite:
    """One junitparser <testsuite>: each test with its outcome, node id, replay (from `replay`, else
    the result's own) and attempts as properties, plus `case_properties` on every test."""
    suite = TestSuite(xml_text(suite_name))
    for key, value in properties.items():
        suite.add_property(key, xml_text(value))
    for result in results:  # append, not add_testcase: that recounts the whole suite per case (quadratic)
        suite.append(_case(result, replay.get(result.nodeid, result.replay), case_properties or {}))
    suite.update_statistics()
    return suite


def _case(result: TestResult, replay: str, extra: dict[str, str]) -> TestCase:
    case = TestCase(xml_text(result.name), xml_text(result.classname), round(result.duration, 6))
    case_properties = Properties()
    case_properties.add_property(Property("outcome", result.outcome))
    for key, value in extra.items():
        case_properties.add_property(Property(key, xml_text(value)))
    if result.nodeid:
        case_properties.add_property(Property("nodeid", xml_text(result.nodeid)))
    if replay:
        case_properties.add_property(Property("replay", xml_text(replay)))
    for number, attempt in enumerate(result.attempts, 1):
        case_properties.add_property(Property(f"attempt.{number}", xml_text(attempt)))
    case.append(case_properties)
    element = _RESULT_ELEMENT.get(result.outcome)
    if element is not None:
        outcome_element = element(xml_text(result.message), _ELEMENT_TYPE.get(result.outcome, result.outcome))
        outcome_element.text = xml_text(result.text) or None
        case.result = [outcome_element]
    return case


def xml_text(text: str) -> str:
    """`text` with each character XML cannot hold written as its Python escape (ESC as `\\x1b`)."""
    return _NOT_XML.sub(lambda found: repr(found.group())[1:-1], text) if text else text


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
    try:
        document.write(str(partial), pretty=True)
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise HarnessError(f"{path}: cannot write: {error.strerror}") from None


def read_results(path: Path) -> list[TestResult]:
    """Every test of a JUnit XML file, in the file's order (the harness writes run order).

    A test written several times in one suite (pytest-rerunfailures under --junitxml writes every
    attempt as its own <testcase>) is one result: the last attempt decides, earlier ones become
    its attempts."""
    return list(iter_results(path))


def iter_results(path: Path) -> Iterator[TestResult]:
    """The results of `read_results`, a <testsuite> at a time: memory holds one suite, never the
    whole file (pytest's own --junitxml writes one suite per session)."""
    reader = _Reader(path)
    try:
        with open(path, "rb") as handle:
            yield from reader.read(handle)
    except (ExpatError, DefusedXmlException, OSError, UnicodeError, ValueError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise HarnessError(f"{path}: not readable as JUnit XML: {type(error).__name__}: {reason}") from None


@dataclass
class _Case:
    """A <testcase> as read so far."""

    attributes: dict[str, str]
    properties: dict[str, str] = field(default_factory=dict)
    outcome: tuple[str, dict[str, str]] | None = None  # the first failure/error/skipped element
    text: list[str] = field(default_factory=list)
    attempts: list[str] = field(default_factory=list)


@dataclass
class _Suite:
    properties: dict[str, str] = field(default_factory=dict)
    cases: list[_Case] = field(default_factory=list)


class _Reader:
    """pyexpat with the guards defusedxml puts on its parsers (no entity declarations, no external
    references) and handlers that keep only what a TestResult needs: a third of the cost of
    ElementTree's pure-Python parser, which defusedxml's iterparse uses."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.results: list[TestResult] = []
        self.suites: list[_Suite] = [_Suite()]  # the outermost one holds cases outside any <testsuite>
        self.case: _Case | None = None
        self.parser = ParserCreate()
        self.parser.buffer_text = True
        self.parser.buffer_size = 1 << 16
        self.parser.StartElementHandler = self._root
        self.parser.EndElementHandler = self._end
        self.parser.EntityDeclHandler = self._entity
        self.parser.UnparsedEntityDeclHandler = self._entity
        self.parser.ExternalEntityRefHandler = self._external

    def read(self, handle: BinaryIO) -> Iterator[TestResult]:
        """The results of every suite settled so far, after each chunk."""
        try:
            position = 0
            while chunk := handle.read(READ_CHUNK):
                if position - max(self.parser.CurrentByteIndex, 0) > MAX_TOKEN:
                    raise HarnessError(f"{self.path}: not readable as JUnit XML: a tag longer than "
                                       f"{MAX_TOKEN >> 20} MiB (a corrupt or hostile file)")
                self.parser.Parse(chunk, False)
                position += len(chunk)
                yield from self._settled()
            self.parser.Parse(b"", True)
        finally:
            del self.parser  # its handlers point back here: without this, a cycle keeps expat's buffers
        self._settle(self.suites.pop())
        yield from self._settled()

    def _settled(self) -> list[TestResult]:
        settled, self.results = self.results, []
        return settled

    def _root(self, tag: str, attributes: dict[str, str]) -> None:
        if tag not in ("testsuites", "testsuite"):
            raise ValueError(f"root element is <{tag}>, not <testsuites> or <testsuite>")
        self.parser.StartElementHandler = self._start
        self._start(tag, attributes)

    def _start(self, tag: str, attributes: dict[str, str]) -> None:
        case = self.case
        if tag == "property":
            target = case.properties if case is not None else self.suites[-1].properties
            target[attributes.get("name", "")] = attributes.get("value", "")
        elif tag == "testcase":
            if not attributes.get("name", "").strip():
                raise HarnessError(f"{self.path}:{self.parser.CurrentLineNumber}: <testcase> without a name: "
                                   "a test that cannot be named cannot be compared")
            self.case = _Case(attributes)
        elif tag == "testsuite":
            self.suites.append(_Suite())
        elif case is None:
            return
        elif tag in _OUTCOME_ELEMENTS and case.outcome is None:
            case.outcome = (tag, attributes)
            self.parser.CharacterDataHandler = case.text.append  # only an outcome's text is kept
        elif tag in _ATTEMPT_ELEMENTS:
            case.attempts.append(f"{_ATTEMPT_ELEMENTS[tag]}: {attributes.get('message', '')}".rstrip(": "))

    def _end(self, tag: str) -> None:
        if tag == "property":
            return
        if tag == "testcase" and self.case is not None:
            self.suites[-1].cases.append(self.case)
            self.case = None
        elif tag == "testsuite":
            self._settle(self.suites.pop())
        elif tag in _OUTCOME_ELEMENTS:
            self.parser.CharacterDataHandler = None

    def _entity(self, name: str, *rest: object) -> None:
        raise EntitiesForbidden(name, None, None, None, None, None)

    def _external(self, context: str, base: str | None, system_id: str | None, public_id: str | None) -> None:
        raise ExternalReferenceForbidden(context, base, system_id, public_id)

    def _settle(self, suite: _Suite) -> None:
        """A suite's cases become results once its properties (file, replay_prefix) are known;
        a test written twice in one suite is a rerun: the last attempt decides."""
        found: dict[tuple[str, str], TestResult] = {}
        file = suite.properties.get("file")
        module = _module(file, "", self.path) if file else None
        for case in suite.cases:
            result = _result(case, suite.properties, module, self.path)
            key = (result.classname, result.name)
            earlier = found.pop(key, None)
            if earlier is not None:
                result = replace(result, attempts=(*earlier.attempts, _rerun_attempt_text(earlier), *result.attempts))
            found[key] = result
        self.results.extend(found.values())


_OUTCOME_ELEMENTS = frozenset({"failure", "error", "skipped"})


def _result(case: _Case, suite_props: dict[str, str], module: str | None, path: Path) -> TestResult:
    attributes, props = case.attributes, case.properties
    classname = attributes.get("classname", "")
    tag, outcome_attributes = case.outcome or ("", {})
    recorded = [props[key] for key in sorted((k for k in props if k.startswith("attempt.")), key=_attempt_number)
                ] if "attempt.1" in props else []
    nodeid = props.get("nodeid", "")
    return TestResult(
        classname=classname,
        name=attributes.get("name", ""),
        outcome=props.get("outcome") or _outcome(tag, outcome_attributes.get("type") or ""),
        module=module or _module(attributes.get("file", ""), classname, path),
        duration=_seconds(attributes.get("time")),
        message=outcome_attributes.get("message", ""),
        text="".join(case.text),
        nodeid=nodeid,
        replay=props.get("replay") or _suite_replay(suite_props, nodeid),
        attempts=(*recorded, *case.attempts),
    )


def _attempt_number(key: str) -> int:
    number = key.split(".", 1)[1]
    return int(number) if number.isdigit() else 0


def _suite_replay(suite_props: dict[str, str], nodeid: str) -> str:
    return replay_command(suite_props.get("replay_prefix", ""), nodeid)


def replay_command(prefix: str, nodeid: str) -> str:
    """The command that reruns one test: its file's `replay_prefix`, then its node id, quoted."""
    return f"{prefix} {shlex.quote(nodeid)}" if prefix and nodeid else ""


def replay_prefix(replay: str, nodeid: str) -> str:
    """The replay command without its node id; empty when the command does not end with it."""
    suffix = f" {shlex.quote(nodeid)}"
    return replay[: -len(suffix)] if nodeid and replay.endswith(suffix) else ""


@lru_cache(maxsize=4096)  # one test class holds many tests: the same answer is asked for again and again
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


def _outcome(tag: str, kind: str) -> str:
    """The outcome of a case written by another tool (no `outcome` property)."""
    if not tag:
        return Outcome.PASSED
    if tag == "skipped":
        return Outcome.XFAILED if "xfail" in kind else Outcome.SKIPPED
    if tag == "failure":
        return Outcome.FAILED
    return Outcome(kind) if kind in (Outcome.CRASHED, Outcome.TIMEOUT) else Outcome.ERROR


def attempt_text(result: TestResult | StoredResult) -> str:
    """How an earlier attempt is kept in a test's history: `outcome: first line of the message`."""
    return f"{result.outcome}: {result.message}".rstrip(": ")


def _rerun_attempt_text(result: TestResult) -> str:
    """An earlier <testcase> of a rerun; pytest writes those without their failure."""
    return RERUN_ATTEMPT if result.outcome == Outcome.PASSED and not result.message else attempt_text(result)


@dataclass(frozen=True)
class JUnitFiles:
    """The results of JUnit XML files, read again on every pass, a suite at a time: a side of a
    million tests is streamed, never held in memory."""

    paths: tuple[Path, ...]

    def __iter__(self) -> Iterator[TestResult]:
        for path in self.paths:
            yield from iter_results(path)

    @property
    def size(self) -> int:
        """Bytes of XML, to judge whether reading them is worth a process of its own."""
        return sum(path.stat().st_size for path in self.paths)
