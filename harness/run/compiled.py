"""What the JIT compiled in this process, written once at its end: the numerator of JIT coverage.

Every process of a JIT file writes one file, `<pid>.json`, into the folder HARNESS_COMPILED names:
the test process (or each warm worker) when its session finishes, and each process a test started
when it exits (harness/run/descendant.py). A function is keyed by its code: the file it was
defined in, its first line and its qualified name (`co_filename`, `co_firstlineno`, `co_qualname`),
so it matches the definition the census counted in that file (harness/run/census.py), whatever
name it was imported or wrapped under. Code that comes from no file (`exec`, dataclass- and
namedtuple-made methods: a filename in angle brackets) is kept under its function's `__module__`
and `__qualname__`: the names it was given, where its code's own are the maker's.

A function without a module name (`__module__` None: code torch.compile generated, such as an fx
GraphModule's `forward` or AOTAutograd's runtime wrapper) is also listed by its code under
"unnamed": CinderX logs it as `<invalid>:qualname`, and a culprit search can name it to CinderX's
JIT list only by its code's qualified name, file and first line (harness/compare/culprit/cinderx.py).

    {"pid": 123, "torch": "/.../site-packages/torch", "files": {"/.../torch/nn/modules/linear.py": [[124, "Linear.forward"], ...]},
     "generated": {"torch._native.registry": ["_OverrideNode.__init__", ...]},
     "unnamed": [["forward", "<eval_with_key>.3", 4], ...]}

Nothing is written per test: CinderX is asked once, after its background compiles finished.
Standard library only: this runs in every configuration's interpreter.
"""

from __future__ import annotations

import json
import os
import sys

from harness.protocol import Env
from harness.run import jit


Grouped = tuple[dict[str, list[list[object]]], dict[str, list[str]], list[list[object]]]


def grouped() -> Grouped:
    """The compiled functions by source file ([first line, qualified name], sorted), those without
    a source file by module, and those without a module name by code ([qualname, file, first line])."""
    files: dict[str, set[tuple[int, str]]] = {}
    generated: dict[str, set[str]] = {}
    unnamed: set[tuple[str, str, int]] = set()
    for function in jit.compiled_functions():
        code = getattr(function, "__code__", None)
        if code is None:
            continue
        if not isinstance(getattr(function, "__module__", None), str):
            unnamed.add((code.co_qualname, code.co_filename, code.co_firstlineno))
        if code.co_filename.startswith("<"):
            name = getattr(function, "__qualname__", code.co_qualname)  # `Point.__init__`, not `__create_fn__...`
            generated.setdefault(str(getattr(function, "__module__", None)), set()).add(name)
        else:
            files.setdefault(code.co_filename, set()).add((code.co_firstlineno, code.co_qualname))
    return ({path: [list(key) for key in sorted(keys)] for path, keys in files.items()},
            {module: sorted(names) for module, names in generated.items()}, [list(key) for key in sorted(unnamed)])


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
    files, generated, unnamed = grouped()
    if not files and not generated:
        return
    path = os.path.join(folder, f"{os.getpid()}.json")
    try:
        with open(path + ".partial", "w", encoding="utf-8") as handle:
            json.dump({"pid": os.getpid(), "torch": _torch_folder(), "files": files, "generated": generated,
                       "unnamed": unnamed}, handle, separators=(",", ":"))
        os.replace(path + ".partial", path)
    except OSError:
        pass  # a vanished run directory: this process's coverage is lost, its results are not
