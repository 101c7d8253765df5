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

Most of a plain pytest report is self-closing <testcase> elements, for which even two Python calls
each cost more than expat's parse: a file of that shape (`_plain_batches`) has them found by regular
expressions and handed over as columns (model.Plain), and only the rest of the file goes through
the handlers, which also check it. Any file the plain path cannot read exactly as the handlers
would is read by them (tests/unit/test_junit_plain.py holds the two to the same results).
"""

from __future__ import annotations

import io
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate, chain, compress, islice
from operator import methodcaller
from pathlib import Path
from typing import BinaryIO, NamedTuple
from pyexpat import ExpatError, ParserCreate

from defusedxml import DefusedXmlException, EntitiesForbidden, ExternalReferenceForbidden
from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from harness.errors import HarnessError
from harness.protocol import Outcome
from harness.record.model import Batch, Fields, Plain, PlainFile, StoredResult, TestResult, batch_fields

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
# The plain path (`_plain_batches`): a file up to this size is read whole, so its text is in memory at once.
PLAIN_BYTES = 32 << 20
SAMPLED = 16  # a file's first tests looked at: if none is plain, the plain path would only add a pass
_UTF8_BOM = b"\xef\xbb\xbf"
_SPACE = "[ \t\r\n]"  # XML's white space
# An attribute value as written, with nothing to normalize or expand and no character XML refuses.
_VALUE = '[^"<&\x00-\x1f\ufffe\uffff]*'
_NAME_VALUE = '[^"<&\x00-\x1f\ufffe\uffff\\S]*[^"<&\x00-\x1f\ufffe\uffff\\s][^"<&\x00-\x1f\ufffe\uffff]*'  # not blank
_ATTRIBUTE = '[A-Za-z_][A-Za-z0-9_.:-]*'  # an attribute name, ASCII only (all of it XML allows)
_FIRST_CASE = re.compile(f'<testcase((?:{_SPACE}+{_ATTRIBUTE}="{_VALUE}")+){_SPACE}*/?>')
# Captured output, which a pass may hold and the reader ignores: text with no markup, reference,
# carriage return (expat would normalize it) or character XML refuses.
_TEXT = "[^<&\r\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]*"
_OUTPUTS = f"(?:<system-out>{_TEXT}</system-out>|<system-err>{_TEXT}</system-err>|{_SPACE})*"
_SKIP_COLUMNS = (" skipped", " type", " message", " text")  # the skip's groups (no attribute name has a space)
_ATTRIBUTE_NAME = re.compile(f'{_SPACE}+({_ATTRIBUTE})="[^"]*"')
_DECLARATION = re.compile(rb"""<\?xml[ \t\r\n]+version[ \t\r\n]*=[ \t\r\n]*["'][^"']*["']"""
                          rb"""(?:[ \t\r\n]+encoding[ \t\r\n]*=[ \t\r\n]*["']([A-Za-z][\w.-]*)["'])?[^?<>]*\?>""")
_BLOCK = "harness-plain"  # the processing instruction that stands in for a run of plain tests
_NO_TESTS = Plain((), (), (), (), (), ())


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
        for fields in batch_fields(batch):
            yield TestResult(*fields)


def iter_fields(path: Path, findings: list[Findings] | None = None) -> Iterator[Batch]:
    """The tests of `read_results` in batches (the suites settled after each chunk read): Fields, and
    the plain passes of a file of the plain shape (`_plain_batches`) as columns. Once the file is
    read, what reading it found beyond its results is appended to `findings`, when given."""
    try:
        data = path.read_bytes() if path.stat().st_size <= PLAIN_BYTES else None
        plain = _plain_batches(path, data) if data is not None else None
        if plain is not None:
            batches, reader = plain
            yield from batches
        else:
            reader = _Reader(path)
            with io.BytesIO(data) if data is not None else open(path, "rb") as handle:  # read once, whichever way
                yield from reader.read(handle)
    except (ExpatError, DefusedXmlException, OSError, UnicodeError, ValueError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise HarnessError(f"{path}: not readable as JUnit XML: {type(error).__name__}: {reason}") from None
    if findings is not None:
        findings.append(reader.findings())


def _plain_batches(path: Path, data: bytes) -> tuple[list[Batch], _Reader] | None:
    """A whole file's batches (its bytes: `data`) read the fast way, and the reader that read them,
    or None when the file is not of the plain shape
    (then the streaming reader reads it, and says what is wrong with it if anything is).

    The plain shape: UTF-8, at most PLAIN_BYTES, no markup declaration, comment, CDATA section or
    processing instruction (`<!`, `<?` beyond the XML declaration). In such a file a regular
    expression finds plain tests exactly (`_Layout`: elements whose every character is checked to
    be what XML allows there). Runs of them are taken out as columns, each left as a processing
    instruction that stands in its place, and the rest of the file goes through the streaming
    reader's handlers: expat checks that it is well-formed (no DTD: no entity can be declared,
    none expanded) and rooted in <testsuites> or <testsuite>, and a stand-in outside the root or
    inside another test is refused, so the whole file is well-formed exactly when the rest is.
    Whatever the plain path does not read as the streaming reader would (a test written twice in
    the file, a test without a name, anything malformed) goes to the streaming reader, which also
    gives any error."""
    text = _plain_text(data)
    layout = _Layout.of(text) if text is not None else None
    if layout is None:
        return None
    runs, reduced = layout.split(text)  # type: ignore[arg-type]
    if reduced.rstrip().endswith("?>"):
        return None  # a run after the root element (expat would take a stand-in there)
    reader = _Reader(path, runs)
    try:
        return reader.read_whole(reduced), reader
    except (_NotPlain, ExpatError, HarnessError, ValueError):
        return None


def _plain_text(data: bytes) -> str | None:
    """The file's text when it has the plain shape but for its layout, else None."""
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM):]
    if not data.startswith(b"<"):
        return None  # UTF-16 or -32, or text before the root: the streaming reader decides
    declared = _DECLARATION.match(data)
    if declared is not None and declared.group(1) not in (None, b"utf-8", b"UTF-8", b"utf8", b"UTF8"):
        return None
    if b"<!" in data or b"]]>" in data or data.count(b"<?") != (declared is not None):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeError:
        return None


@dataclass(frozen=True)
class _Runs:
    """A plain file's plain tests, a column per attribute and skip group in the file's order, and how
    many each run of them holds (the stand-ins' numbers index `starts` and `counts`)."""

    columns: dict[str, list[str]]
    counts: list[int]

    @cached_property
    def starts(self) -> list[int]:
        return list(accumulate(self.counts, initial=0))

    def start(self, number: int) -> int:
        """Where run `number` starts in the columns."""
        return self.starts[number]


class _NotPlain(Exception):
    """The plain path cannot read this file as the streaming reader would: it reads it instead."""


def _case_pattern(names: tuple[str, ...]) -> str:
    """A plain test with attributes `names`: self-closing, or holding captured output and at most
    one skip as pytest writes it (kind, message, text: _SKIP_COLUMNS); each value is a group."""
    attributes = "".join(f'{_SPACE}+{re.escape(name)}="({_NAME_VALUE if name == "name" else _VALUE})"'
                         for name in names)
    skipped = (f'(<skipped)(?:{_SPACE}+type="({_VALUE})")?(?:{_SPACE}+message="({_VALUE})")?'
               f"{_SPACE}*(?:/>|>({_TEXT})</skipped>)")
    return f"<testcase{attributes}{_SPACE}*(?:/>|>{_OUTPUTS}(?:{skipped}{_OUTPUTS})?</testcase>)"


@dataclass(frozen=True)
class _Layout:
    """The attributes, in order, of a file's first <testcase> with a name: the regular expression of
    a plain test, an element with exactly these attributes, double-quoted, values with no reference
    or white space to normalize, and nothing inside but captured output and a skip (`_case_pattern`).
    Other test elements stay for the streaming reader."""

    names: tuple[str, ...]
    case: re.Pattern[str]

    @classmethod
    def of(cls, text: str) -> _Layout | None:
        first = _FIRST_CASE.search(text)
        if first is None:
            return None
        names = tuple(_ATTRIBUTE_NAME.findall(first.group(1)))
        if "name" not in names or len(set(names)) < len(names):
            return None
        case = re.compile(_case_pattern(names))
        sample = islice(re.finditer("<testcase[ \t\r\n]", text), SAMPLED)
        if not any(case.match(text, start.start()) for start in sample):
            return None  # tests that all hold more (the harness's own, with properties): the handlers' to read
        return cls(names, case)

    def split(self, text: str) -> tuple[_Runs, str]:
        """The file's plain tests as columns, in one pass of the expression (`re.split` hands over
        each test's groups between the texts around it), grouped in runs (tests with only white
        space between them), and the text with each run replaced by its stand-in: a processing
        instruction that numbers it."""
        parts = self.case.split(text)
        step = len(self.names) + len(_SKIP_COLUMNS) + 1
        gaps = parts[::step]  # the texts around the tests: one more than the tests
        columns = {name: parts[index::step] for index, name in enumerate(self.names + _SKIP_COLUMNS, start=1)}
        tests = len(gaps) - 1
        # a run starts at the first test, and at each test after text that is not white space
        starts = [0, *compress(range(1, tests), map(bool, map(methodcaller("strip", " \t\r\n"), gaps[1:-1])))]
        if not tests:
            return _Runs(columns, []), text
        stand_ins = [f"<?{_BLOCK} {number}?>" for number in range(len(starts))]
        reduced = "".join(chain.from_iterable(zip(map(gaps.__getitem__, starts), stand_ins))) + gaps[-1]
        return _Runs(columns, [end - start for start, end in zip(starts, [*starts[1:], tests])]), reduced


class _Case:
    """What a <testcase> holds beyond its own element: made only for a case that has some (a pass in
    pytest's JUnit stays a bare attribute dict)."""

    __slots__ = ("attributes", "properties", "results", "attempts")

    def __init__(self, attributes: dict[str, str]) -> None:
        self.attributes = attributes
        self.properties: dict[str, str] = {}
        self.results: list[_Element] = []  # every failure/error/skipped element, in the file's order
        self.attempts: list[str] = []


class _Element(NamedTuple):
    """One result element of a test (<failure>, <error>, <skipped>): a test may hold several."""

    tag: str
    attributes: dict[str, str]
    text: list[str]


@dataclass
class _Suite:
    properties: dict[str, str] = field(default_factory=dict)
    cases: list[_Case | dict[str, str] | int] = field(default_factory=list)  # a bare case is its attributes,
    # a run of plain tests set aside by the plain path is its block's number
    claims: dict[str, str] = field(default_factory=dict)  # the element's own attributes: the counts it claims
    shown: Counter[str] = field(default_factory=Counter)  # what its tests (and inner suites') show, by COUNTED name


@dataclass(frozen=True)
class Findings:
    """What reading a side's files found that the results alone do not say: `problems` (suites whose
    claimed counts their tests do not show: the comparison cannot be valid) and `notes` (tests
    without a name, named by their place)."""

    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __add__(self, other: Findings) -> Findings:
        return Findings(self.problems + other.problems, self.notes + other.notes)


class _Reader:
    """pyexpat with the guards defusedxml puts on its parsers (no entity declarations, no external
    references) and handlers that keep only what a result needs: a third of the cost of
    ElementTree's pure-Python parser, which defusedxml's iterparse uses. The handlers run once per
    element of every file of a side (a million times for a side of PyTorch's size): they test the
    commonest elements first and allocate nothing for a bare <testcase>."""

    def __init__(self, path: Path, runs: _Runs | None = None) -> None:
        self.path = path
        self.runs = runs  # on the plain path: the runs of plain tests set aside
        self.settled: list[Fields] = []
        self.plain: list[Fields | int] = []  # on the plain path: every test, or run of plain tests (its
        # number), in the order the streaming reader settles them
        self.run_modules: dict[int, str | None] = {}  # a run's suite's module (its `file` property), if any
        self.rooted = False  # whether the root element has begun
        self.suites: list[_Suite] = [_Suite()]  # the outermost one holds cases outside any <testsuite>
        self.cases = self.suites[-1].cases  # the innermost suite's (a case's end puts it there)
        self.case: dict[str, str] | None = None  # the attributes of the open <testcase>
        self.detail: _Case | None = None  # and what it holds, once it holds something
        self.position = 0  # <testcase> elements begun (counted on the streaming path only)
        self.unnamed: list[str] = []  # names given to tests without one, by their place in the file
        self.problems: list[str] = []  # suites that claim more tests of a kind than they hold
        self.file_modules: dict[str, str] = {}  # a case's file attribute -> its module
        self.class_modules: dict[str, str] = {}  # a case's classname (no file attribute) -> its module
        self.parser = ParserCreate()
        self.parser.buffer_text = True
        self.parser.buffer_size = 1 << 16
        self.parser.StartElementHandler = self._root
        self.parser.EndElementHandler = self._end
        self.parser.EntityDeclHandler = self._entity
        self.parser.UnparsedEntityDeclHandler = self._entity
        self.parser.ExternalEntityRefHandler = self._external
        if runs is not None:
            self.parser.ProcessingInstructionHandler = self._block

    def read(self, handle: BinaryIO) -> Iterator[list[Fields]]:
        """The tests of every suite settled so far, after each chunk."""
        try:
            position = 0
            while chunk := handle.read(READ_CHUNK):
                if position - max(self.parser.CurrentByteIndex, 0) > MAX_TOKEN:
                    raise HarnessError(f"{self.path}: not readable as JUnit XML: a tag longer than "
                                       f"{MAX_TOKEN >> 20} MiB (a corrupt or hostile file)")
                self.parser.Parse(chunk, False)
                position += len(chunk)
                if self.settled:
                    yield self._taken()
            self.parser.Parse(b"", True)
        finally:
            del self.parser  # its handlers point back here: without this, a cycle keeps expat's buffers
        self._settle(self.suites.pop())
        if self.settled:
            yield self._taken()

    def read_whole(self, text: str) -> list[Batch]:
        """The tests of a file of the plain shape, its runs of plain tests read in bulk."""
        try:
            self.parser.Parse(text, True)
        finally:
            del self.parser
        self._settle(self.suites.pop())
        runs: list[int] = []
        fields: list[Fields] = []
        places: list[int] = []  # of fields
        passes_places: list[range] = []
        place = 0
        for item in self.plain:
            if isinstance(item, int):
                count = self.runs.counts[item]  # type: ignore[union-attr]
                runs.append(item)
                passes_places.append(range(place, place + count))
                place += count
            else:
                fields.append(item)
                places.append(place)
                place += 1
        if not place:
            return []
        passes, skips = self._simple(runs, list(chain.from_iterable(passes_places)))
        if len({*passes.joined, *skips.joined, *(f"{f[0]}::{f[1]}" for f in fields)}) < place:
            raise _NotPlain  # a test written twice in the file: the streaming reader folds it
        return [PlainFile(passes, skips, fields, places)]

    def _taken(self) -> list[Fields]:
        settled, self.settled = self.settled, []
        return settled

    def _root(self, tag: str, attributes: dict[str, str]) -> None:
        if tag not in ("testsuites", "testsuite"):
            raise ValueError(f"root element is <{tag}>, not <testsuites> or <testsuite>")
        self.parser.StartElementHandler = self._start
        self.rooted = True
        self._start(tag, attributes)

    def _start(self, tag: str, attributes: dict[str, str]) -> None:
        if tag == "testcase":
            self.position += 1
            name = attributes.get("name")
            if not name or name.isspace():
                attributes = self._named(attributes)
            self.case, self.detail = attributes, None
        elif tag == "property":
            target = self.suites[-1].properties if self.case is None else self._detail().properties
            target[attributes.get("name", "")] = attributes.get("value", "")
        elif tag == "testsuite":
            self.suites.append(_Suite(claims=attributes))
            self.cases = self.suites[-1].cases
        elif self.case is None:
            return
        elif tag in _OUTCOME_ELEMENTS:
            element = _Element(tag, attributes, [])
            self._detail().results.append(element)
            self.suites[-1].shown[COUNTED_BY_TAG[tag]] += 1  # counted here: most tests hold none
            self.parser.CharacterDataHandler = element.text.append  # only an outcome's text is kept
        elif tag in _ATTEMPT_ELEMENTS:
            self._detail().attempts.append(f"{_ATTEMPT_ELEMENTS[tag]}: {attributes.get('message', '')}".rstrip(": "))

    def _named(self, attributes: dict[str, str]) -> dict[str, str]:
        """A test written without a name, named by its file and its place among the file's tests (the
        same on both sides of a comparison of one writer's reports), so the others are still compared."""
        if self.runs is not None:
            raise _NotPlain  # the plain path does not count tests: the streaming reader names it
        name = f"unnamed testcase {self.position} of {self.path.name}"
        if not self.unnamed:
            self.unnamed.append(f"{self.path}:{self.parser.CurrentLineNumber}")
        self.unnamed.append(name)
        return {**attributes, "name": name}

    def findings(self) -> Findings:
        """What reading the file found beyond its results: call once it is read."""
        notes: tuple[str, ...] = ()
        if self.unnamed:
            where, *names = self.unnamed
            notes = (f"{where}: {len(names)} <testcase> without a name, each named by its place in the file "
                     f"({names[0]}{', ...' if len(names) > 1 else ''}); the other tests are compared as usual",)
        return Findings(tuple(self.problems), notes)

    def _detail(self) -> _Case:
        """The open <testcase>'s _Case (called only inside one), made when it first holds something."""
        if self.detail is None:
            self.detail = _Case(self.case or {})
        return self.detail

    def _end(self, tag: str) -> None:
        if tag == "testcase":
            if self.case is not None:
                self.cases.append(self.case if self.detail is None else self.detail)
                self.case = self.detail = None
        elif tag == "property":
            return
        elif tag == "testsuite":
            suite = self.suites.pop()
            self._settle(suite)
            self._check_claims(suite)
            self.suites[-1].shown.update(suite.shown)
            self.cases = self.suites[-1].cases
        elif tag in _OUTCOME_ELEMENTS:
            self.parser.CharacterDataHandler = None

    def _block(self, target: str, number: str) -> None:
        """A run of plain tests set aside by the plain path, in its place among the suite's cases."""
        if self.case is not None or not self.rooted:
            raise _NotPlain  # inside another test (the streaming reader's to read), or before the root
        self.cases.append(int(number))

    def _entity(self, name: str, *rest: object) -> None:
        raise EntitiesForbidden(name, None, None, None, None, None)

    def _external(self, context: str, base: str | None, system_id: str | None, public_id: str | None) -> None:
        raise ExternalReferenceForbidden(context, base, system_id, public_id)

    def _check_claims(self, suite: _Suite) -> None:
        """A suite that claims more tests, failures, errors or skips than its tests show is a report cut
        short or a writer that only summarises: failures it claims may be missing from the results."""
        claimed = {name: _count(suite.claims.get(name)) for name in COUNTED}
        short = [name for name, number in claimed.items() if number > suite.shown[name]]
        if short:
            label = f" '{suite.claims['name']}'" if suite.claims.get("name") else ""
            self.problems.append(
                f"{self.path}: <testsuite{label}> claims " + ", ".join(f"{name}={claimed[name]}" for name in short)
                + " but its <testcase> elements show " + ", ".join(f"{name}={suite.shown[name]}" for name in short)
                + ": tests may be missing from this side's results")

    def _settle(self, suite: _Suite) -> None:
        """A suite's cases become Fields once its properties (file, replay_prefix) are known;
        a test written twice in one suite is a rerun: the last attempt decides."""
        if self.runs is not None:
            self._settle_plain(suite)
            return
        found: dict[tuple[str, str], Fields] = {}
        suite_module = self._suite_module(suite)
        suite.shown["tests"] += len(suite.cases)  # (their result elements were counted as they began)
        for case in suite.cases:
            fields = self._case_fields(case, suite.properties, suite_module)  # type: ignore[arg-type]
            key = (fields[0], fields[1])
            earlier = found.get(key)
            if earlier is not None:
                del found[key]  # a rerun takes the place of its last attempt
                fields = _rerun(earlier, fields)
            found[key] = fields
        self.settled.extend(found.values())

    def _settle_plain(self, suite: _Suite) -> None:
        """On the plain path: a suite's tests, and its runs of plain tests, in order."""
        suite_module = self._suite_module(suite)
        shown = suite.shown
        for case in suite.cases:
            if isinstance(case, int):
                self.plain.append(case)
                self.run_modules[case] = suite_module
                runs: _Runs = self.runs  # type: ignore[assignment]  # set on the plain path
                start, count = runs.start(case), runs.counts[case]
                shown["tests"] += count
                shown["skipped"] += count - runs.columns[_SKIP_COLUMNS[0]][start:start + count].count(None)
            else:
                shown["tests"] += 1
                self.plain.append(self._case_fields(case, suite.properties, suite_module))

    def _suite_module(self, suite: _Suite) -> str | None:
        file = suite.properties.get("file")
        return _module(file, "", self.path) if file else None

    def _case_fields(self, case: _Case | dict[str, str], properties: dict[str, str], suite_module: str | None) -> Fields:
        bare = isinstance(case, dict)
        attributes = case if bare else case.attributes
        classname = attributes.get("classname", "")
        module = suite_module or self._module(attributes.get("file"), classname)
        if bare:
            return (classname, attributes["name"], _PASSED, module, _seconds(attributes.get("time")), "", "", "", "", ())
        return _fields(case, classname, module, properties)

    def _simple(self, runs: list[int], places: list[int]) -> tuple[Plain, Plain]:
        """The tests of the runs, in the order given, at `places`: the plain passes and the plain
        skips, as columns; modules, seconds and outcomes found as `_case_fields` finds a case's, but
        asked once per distinct value."""
        columns = self._in_order(runs)
        names = columns["name"]
        classnames = columns.get("classname") or ("",) * len(names)
        suite_modules = [self.run_modules[number] for number in runs]
        if None not in suite_modules and len(set(suite_modules)) == 1:
            modules: Sequence[str] = (suite_modules[0],) * len(names)  # type: ignore[operator]
        else:
            modules = self._modules(classnames, columns.get("file"))
            if any(suite_modules):  # a suite's `file` property names the module of its tests
                counts = [self.runs.counts[number] for number in runs]  # type: ignore[union-attr]
                modules = list(chain.from_iterable(
                    (suite,) * count if suite else modules[offset:offset + count]
                    for suite, offset, count in zip(suite_modules, accumulate(counts, initial=0), counts)))
        times = columns.get("time")
        try:
            durations = list(map(float, times)) if times is not None else [0.0] * len(names)
        except ValueError:
            durations = [_seconds(time) for time in times]  # type: ignore[union-attr]
        joined = list(map("::".join, zip(classnames, names)))
        skipped = columns[_SKIP_COLUMNS[0]]  # a skip's groups are None where a test has none
        if not any(skipped):
            return Plain(classnames, names, joined, modules, durations, places), _NO_TESTS
        passed = [not skip for skip in skipped]
        every = (classnames, names, joined, modules, durations, places)
        kinds = list(compress(columns[_SKIP_COLUMNS[1]], skipped))
        outcomes = {kind: str(_outcome("skipped", kind or "")) for kind in set(kinds)}  # a plain str binds fastest
        return (Plain(*(list(compress(column, passed)) for column in every)),
                Plain(*(list(compress(column, skipped)) for column in every), list(map(outcomes.__getitem__, kinds)),
                      *([value or "" for value in compress(columns[key], skipped)] for key in _SKIP_COLUMNS[2:])))

    def _in_order(self, runs: list[int]) -> dict[str, Sequence[str]]:
        """The columns of the runs, in the order given (the file's, unless some are outside any suite)."""
        columns = self.runs.columns  # type: ignore[union-attr]
        if runs == list(range(len(runs))):
            return columns  # type: ignore[return-value]
        starts, counts = self.runs.starts, self.runs.counts  # type: ignore[union-attr]
        return {name: list(chain.from_iterable(column[starts[n]:starts[n] + counts[n]] for n in runs))
                for name, column in columns.items()}

    def _modules(self, classnames: Sequence[str], files: Sequence[str] | None) -> Sequence[str]:
        """Each plain test's module from its own attributes (file, else classname), as `_module`."""
        if files is not None and "" in files:
            return [self._module(file, classname) for file, classname in zip(files, classnames)]
        if files is None:
            for classname in set(classnames).difference(self.class_modules):
                self._module(None, classname)
            return list(map(self.class_modules.__getitem__, classnames))
        for file in set(files).difference(self.file_modules):
            self._module(file, "")
        return list(map(self.file_modules.__getitem__, files))

    def _module(self, file: str | None, classname: str) -> str:
        """`_module`, asked once per file or class (each names many tests)."""
        known = self.file_modules if file else self.class_modules
        name = file or classname
        module = known.get(name)
        if module is None:
            module = known[name] = _module(file or "", classname, self.path)
        return module

_OUTCOME_ELEMENTS = frozenset({"failure", "error", "skipped"})
# How bad each result element is: a test holding several is the worst of them (a writer that marks a
# test skipped and then records its failure means a failure), and keeps every message.
_SEVERITY = {"skipped": 0, "failure": 1, "error": 2}
# The counts a <testsuite> claims, by attribute, and the result element each counts.
COUNTED = ("tests", "failures", "errors", "skipped")
COUNTED_BY_TAG = {"failure": "failures", "error": "errors", "skipped": "skipped"}
_PASSED = Outcome.PASSED.value  # a plain str: SQLite binds it without looking for an adapter


def _fields(case: _Case, classname: str, module: str, suite_props: dict[str, str]) -> Fields:
    """The Fields of a case that holds more than its own element: properties, an outcome, attempts."""
    props = case.properties
    results = case.results
    tag, outcome_attributes, texts = (results[0] if len(results) == 1 else _worst(results)) if results else _NO_ELEMENT
    message, text = outcome_attributes.get("message", ""), "".join(texts)
    if len(results) > 1:  # every element's message kept, the worst one first
        worst = _worst(results)
        others = [element for element in results if element is not worst]
        message = "; ".join([message, *(f"also {e.tag}: {e.attributes.get('message', '')}".rstrip(": ")
                                         for e in others)])
        text += "".join(f"\n--- also {e.tag} ---\n{''.join(e.text)}" for e in others if e.text)
    recorded = [props[key] for key in sorted((k for k in props if k.startswith("attempt.")), key=_attempt_number)
                ] if "attempt.1" in props else []
    nodeid = props.get("nodeid", "")
    return (classname, case.attributes["name"],
            props.get("outcome") or _outcome(tag, outcome_attributes.get("type") or ""),
            module, _seconds(case.attributes.get("time")), message, text, nodeid,
            props.get("replay") or _suite_replay(suite_props, nodeid),
            (*recorded, *case.attempts))


_NO_ELEMENT = _Element("", {}, [])


def _worst(results: list[_Element]) -> _Element:
    """The element that decides a test's outcome: the worst (the first of equals)."""
    return max(results, key=lambda element: _SEVERITY[element.tag])


def _count(value: str | None) -> int:
    """A claimed count as a number: one that is not a whole number claims nothing."""
    try:
        return int(value or 0)
    except ValueError:
        return 0


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
            for fields in batch_fields(batch):
                yield TestResult(*fields)

    def batches(self, findings: list[Findings] | None = None) -> Iterator[Batch]:
        """Every file's tests, a batch at a time (what the stream into SQLite reads); what reading each
        file found beyond its results is appended to `findings`, when given. A file
        that cannot be read does not stop the others: once all are read, one line names it, and the
        others that could not be read with it (so one pass finds every broken file of a side)."""
        unreadable: list[tuple[Path, HarnessError]] = []
        for path in self.paths:
            try:
                yield from iter_fields(path, findings)
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
