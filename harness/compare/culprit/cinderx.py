"""CinderX's own words for what a culprit search sets and reads back: one place for all of them.

Settings are environment variables CinderX reads when it is imported (`python -X cinderx-jit-help
-c "import cinderx"` lists them); it ignores names it does not know, so nothing set here is trusted
until its debug log shows it took effect:
- a JIT list file restricts compilation to the functions it names, a line each: `module:qualname`
  (the function's `__module__` and `__qualname__`), or `qualname@file:line` (its code's
  `co_qualname`, the last part of `co_filename` after a `/`, and `co_firstlineno`; the line counts
  only with `CINDERX_JIT_LIST_MATCH_LINE_NUMBERS=1`, and the file ends at the line's last `:`).
  A function without a module name (code torch.compile generated: an fx GraphModule's `forward`,
  AOTAutograd's runtime wrapper, Inductor's ops handlers) is logged as `<invalid>:qualname`, which
  no `module:qualname` line matches: only its code names it (measured on CinderX 2026.11.2.0);
- the debug log, written to a file, says `Compiling module:qualname` when a compile starts,
  `Finished compiling module:qualname` when it ends (`Background compile failed: N for
  module:qualname` when CinderX gave up on it), and `Inlining function CALLEE into CALLER`;
- each optional HIR pass has a switch; with the pass dump on, the log names every pass that ran
  (`HIR for FUNCTION after pass NAME:`), so a pass switched off is seen not to run;
- the inliner's own log (`CINDERX_JIT_DEBUG_INLINER`, without the debug log) names only the
  function it inlines into, line by line (`Inlining function X into F`, `Can't inline X into F
  ...`, `Pruning cold call to X from F: ...`). A search of a crash in the compile thread that does
  not happen every time runs with it: on CinderX 2026.11.2.0 the full debug log made the stress
  tier's crash rarer (2 of 114 reruns with it; 10 of 185 without it or with the inliner's log alone).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.protocol import Env
from harness.record.coverage import read_process_file
from harness.record.writing import write_atomically
from harness.run.jit import JIT_LIST_FILE, LOG_FILE  # processes a test starts log beside it (LOG.<pid>), see own_log

DEBUG = "CINDERX_JIT_DEBUG"
INLINER_DEBUG = "CINDERX_JIT_DEBUG_INLINER"
DUMP_HIR_PASSES = "CINDERX_JIT_DUMP_HIR_PASSES"
MATCH_LINE_NUMBERS = "CINDERX_JIT_LIST_MATCH_LINE_NUMBERS"  # a `qualname@file:line` line matches that line only
UNNAMED = "<invalid>:"  # how the debug log names a function without a module name
COMPILE_THREAD = "bg_cx_compile"  # the name CinderX gives its background compile thread

# The optional HIR passes, as the pass dump names them, and the switch that turns each off ("0").
# Measured on CinderX 2026.11.2.0: with each switch at 0 exactly its pass is missing from the dump.
PASSES: dict[str, str] = {
    "BeginInlinedFunctionElimination": "CINDERX_JIT_BEGIN_INLINED_FUNCTION_ELIM",
    "CleanCFG": "CINDERX_JIT_CLEAN_CFG",
    "CommonSubexpressionElimination": "CINDERX_JIT_COMMON_SUBEXPRESSION_ELIM",
    "DeadCodeElimination": "CINDERX_JIT_DEAD_CODE_ELIM",
    "DynamicComparisonElimination": "CINDERX_JIT_DYNAMIC_COMPARISON_ELIM",
    "GuardTypeRemoval": "CINDERX_JIT_GUARD_TYPE_REMOVAL",
    "InlineFunctionCalls": "CINDERX_JIT_ENABLE_HIR_INLINER",
    "LoadMethodElimination": "CINDERX_JIT_BUILTIN_LOAD_METHOD_ELIM",
    "PhiElimination": "CINDERX_JIT_PHI_ELIM",
    "Simplify": "CINDERX_JIT_SIMPLIFY",
    "SinkPrimitiveBox": "CINDERX_JIT_SINK_PRIMITIVE_BOX",
}

Place = tuple[str, int]  # a code's file and first line

_COMPILING = re.compile(r" -- Compiling (\S+)$")
_FINISHED = re.compile(r" -- (?:Finished compiling|Background compile failed: \S+ for) (\S+)")
_INLINING = re.compile(r" -- Inlining function (\S+) into (\S+)$")
_AFTER_PASS = re.compile(r" -- HIR for (\S+) after pass (\w+):")
_INLINING_INTO = re.compile(r" -- (?:(?:Inlining function|Can't inline|Refusing to inline functions|Tried to inline)"
                            r"\b.*? into|Pruning cold call to \S+ from) ([^\s,]+?)[:,]?(?: |$)")
_DIED_IN_COMPILE_THREAD = re.compile(rf"^Current thread 0x[0-9a-f]+ \[{COMPILE_THREAD}\]", re.MULTILINE)


def settings(log: Path, jit_list: Path | None = None, without_pass: str | None = None,
             inliner_only: bool = False) -> dict[str, str]:
    """The environment of one probe: the debug log (or only the inliner's) into `log`, the
    functions without a module name by code beside it (`compiled_folder`, created here), the JIT
    list (None: no list, every function may compile), and one HIR pass switched off (its dump on,
    to see it did not run)."""
    compiled_folder(log).mkdir(exist_ok=True)
    found = {INLINER_DEBUG if inliner_only else DEBUG: "1", LOG_FILE: str(log), Env.COMPILED: str(compiled_folder(log))}
    if jit_list is not None:
        found[JIT_LIST_FILE] = str(jit_list)
        found[MATCH_LINE_NUMBERS] = "1"
    if without_pass is not None:
        found[PASSES[without_pass]] = "0"
        found[DUMP_HIR_PASSES] = "1"
    return found


def write_jit_list(path: Path, functions: Iterable[str]) -> None:
    write_atomically(path, "".join(f"{name}\n" for name in functions))


def compiled_folder(log: Path) -> Path:
    """Where a rerun's processes write what they compiled (harness/run/compiled.py), beside its log."""
    return log.with_name(f"{log.name}.compiled")


def read_unnamed(folder: Path) -> set[tuple[str, str, int]]:
    """The functions without a module name that the processes writing into `folder` compiled, by
    code (qualified name, file, first line), read as coverage reads those files: one cut short by
    a killed process, or an entry of the wrong shape, is left out."""
    found: set[tuple[str, str, int]] = set()
    for path in sorted(folder.glob("*.json")):
        content = read_process_file(path) or {}
        entries = content.get("unnamed")
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, list) and len(entry) == 3 and type(entry[2]) is int:
                found.add((str(entry[0]), str(entry[1]), entry[2]))
    return found


def by_code(qualname: str, file: str, line: int) -> str:
    """The JIT list line that names a function by its code (`forward@<eval_with_key>.3:4`)."""
    return f"{qualname}@{file.rsplit('/', 1)[-1]}:{line}"


def named_by_code(entry: str) -> bool:
    """Whether a JIT list line names a function by its code (`qualname@file:line`), not by module."""
    return "@" in entry.partition(":")[0]


def listable(name: str) -> bool:
    """Whether a JIT list line `module:qualname` can name this logged function (it has a module name)."""
    return not name.startswith(UNNAMED)


@dataclass(frozen=True)
class Log:
    """What one process's debug log says CinderX did."""

    written: bool  # False: CinderX never read the settings (never imported, or ignored them)
    compiled: tuple[str, ...]  # compiles started, in order (a name once); none in the inliner's log alone
    unfinished: tuple[str, ...]  # compiles started and never finished: in flight when the process died
    inlined: tuple[tuple[str, str], ...]  # (callee, caller)
    passes: dict[str, frozenset[str]]  # function -> HIR passes that ran on it (with the pass dump on)
    inlining: tuple[str, ...] = ()  # the functions the inliner worked on, in order (a name once)
    last_inlining: str | None = None  # the function named by the inliner's last line
    by_code: dict[str, Place] = field(default_factory=dict)  # `qualname@file:line` -> its code's (full file, line):
    # the compiled functions without a module name (logged as `<invalid>:qualname`)

    @property
    def compiling(self) -> tuple[str, ...]:
        """What CinderX was compiling when the log ends: the compiles it never finished, or (the
        inliner's log alone) the function its inliner was working on last."""
        if self.compiled:
            return self.unfinished
        return (self.last_inlining,) if self.last_inlining else ()

    def inlined_into(self, caller: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(callee for callee, into in self.inlined if into == caller))

    @property
    def names(self) -> tuple[str, ...]:
        """Every function the JIT compiled or inlined, as a JIT list names it: the candidates for a
        culprit. One without a module name is named by its code; inlined into another, it has none."""
        logged = [*self.compiled, *(callee for callee, _ in self.inlined)]
        return tuple(dict.fromkeys([*filter(listable, logged), *self.by_code]))

    def outside(self, jit_list: Sequence[str]) -> tuple[str, ...]:
        """Functions compiled although the JIT list does not name them (the list did not apply)."""
        allowed = set(jit_list)
        logged = filter(listable, (*self.compiled, *self.inlining))
        return tuple(name for name in (*logged, *self.by_code) if name not in allowed)


def logs(path: Path) -> list[Path]:
    """The log of a rerun's test process, and those of the processes it started (`path.<pid>`)."""
    started = (found for found in path.parent.glob(f"{path.name}.*") if found.name[len(path.name) + 1:].isdigit())
    return [path, *sorted(started)] if path.is_file() else []


def read_log(path: Path) -> Log:
    """What CinderX logged in a rerun's test process and in the processes it started, with the
    code of the functions without a module name they compiled (written beside it)."""
    files = logs(path)
    if not files:
        return Log(False, (), (), (), {})
    unnamed = read_unnamed(compiled_folder(path))
    compiled: dict[str, None] = {}
    finished: set[str] = set()
    inlined: dict[tuple[str, str], None] = {}
    passes: dict[str, set[str]] = {}
    inlining: dict[str, None] = {}
    last_inlining = None  # in the test process's own log: a crash there is what the search explains
    lines = ((file == path, line) for file in files
             for line in file.read_text(encoding="utf-8", errors="replace").splitlines())
    for own, line in lines:
        if match := _COMPILING.search(line):
            compiled.setdefault(match[1])
        elif match := _FINISHED.search(line):
            finished.add(match[1])
        elif match := _INLINING.search(line):
            inlined.setdefault((match[1], match[2]))
        elif match := _AFTER_PASS.search(line):
            passes.setdefault(match[1], set()).add(match[2])
        if match := _INLINING_INTO.search(line):
            inlining.setdefault(match[1])
            last_inlining = match[1] if own else last_inlining
    return Log(True, tuple(compiled), tuple(name for name in compiled if name not in finished), tuple(inlined),
               {name: frozenset(ran) for name, ran in passes.items()}, tuple(inlining), last_inlining,
               {by_code(*key): key[1:] for key in sorted(unnamed)})


def died_compiling(text: str) -> bool:
    """True when faulthandler's dump says the process died in CinderX's background compile thread
    (`Current thread 0x00007fad50fff6c0 [bg_cx_compile] (most recent call first):`)."""
    return _DIED_IN_COMPILE_THREAD.search(text) is not None
