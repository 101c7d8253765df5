"""JIT coverage of torch: per torch subpackage, the functions torch defines and those the JIT
compiled at least once; attributed from a run's compiled-function files, stored as `coverage.json`
in the run directory, and merged over runs (the shards of a tier, the tiers of a configuration).

A compiled function counts when its key, `module:qualname:line` (defining module, qualified name,
first line of its code), is one of the definitions the census counted in the installed torch
(harness/run/census.py); the rest is kept apart, never guessed into a subpackage:
- `unattributed`: torch's code that is no definition of its sources: code made at run time in a
  torch module (dataclass methods, AOTAutograd's generated wrappers, whose file names are
  `.../codegen.py:codegen(...)`), or code of a torch file the census did not find;
- `other`: code outside torch (the tests, pytest, the standard library, generated kernels).
docs/coverage.md gives the counting rule and the measured baseline.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

from harness.errors import HarnessError, did_you_mean
from harness.record import typed
from harness.record.store import RunDirectory, read_json_record, write_json_atomically

TOP_LEVEL = "(top-level modules)"  # how a report names torch's own modules (torch/functional.py, ...)


class Beyond(Protocol):
    """What a CPU-only machine cannot run (configure/beyond_cpu.py's rules; records know no rules)."""

    def needs(self, module: str, qualname: str | None = None) -> str | None:
        """What a function of `module` needs (None: nothing); without a qualname, the module as a whole."""

    def splits(self, module: str) -> bool:
        """Whether the answer depends on the function, so `module`'s functions are judged one by one."""


@dataclass(frozen=True)
class RunsAnywhere:
    """No function needs anything: every function counts as one a CPU-only machine can run."""

    def needs(self, module: str, qualname: str | None = None) -> None:
        return None

    def splits(self, module: str) -> bool:
        return False


RUNS_ANYWHERE = RunsAnywhere()


def function_key(module: str, qualname: str, line: int) -> str:
    """How a function is named in coverage: its JIT-list name (`module:qualname`) and its first line."""
    return f"{module}:{qualname}:{line}"


def qualname_of(key: str) -> str:
    """The qualified name in a function key (`module:qualname:line`)."""
    return key.split(":", 2)[1]


@dataclass(frozen=True)
class Definitions:
    """What the census found in one installed torch: per module, its subpackage and definitions."""

    modules: Mapping[str, str]  # file, relative to the torch folder -> module
    subpackages: Mapping[str, str]  # module -> subpackage ("" for torch's top-level modules)
    keys: Mapping[str, frozenset[tuple[int, str]]]  # module -> {(first line, qualname)}

    @classmethod
    def from_census(cls, data: Mapping[str, object]) -> Definitions:
        modules = data["modules"]
        if not isinstance(modules, dict):
            raise TypeError(f"modules: expected an object, not {type(modules).__name__}")
        return cls(modules={entry["file"]: name for name, entry in modules.items()},
                   subpackages={name: entry["subpackage"] for name, entry in modules.items()},
                   keys={name: frozenset((line, qualname) for line, qualname in entry["definitions"])
                         for name, entry in modules.items()})

    def module(self, path: str, root: str | None) -> str | None:
        """The torch module a source file is (`torch._dynamo.eval_frame`); None for a file outside
        torch (`root`: the real path of the torch folder the process imported, ending in a
        separator), "" for a file inside torch that the census did not count."""
        if root is None:
            return None
        real = os.path.realpath(path)
        return self.modules.get(real[len(root):].replace(os.sep, "/"), "") if real.startswith(root) else None

    def qualnames(self, module: str) -> tuple[str, ...]:
        """The qualified names of a module's definitions (one per definition: a property's getter and
        setter share theirs)."""
        return tuple(qualname for _, qualname in self.keys.get(module, ()))

    def defined(self) -> dict[str, int]:
        return {sub: sum(modules.values()) for sub, modules in self.per_module().items()}

    def per_module(self) -> dict[str, dict[str, int]]:
        """Per subpackage, its modules that define functions and how many each defines."""
        counts: dict[str, dict[str, int]] = {}
        for module, keys in sorted(self.keys.items()):
            modules = counts.setdefault(self.subpackages[module], {})  # a subpackage of imports only: kept, empty
            if keys:
                modules[module] = len(keys)
        return dict(sorted(counts.items()))


@dataclass(frozen=True)
class Row:
    """One part of torch (a subpackage, or a module of one): functions defined, compiled at least once."""

    part: str
    defined: int
    compiled: int
    beyond: int = 0  # of `defined`, those a CPU-only machine cannot run
    beyond_compiled: int = 0  # of `compiled`, those of them
    needs: str | None = None  # a module's row: what they need that such a machine lacks

    @property
    def share(self) -> float | None:
        """Compiled of defined; None for a subpackage that defines no function (an `__init__.py` of imports)."""
        return self.compiled / self.defined if self.defined else None

    @property
    def rest_share(self) -> float | None:
        """Compiled of what a CPU-only machine can run; None when it can run none of it."""
        rest = self.defined - self.beyond
        return (self.compiled - self.beyond_compiled) / rest if rest else None

    @property
    def name(self) -> str:
        return self.part or TOP_LEVEL


@dataclass(frozen=True)
class Coverage:
    """JIT coverage of torch over one run or several merged (`runs` names them)."""

    torch: str | None
    defined: dict[str, int]  # subpackage -> definitions in the installed torch
    compiled: dict[str, tuple[str, ...]]  # subpackage -> function keys of its definitions the JIT compiled
    unattributed: tuple[str, ...] = ()  # torch code that is no definition (`module:qualname`)
    other: tuple[str, ...] = ()  # compiled code outside torch (`file:qualname:line`)
    processes: int = 0  # process files the numbers were read from
    runs: tuple[str, ...] = ()
    # subpackage -> module -> definitions (empty in coverage recorded before per-module counts)
    modules: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def rows(self) -> tuple[Row, ...]:
        """Every subpackage, the biggest first."""
        return self.rows_beyond(RUNS_ANYWHERE)

    def rows_beyond(self, beyond: Beyond, census: Definitions | None = None) -> tuple[Row, ...]:
        """Every subpackage, the biggest first, with its functions that `beyond` says a CPU-only
        machine cannot run, summed over its modules (`_module_row`; none counted in coverage recorded
        before per-module counts)."""
        rows = []
        for sub, count in self.defined.items():
            modules = self._module_rows(sub, beyond, census)
            rows.append(Row(sub, count, len(self.compiled.get(sub, ())), sum(row.beyond for row in modules),
                            sum(row.beyond_compiled for row in modules)))
        return tuple(sorted(rows, key=lambda row: (-row.defined, row.part)))

    def module_rows(self, subpackage: str, beyond: Beyond = RUNS_ANYWHERE,
                    census: Definitions | None = None) -> tuple[Row, ...]:
        """The modules of one subpackage (`_dynamo`, or TOP_LEVEL), the most functions left uncompiled
        first: where a verdict's reach ends inside it; each with how many of its functions a CPU-only
        machine cannot run, and what they need."""
        key = "" if subpackage == TOP_LEVEL else subpackage
        if key not in self.defined:
            hint = did_you_mean(subpackage, (row.name for row in self.rows))
            raise HarnessError(f"--subpackage {subpackage}: torch {self.torch} has no such subpackage{hint}")
        if not self.modules:
            raise HarnessError("this JIT coverage was recorded before per-module counts: run the tier again "
                               "to see its modules")
        rows = self._module_rows(key, beyond, census)
        return tuple(sorted(rows, key=lambda row: (row.compiled - row.defined, row.part)))

    def _module_rows(self, subpackage: str, beyond: Beyond, census: Definitions | None) -> list[Row]:
        """Every module of a subpackage with its row (`_module_row`)."""
        compiled: dict[str, list[str]] = {}
        for function in self.compiled.get(subpackage, ()):
            compiled.setdefault(function.split(":", 1)[0], []).append(qualname_of(function))
        return [_module_row(module, defined, compiled.get(module, []), beyond, census)
                for module, defined in self.modules.get(subpackage, {}).items()]

    @property
    def total(self) -> Row:
        return total_of(self.rows)

    @property
    def exercised(self) -> tuple[str, ...]:
        """The subpackages where the JIT compiled at least one function."""
        return tuple(row.name for row in self.rows if row.compiled)

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Coverage:
        return typed.from_json(cls, data)


def _module_row(module: str, defined: int, compiled: Sequence[str], beyond: Beyond,
                census: Definitions | None) -> Row:
    """One module's row, `compiled` naming its functions the JIT compiled. The functions of a module
    that a rule splits are judged one by one, by the names the census gives its definitions (a
    record keeps only their count); without a census that counted the same, by the module as a whole."""
    names = census.qualnames(module) if census is not None and beyond.splits(module) else None
    if names is None or len(names) != defined:  # judged as a whole
        need = beyond.needs(module)
        return Row(module, defined, len(compiled), defined if need else 0, len(compiled) if need else 0, need)
    needs = Counter(need for need in (beyond.needs(module, name) for name in names) if need)
    beyond_compiled = sum(1 for name in compiled if beyond.needs(module, name))
    return Row(module, defined, len(compiled), needs.total(), beyond_compiled, ", ".join(sorted(needs)) or None)


def total_of(rows: Iterable[Row]) -> Row:
    """All of torch: the sums of its subpackages' rows."""
    rows = tuple(rows)
    return Row("torch", sum(row.defined for row in rows), sum(row.compiled for row in rows),
               sum(row.beyond for row in rows), sum(row.beyond_compiled for row in rows))


def attribute(definitions: Definitions, process_files: Iterable[Mapping[str, object]], torch: str | None,
              run: str = "") -> Coverage:
    """The coverage of the compiled-function files of one run's processes (harness/run/compiled.py):
    each function once, however many processes compiled it."""
    compiled: dict[str, set[str]] = {}
    unattributed: set[str] = set()
    other: set[str] = set()
    processes = 0
    for content in process_files:
        processes += 1
        folder = content.get("torch")
        root = os.path.realpath(folder) + os.sep if isinstance(folder, str) else None
        for path, functions in _mapping(content.get("files")).items():
            module = definitions.module(path, root)
            for line, qualname in _pairs(functions):
                if not module:
                    (other if module is None else unattributed).add(function_key(path, qualname, line))
                elif (line, qualname) in definitions.keys.get(module, ()):
                    compiled.setdefault(definitions.subpackages[module], set()).add(function_key(module, qualname, line))
                else:
                    unattributed.add(f"{module}:{qualname}")
        for module, names in _mapping(content.get("generated")).items():
            torch_code = module == "torch" or module.startswith("torch.")
            (unattributed if torch_code else other).update(f"{module}:{name}" for name in names if isinstance(name, str))
    return Coverage(torch, definitions.defined(), {sub: tuple(sorted(keys)) for sub, keys in sorted(compiled.items())},
                    tuple(sorted(unattributed)), tuple(sorted(other)), processes, (run,) if run else (),
                    definitions.per_module())


def _mapping(value: object) -> Mapping[str, list]:
    """A part of a process file (written by a test process: not trusted), or nothing."""
    return {key: item for key, item in value.items() if isinstance(item, list)} if isinstance(value, dict) else {}


def _pairs(functions: list) -> Iterable[tuple[int, str]]:
    """The well-formed [first line, qualname] entries of a process file's source file."""
    for entry in functions:
        if isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int and isinstance(entry[1], str):
            yield entry[0], entry[1]


def merge(coverages: Iterable[Coverage]) -> Coverage:
    """One coverage over several runs: each function once. Runs of different torch versions count
    different definitions, so they are refused."""
    items = list(coverages)
    if not items:
        raise HarnessError("no JIT coverage to merge")
    versions = sorted({str(c.torch) for c in items})
    if len(versions) > 1:
        raise HarnessError(f"JIT coverage of different torch versions cannot be merged: {', '.join(versions)}")
    compiled: dict[str, set[str]] = {}
    for item in items:
        for sub, keys in item.compiled.items():
            compiled.setdefault(sub, set()).update(keys)
    return Coverage(items[0].torch, items[0].defined,
                    {sub: tuple(sorted(keys)) for sub, keys in sorted(compiled.items())},
                    tuple(sorted({key for c in items for key in c.unattributed})),
                    tuple(sorted({key for c in items for key in c.other})),
                    sum(c.processes for c in items), tuple(run for c in items for run in c.runs),
                    next((c.modules for c in items if c.modules), {}))


def write(run: RunDirectory, coverage: Coverage) -> None:
    write_json_atomically(run.coverage, coverage.to_json())


def read(run_dir: Path) -> Coverage | None:
    """A run directory's coverage; None when it has none (no JIT, or a run made before coverage)."""
    path = RunDirectory(run_dir).coverage
    return read_json_record(path, Coverage.from_json, "JIT coverage") if path.is_file() else None


def read_process_file(path: Path) -> Mapping[str, object] | None:
    """One process's compiled functions; a file cut short (a process killed while writing) is left out."""
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return content if isinstance(content, dict) else None

