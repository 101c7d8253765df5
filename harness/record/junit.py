"""Write JUnit XML with junitparser; read any JUnit XML safely and fast with defusedxml.

The harness writes one file per test file, with every test in it, crashed and timed-out ones
included, the exact outcome, node id, replay command and rerun attempts as properties.

Reading accepts the harness's own files and any other JUnit XML: pytest's --junitxml (xdist and
pytest-rerunfailures included), PyTorch CI's reports, unittest-style reports, Maven-surefire-style
rerun elements. ElementTree's C parser builds the elements and Python reads each suite once it has
ended, rather than junitparser's object model or defusedxml's iterparse (ElementTree's pure-Python
parser), both several times slower than a bare parse (numbers in docs/history.md). defusedxml's
guards are kept in front of it (_Guard): entity declarations and external references are refused
(billion laughs), a tag longer than MAX_TOKEN is refused (a billion-character attribute), memory
holds one suite. Every unreadable file ends in one HarnessError naming the file.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from xml.etree.ElementTree import Element, ParseError, XMLPullParser

from pyexpat import ExpatError, ParserCreate

from defusedxml import DefusedXmlException, EntitiesForbidden, ExternalReferenceForbidden
from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from harness.errors import HarnessError
from harness.protocol import Outcome
from harness.record.model import Fields, StoredResult, TestResult

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
# Elements for earlier attempts of a rerun test, and the outcome each stands for: Surefire's, and the
# <rerun> that PyTorch's test/conftest.py writes for each failed attempt pytest-rerunfailures retried.
_ATTEMPT_ELEMENTS = {"rerunFailure": Outcome.FAILED, "flakyFailure": Outcome.FAILED, "rerunError": Outcome.ERROR,
                     "flakyError": Outcome.ERROR, "rerun": Outcome.FAILED}
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
    for batch in iter_fields(path):
        for fields in batch:
            yield TestResult(*fields)


def iter_fields(path: Path) -> Iterator[list[Fields]]:
    """The tests of `read_results` as Fields, in batches (the suites settled after each chunk read)."""
    try:
        with open(path, "rb") as handle:
            yield from _Reader(path).read(handle)
    except (ParseError, ExpatError, DefusedXmlException, OSError, UnicodeError, ValueError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise HarnessError(f"{path}: not readable as JUnit XML: {type(error).__name__}: {reason}") from None


class _RootStarted(Exception):
    """The prolog guard's parser reached the root element: nothing before it declared an entity."""


class _Guard:
    """defusedxml's protections for a file that ElementTree's C parser reads, which offers no handler
    to refuse entities and shows no byte position.

    Entities can only be declared in a document type declaration, which precedes the root element:
    pyexpat with defusedxml's handlers reads the bytes up to the root (a few hundred, usually) and
    refuses any declaration or external reference, so the C parser never sees one. And a tag still
    open after MAX_TOKEN bytes (a `<` with no `>` after it; text cannot hold a bare `<`) is refused
    before expat re-scans it on every feed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.prolog = ParserCreate()
        self.prolog.StartElementHandler = _root
        self.prolog.EntityDeclHandler = _entity
        self.prolog.UnparsedEntityDeclHandler = _entity
        self.prolog.ExternalEntityRefHandler = _external
        self.prolog_read = False
        self.position = 0
        self.open_since: int | None = None  # where the tag still open began

    def check(self, chunk: bytes) -> None:
        """Look at the next chunk before the C parser does."""
        if not self.prolog_read:
            try:
                self.prolog.Parse(chunk, False)
            except _RootStarted:
                self.prolog_read = True
        opening, closing = chunk.rfind(b"<"), chunk.rfind(b">")
        if opening > closing:
            self.open_since = self.position + opening
        elif closing > opening:
            self.open_since = None
        self.position += len(chunk)
        if self.open_since is not None and self.position - self.open_since > MAX_TOKEN:
            raise HarnessError(f"{self.path}: not readable as JUnit XML: a tag longer than "
                               f"{MAX_TOKEN >> 20} MiB (a corrupt or hostile file)")

    def close(self) -> None:
        """A file that ended before its root element (empty, or not XML) fails here, as expat says."""
        if not self.prolog_read:
            self.prolog.Parse(b"", True)


def _root(tag: str, attributes: dict[str, str]) -> None:
    if tag not in ("testsuites", "testsuite"):
        raise ValueError(f"root element is <{tag}>, not <testsuites> or <testsuite>")
    raise _RootStarted


def _entity(name: str, *rest: object) -> None:
    raise EntitiesForbidden(name, None, None, None, None, None)


def _external(context: str, base: str | None, system_id: str | None, public_id: str | None) -> None:
    raise ExternalReferenceForbidden(context, base, system_id, public_id)


class _Reader:
    """ElementTree's C parser builds each element; Python looks at a suite once it has ended, keeps
    what a result needs and clears it. A plain pass (a <testcase> with nothing inside, most of
    pytest's JUnit) costs a few attribute reads: the parse, not Python, is the cost per test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file_modules: dict[str, str] = {}  # a case's file attribute -> its module
        self.class_modules: dict[str, str] = {}  # a case's classname (no file attribute) -> its module

    def read(self, handle: BinaryIO) -> Iterator[list[Fields]]:
        """The tests of every suite ended so far, after each chunk."""
        guard = _Guard(self.path)
        parser = XMLPullParser(("end",))
        while chunk := handle.read(READ_CHUNK):
            guard.check(chunk)
            parser.feed(chunk)
            if settled := self._settled(parser):
                yield settled
        guard.close()
        parser.close()
        if settled := self._settled(parser):
            yield settled

    def _settled(self, parser: XMLPullParser) -> list[Fields]:
        """The tests of the suites that ended (a suite's own, then those outside any suite, under the
        root <testsuites>); each suite is cleared once read, so memory holds one at a time."""
        settled: list[Fields] = []
        for _, element in parser.read_events():
            if element.tag in _SUITE_ELEMENTS:
                settled.extend(self._suite(element))
                element.clear()
        return settled

    def _suite(self, suite: Element) -> Iterable[Fields]:
        """A suite's cases as Fields once its properties (file, replay_prefix) are known; a test
        written twice in one suite is a rerun: the last attempt decides."""
        properties = {p.get("name", ""): p.get("value", "") for p in suite.iterfind("properties/property")}
        file = properties.get("file")
        suite_module = _module(file, "", self.path) if file else None
        found: list[Fields] = []
        for case in suite.iter("testcase"):
            attributes = case.attrib
            name = attributes.get("name")
            if not name or name.isspace():
                raise HarnessError(f"{self.path}:{_nameless_line(self.path)}: <testcase> without a name: "
                                   "a test that cannot be named cannot be compared")
            classname = attributes.get("classname", "")
            module = suite_module or self._module(attributes.get("file"), classname)
            if len(case):
                found.append(_fields(case, classname, name, module, properties))
            else:
                found.append((classname, name, _PASSED, module, _seconds(attributes.get("time")), "", "", "", "", ()))
        if len({fields[1] for fields in found}) == len(found):  # no name twice: no rerun (the common case)
            return found
        reruns: dict[tuple[str, str], Fields] = {}
        for fields in found:
            earlier = reruns.pop(fields[:2], None)
            reruns[fields[:2]] = fields if earlier is None else _rerun(earlier, fields)  # in its last place
        return reruns.values()

    def _module(self, file: str | None, classname: str) -> str:
        """`_module`, asked once per file or class (each names many tests)."""
        known = self.file_modules if file else self.class_modules
        module = known.get(file or classname)
        if module is None:
            module = known[file or classname] = _module(file or "", classname, self.path)
        return module


_SUITE_ELEMENTS = frozenset({"testsuite", "testsuites"})
_OUTCOME_ELEMENTS = frozenset({"failure", "error", "skipped"})
_PASSED = Outcome.PASSED.value  # a plain str: SQLite binds it without looking for an adapter


def _nameless_line(path: Path) -> int:
    """The line of the first <testcase> without a name (the C parser shows no positions): read
    again, only on this error, by pyexpat with the prolog's guards."""
    parser = ParserCreate()
    parser.EntityDeclHandler = parser.UnparsedEntityDeclHandler = _entity
    parser.ExternalEntityRefHandler = _external
    lines: list[int] = []

    def start(tag: str, attributes: dict[str, str]) -> None:
        name = attributes.get("name")
        if tag == "testcase" and (not name or name.isspace()):
            lines.append(parser.CurrentLineNumber)
            raise _RootStarted  # stops the parse: the line is found

    parser.StartElementHandler = start
    with open(path, "rb") as handle, suppress(_RootStarted):
        parser.ParseFile(handle)
    return lines[0] if lines else 0


def _fields(case: Element, classname: str, name: str, module: str, suite_props: dict[str, str]) -> Fields:
    """The Fields of a case that holds more than its own element: properties, an outcome (the first
    failure, error or skipped element, with its text), attempts."""
    props: dict[str, str] = {}
    outcome: Element | None = None
    attempts = []
    for element in case.iter():
        tag = element.tag
        if tag == "property":
            props[element.get("name", "")] = element.get("value", "")
        elif tag in _OUTCOME_ELEMENTS:
            outcome = outcome if outcome is not None else element
        elif tag in _ATTEMPT_ELEMENTS:
            attempts.append(_attempt(_ATTEMPT_ELEMENTS[tag], element.get("message", "")))
    outcome_attributes = outcome.attrib if outcome is not None else {}
    recorded = [props[key] for key in sorted((k for k in props if k.startswith("attempt.")), key=_attempt_number)
                ] if "attempt.1" in props else []
    nodeid = props.get("nodeid", "")
    return (classname, name,
            props.get("outcome") or _outcome(outcome.tag if outcome is not None else "",
                                             outcome_attributes.get("type") or ""),
            module, _seconds(case.get("time")), outcome_attributes.get("message", ""),
            "".join(outcome.itertext()) if outcome is not None else "", nodeid,
            props.get("replay") or _suite_replay(suite_props, nodeid), (*recorded, *attempts))


def _rerun(earlier: Fields, later: Fields) -> Fields:
    """A test written again in the same suite: the later attempt, with the earlier one first among
    its attempts."""
    _, _, outcome, _, _, message, _, _, _, attempts = earlier
    return (*later[:-1], (*attempts, _rerun_attempt_text(outcome, message), *later[-1]))


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
    return _attempt(result.outcome, result.message)


def _attempt(outcome: str, message: str) -> str:
    return f"{outcome}: {message}".rstrip(": ")


def _rerun_attempt_text(outcome: str, message: str) -> str:
    """An earlier <testcase> of a rerun; pytest writes those without their failure."""
    return RERUN_ATTEMPT if outcome == Outcome.PASSED and not message else _attempt(outcome, message)


@dataclass(frozen=True)
class JUnitFiles:
    """The results of JUnit XML files, read again on every pass, a suite at a time: a side of a
    million tests is streamed, never held in memory."""

    paths: tuple[Path, ...]

    @classmethod
    def of(cls, paths: Iterable[Path]) -> JUnitFiles:
        """The files among `paths`, in their order; a folder whose name ends in .xml is passed over. A
        path that is no file to read (a symbolic link to nothing, dangling or in a loop; a pipe,
        which would block the reader) is one line naming it: a side read without it could hide its
        failures."""
        found = []
        for path in paths:
            if path.is_file():
                found.append(path)
            elif path.is_symlink() and not path.exists():
                raise HarnessError(f"{path}: not readable as JUnit XML: a symbolic link that leads to no file "
                                   "(dangling, or a loop)")
            elif not path.is_dir():
                raise HarnessError(f"{path}: not readable as JUnit XML: not a regular file")
        return cls(tuple(found))

    def __iter__(self) -> Iterator[TestResult]:
        for batch in self.batches():
            for fields in batch:
                yield TestResult(*fields)

    def batches(self) -> Iterator[list[Fields]]:
        """Every file's tests as Fields, a batch at a time (what the stream into SQLite reads). A file
        that cannot be read does not stop the others: once all are read, one line names it, and the
        others that could not be read with it (so one pass finds every broken file of a side)."""
        unreadable: list[tuple[Path, HarnessError]] = []
        for path in self.paths:
            try:
                yield from iter_fields(path)
            except HarnessError as error:
                unreadable.append((path, error))
        if unreadable:
            (_, first), *others = unreadable
            also = f" (also not readable: {', '.join(str(path) for path, _ in others)})" if others else ""
            raise HarnessError(f"{first}{also}")

    @property
    def size(self) -> int:
        """Bytes of XML, to judge whether reading them is worth a process of its own."""
        return sum(path.stat().st_size for path in self.paths)
