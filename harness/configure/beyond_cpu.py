"""torch's modules that a CPU-only machine cannot run, and what each needs (data/beyond_cpu.yaml):
JIT coverage counts their functions apart, so a share of "the rest" says how much of what this
machine can run a verdict covers, and the closing of a coverage target can name why the remainder
is out of reach instead of asserting it."""

from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.errors import HarnessError

SHIPPED = Path(__file__).parent / "data" / "beyond_cpu.yaml"


@dataclass(frozen=True)
class Need:
    """What some modules need that the machine lacks (in a word, and why), and the patterns
    (fnmatch) naming them."""

    needs: str
    why: str
    modules: tuple[str, ...]


@dataclass(frozen=True)
class BeyondCpu:
    """The shipped rules, first match wins."""

    rules: tuple[Need, ...]

    def needs(self, module: str) -> str | None:
        """What `module` needs that a CPU-only machine lacks; None when it can run here."""
        return next((rule.needs for rule in self.rules
                     if any(fnmatch.fnmatchcase(module, pattern) for pattern in rule.modules)), None)


@functools.cache
def load(path: Path = SHIPPED) -> BeyondCpu:
    """The rules of `path`; a malformed file is one error naming it and the entry."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise HarnessError(f"{path}: expected a list of entries (needs, why, modules)")
    rules = []
    for number, entry in enumerate(entries, 1):
        needs, why, modules = (entry.get(key) if isinstance(entry, dict) else None for key in ("needs", "why", "modules"))
        if not (isinstance(needs, str) and needs and isinstance(why, str) and why and isinstance(modules, list)
                and modules and all(isinstance(pattern, str) and pattern for pattern in modules)):
            raise HarnessError(f"{path}: entry {number} needs `needs:` and `why:` (text) and `modules:` (a list of "
                               f"patterns)")
        rules.append(Need(needs, why, tuple(modules)))
    return BeyondCpu(tuple(rules))
