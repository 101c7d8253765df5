"""What the JIT compiled in this process, written once at its end: the numerator of JIT coverage.

Every process of a JIT file writes one file, `<pid>.json`, into the folder HARNESS_COMPILED names:
the test process (or each warm worker) when its session finishes, and each process a test started
when it exits (harness/run/descendant.py). A function is keyed by its code: the file it was
defined in, its first line and its qualified name (`co_filename`, `co_firstlineno`, `co_qualname`),
so it matches the definition the census counted in that file (harness/run/census.py), whatever
name it was imported or wrapped under. Code that comes from no file (`exec`, dataclass- and
namedtuple-made methods: a filename in angle brackets) is kept under its function's `__module__`
and `__qualname__`: the names it was given, where its code's own are the maker's.

A function CinderX's JIT list cannot select by the name its log gives it is also listed by its
code under "by_code", with that logged name: one without a module name (`__module__` None: code
torch.compile generated, such as an fx GraphModule's `forward`; logged as `<invalid>:qualname`),
and one renamed since it was made (`functools.wraps` wrappers, dataclass and namedtuple methods: a
`module:qualname` line matches the names it was made with, the log shows the new ones). A culprit
search names those by code (harness/compare/culprit/cinderx.py).

    {"pid": 123, "torch": "/.../site-packages/torch", "files": {"/.../torch/nn/modules/linear.py": [[124, "Linear.forward"], ...]},
     "generated": {"torch._native.registry": ["_OverrideNode.__init__", ...]},
     "by_code": [["<invalid>:forward", "forward", "<eval_with_key>.3", 4], ...]}

Nothing is written per test: CinderX is asked once, after its background compiles finished.
Standard library only: this runs in every configuration's interpreter.
"""

from __future__ import annotations

import json
import os
import sys
from types import CodeType
from typing import Any

from harness.protocol import Env
from harness.run import jit


Grouped = tuple[dict[str, list[list[object]]], dict[str, list[str]], list[list[object]]]
ByCode = tuple[str, str, str, int]  # (the name CinderX logs, the code's qualname, file, first line)


def grouped() -> Grouped:
    """The compiled functions by source file ([first line, qualified name], sorted), those without
    a source file by module, and those a JIT list names by code ([logged name, qualname, file, first line])."""
    files: dict[str, set[tuple[int, str]]] = {}
    generated: dict[str, set[str]] = {}
    by_code: set[ByCode] = set()
    for function in jit.compiled_functions():
        code = getattr(function, "__code__", None)
        if code is None:
            continue
        if (logged := _renamed(function, code)) is not None:
            by_code.add((logged, code.co_qualname, code.co_filename, code.co_firstlineno))
        if code.co_filename.startswith("<"):
            name = getattr(function, "__qualname__", code.co_qualname)  # `Point.__init__`, not `__create_fn__...`
            generated.setdefault(str(getattr(function, "__module__", None)), set()).add(name)
        else:
            files.setdefault(code.co_filename, set()).add((code.co_firstlineno, code.co_qualname))
    return ({path: [list(key) for key in sorted(keys)] for path, keys in files.items()},
            {module: sorted(names) for module, names in generated.items()}, [list(key) for key in sorted(by_code)])


def _renamed(function: Any, code: CodeType) -> str | None:
    """The name CinderX logs for `function` (`<invalid>:qualname` without a module name) when it
    differs from the one it was made with (its globals' module, its code's qualname), else None."""
    module, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", code.co_qualname)
    made = getattr(function, "__globals__", {}).get("__name__")
    if isinstance(module, str) and module == made and qualname == code.co_qualname:
        return None
    return f"{module if isinstance(module, str) else '<invalid>'}:{qualname}"


def _torch_folder() -> str | None:
    """The folder of the torch this process imported: which compiled files are torch's."""
    module = sys.modules.get("torch")
    path = getattr(module, "__file__", None)
    return os.path.dirname(path) if path else None


def write() -> None:
    """This process's compiled functions into the folder HARNESS_COMPILED names (none: nothing)."""
    folder = os.environ.get(Env.COMPILED)
    if not folder:
        return
    files, generated, by_code = grouped()
    if not files and not generated:
        return
    path = os.path.join(folder, f"{os.getpid()}.json")
    try:
        with open(path + ".partial", "w", encoding="utf-8") as handle:
            json.dump({"pid": os.getpid(), "torch": _torch_folder(), "files": files, "generated": generated,
                       "by_code": by_code}, handle, separators=(",", ":"))
        os.replace(path + ".partial", path)
    except OSError:
        pass  # a vanished run directory: this process's coverage is lost, its results are not


def read_by_code(folder: str) -> set[ByCode]:
    """The functions a JIT list names by code that the processes writing into `folder` compiled
    (none when nothing was written)."""
    found: set[ByCode] = set()
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if name.endswith(".json"):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                found.update((str(logged), str(q), str(f), int(line))
                             for logged, q, f, line in json.load(handle).get("by_code", ()))
    return found
