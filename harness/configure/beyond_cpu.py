"""torch's code that a CPU-only machine cannot run, and what it needs (data/beyond_cpu.yaml): whole
modules, or the functions of a module that serve one device only (a `module:qualname` pattern). JIT
coverage counts their functions apart, so a share of "the rest" says how much of what this machine
can run a verdict covers, and the closing of a coverage target can name why the remainder is out of
reach instead of asserting it."""

from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.errors import HarnessError

SHIPPED = Path(__file__).parent / "data" / "beyond_cpu.yaml"


@dataclass(frozen=True)
class Pattern:
    """One entry of `modules:`: full module names (fnmatch), and, after a colon, the qualified names
    of the functions it names in them (None: all of them)."""

    module: str
    qualname: str | None = None

    @classmethod
    def parse(cls, text: object) -> Pattern | None:
        """`torch.cuda.*` or `torch._dynamo.device_interface:CudaInterface.*`; None when malformed."""
        if not isinstance(text, str):
            return None
        module, colon, qualname = text.partition(":")
        if not module or (colon and (not qualname or ":" in qualname)):
            return None
        return cls(module, qualname if colon else None)

    def names(self, module: str) -> bool:
        """Whether this pattern names `module`, all its functions or some."""
        return fnmatch.fnmatchcase(module, self.module)

    def matches(self, module: str, qualname: str | None) -> bool:
        """Whether it names a function of `module` called `qualname` (None: any, so only a
        whole-module pattern matches)."""
        return self.names(module) and (self.qualname is None or (
            qualname is not None and fnmatch.fnmatchcase(qualname, self.qualname)))


@dataclass(frozen=True)
class Need:
    """What some modules or functions need that the machine lacks (in a word, and why), and the
    patterns naming them."""

    needs: str
    why: str
    patterns: tuple[Pattern, ...]


@dataclass(frozen=True)
class BeyondCpu:
    """The shipped rules, first match wins."""

    rules: tuple[Need, ...]

    def needs(self, module: str, qualname: str | None = None) -> str | None:
        """What the function `qualname` of `module` needs that a CPU-only machine lacks; None when it
        can run here. Without a qualname, what the module as a whole needs (whole-module patterns
        only)."""
        return next((rule.needs for rule in self.rules
                     if any(pattern.matches(module, qualname) for pattern in rule.patterns)), None)

    def splits(self, module: str) -> bool:
        """Whether a rule names some functions of `module`: its functions are then judged one by one."""
        return any(pattern.qualname is not None and pattern.names(module)
                   for rule in self.rules for pattern in rule.patterns)


@functools.cache
def load(path: Path = SHIPPED) -> BeyondCpu:
    """The rules of `path`; a malformed file is one error naming it and the entry."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise HarnessError(f"{path}: expected a list of entries (needs, why, modules)")
    rules = []
    for number, entry in enumerate(entries, 1):
        needs, why, modules = (entry.get(key) if isinstance(entry, dict) else None for key in ("needs", "why", "modules"))
        parsed = [Pattern.parse(text) for text in modules] if isinstance(modules, list) else []
        patterns = tuple(pattern for pattern in parsed if pattern is not None)
        if not (isinstance(needs, str) and needs and isinstance(why, str) and why and patterns
                and len(patterns) == len(parsed)):
            raise HarnessError(f"{path}: entry {number} needs `needs:` and `why:` (text) and `modules:` (a list of "
                               f"patterns: MODULE or MODULE:QUALNAME)")
        rules.append(Need(needs, why, patterns))
    return BeyondCpu(tuple(rules))
