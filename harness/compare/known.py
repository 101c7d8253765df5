"""Known regressions: regressions a team already lives with, named in a data file.

A JIT with a known bug must not make every diff exit 1, nor may the bug be hidden: a regression
the file names is moved from `regressions` to `known` (shown in its own section, with its reason
and link), the exit status counts only new regressions, and a named test that passed this time is
reported as "known, now fixed" so the entry gets removed. The file (docs/interop.md):

    known_regressions:
      cinderx-jit:                           # the candidate configuration
        - pattern: "harness.interop.test_matrix::test_cell[hot-*]"   # or test: <exact test id>
          reason: JIT-compiled functions bypass dynamo's frame evaluation
          link: https://github.com/facebookincubator/cinderx/issues/...   # optional
          thresholds: [1, 1000]              # optional: only at these JIT thresholds
          message: "FallbackToEager: *"      # optional: only when the candidate's message holds this

The shipped file is `harness/configure/data/known_regressions.yaml`; `--known-regressions FILE`
or HARNESS_KNOWN_REGRESSIONS names a user file whose configurations replace the shipped ones'.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from harness.compare import identity
from harness.compare.diff import Comparison, Known, KnownFixed, Regression
from harness.configure.configurations import SHIPPED as SHIPPED_CONFIGURATIONS
from harness.configure.yamlfile import Section, load_section
from harness.protocol import Outcome, Setting
from harness.record.model import TestResult

SHIPPED = SHIPPED_CONFIGURATIONS.with_name("known_regressions.yaml")
_ENTRY_KEYS = {"test", "pattern", "reason", "link", "thresholds", "message"}


@dataclass(frozen=True)
class Entry:
    """One known regression: an exact test id or a pattern (`*` matches any run of characters), and
    optionally the failure it is known by: a text (with `*`) the candidate's message holds. An entry
    with a message names a failure, not tests (its pattern may span thousands, most of which never
    fail): a regression with another message is new, and no test of it is ever "known, now fixed"."""

    known: Known
    matcher: re.Pattern[str]
    thresholds: tuple[int, ...] = ()  # empty: at every threshold
    message: re.Pattern[str] | None = None
    exact: bool = False  # a test id, not a pattern

    def matches(self, test: str) -> bool:
        return self.matcher.fullmatch(test) is not None

    def names(self, regression: Regression) -> bool:
        return self.matches(regression.test) and (self.message is None or self.message.search(regression.detail) is not None)

    def applies_at(self, threshold: int | None) -> bool:
        return not self.thresholds or threshold in self.thresholds


@dataclass(frozen=True)
class KnownRegressions:
    by_configuration: dict[str, tuple[Entry, ...]]
    sources: tuple[Path, ...]

    def entries(self, configuration: str, threshold: int | None) -> tuple[Entry, ...]:
        return tuple(e for e in self.by_configuration.get(configuration, ()) if e.applies_at(threshold))


def load(user_file: Path | None = None, configurations: Iterable[str] | None = None) -> KnownRegressions:
    """The shipped file, extended by `user_file` (or HARNESS_KNOWN_REGRESSIONS). With
    `configurations`, a configuration name outside it is an error naming file and line."""
    extra = user_file or (Path(os.environ[Setting.KNOWN_REGRESSIONS]) if os.environ.get(Setting.KNOWN_REGRESSIONS) else None)
    known = set(configurations) if configurations is not None else None
    by_configuration: dict[str, tuple[Entry, ...]] = {}
    sources = (SHIPPED,) + ((extra,) if extra else ())
    for path in sources:
        by_configuration.update(_read(path, known))
    return KnownRegressions(by_configuration, sources)


def _read(path: Path, configurations: set[str] | None) -> dict[str, tuple[Entry, ...]]:
    top = load_section(path, "known-regressions file")
    top.check_keys({"known_regressions"})
    if not top.has("known_regressions") or isinstance(top.node_of("known_regressions"), yaml.ScalarNode):
        return {}
    section = top.child("known_regressions")
    found = {}
    for key, node in section.node.value:
        name = key.value
        if configurations is not None and name not in configurations:
            section.fail(key, f"known regressions of '{name}': no such configuration "
                               f"(known: {', '.join(sorted(configurations))})")
        if not isinstance(node, yaml.SequenceNode):
            section.fail(node, f"known regressions of '{name}': expected a list of entries")
        found[name] = tuple(_entry(section.section_of(item, f"known regression of '{name}'")) for item in node.value)
    return found


def _entry(section: Section) -> Entry:
    section.check_keys(_ENTRY_KEYS)
    test, pattern = section.scalar("test", str, ""), section.scalar("pattern", str, "")
    if bool(test) == bool(pattern):
        section.fail(section.node, f"{section.context}: give exactly one of 'test' (a test id) or 'pattern'")
    reason = section.scalar("reason", str, "").strip()
    if not reason:
        section.fail(section.node, f"{section.context}: missing key 'reason' (why it is known)")
    message = section.scalar("message", str, "")
    known = Known(reason=reason, link=section.scalar("link", str, ""), pattern=test or pattern,
                  entry=f"{section.path}:{section.node.start_mark.line + 1}")
    return Entry(known, re.compile(re.escape(test)) if test else _wildcards(pattern), section.integers("thresholds"),
                 _wildcards(message) if message else None, exact=bool(test))


def _wildcards(pattern: str) -> re.Pattern[str]:
    """A pattern whose `*` matches any run of characters, everything else itself."""
    return re.compile(".*".join(map(re.escape, pattern.split("*"))), re.DOTALL)


def classify(comparison: Comparison, known: KnownRegressions, candidate: Iterable[TestResult],
             partial: bool = False) -> Comparison:
    """Move the regressions the file names to `known`; report named tests that now pass. A pattern
    none of whose tests regressed in a `partial` candidate (a shard, a selection) is not fixed: the
    tests it names that fail may be in the part that did not run."""
    entries = known.entries(comparison.configuration, comparison.threshold)
    consulted = ", ".join(map(str, known.sources))
    if not entries:
        return replace(comparison, known_source=consulted)
    new: list[Regression] = []
    named: list[Regression] = []
    for regression in comparison.regressions:
        entry = next((e for e in entries if e.names(regression)), None)
        if entry is None:
            new.append(regression)
        else:
            named.append(replace(regression, known=entry.known))
    results = identity.index(candidate)
    fixed = [KnownFixed(test, results[test].module, entry.known)
             for entry in entries if entry.message is None and not (partial and not entry.exact)
             and not any(entry.matches(r.test) for r in comparison.regressions)
             for test in results if results[test].outcome == Outcome.PASSED and entry.matches(test)]
    per_module_new, per_module_known = Counter(r.module for r in new), Counter(r.module for r in named)
    return replace(comparison, regressions=tuple(new), known=tuple(named), known_fixed=tuple(fixed),
                   known_source=consulted,
                   modules=tuple(replace(row, regressions=per_module_new[row.module], known=per_module_known[row.module])
                                 for row in comparison.modules))
