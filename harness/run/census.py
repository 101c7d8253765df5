"""The denominator of JIT coverage: every function the installed torch defines, counted by the
interpreter under test (`python -m harness.run.census OUT.json`), from torch's own code objects.

The counting rule (docs/coverage.md): in every `torch/**/*.py` of the installed torch, every code
object the compiler makes for a `def`, `async def` or `lambda`, nested ones included (methods,
closures, functions inside functions), keyed by (module, first line, qualified name) exactly as a
function's `__code__` carries them at run time, so a compiled function and its definition match.
Scopes the compiler makes on its own are not definitions: class bodies and modules (no
CO_NEWLOCALS), generator expressions, annotation functions (`__annotate__`, Python 3.14) and
type-parameter scopes. A file's code objects come from its `__pycache__` file when that is current
(what the interpreter would load), else from compiling its source: the same code either way.

Standard library only: it runs in each configuration's interpreter, where torch is installed.
"""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import sys
from collections.abc import Iterator
from types import CodeType

CO_NEWLOCALS = 0x2  # set on the code of functions and lambdas; not on class bodies or modules
IMPLICIT_SCOPES = ("<genexpr>", "<listcomp>", "<setcomp>", "<dictcomp>",  # comprehensions (inlined since 3.12)
                   "__annotate__", "<generic parameters of ")  # annotations (3.14), type parameters: the compiler's
PACKAGE = "torch"


def module_name(relpath: str) -> str:
    """`_dynamo/eval_frame.py` -> `torch._dynamo.eval_frame`; `fx/__init__.py` -> `torch.fx`."""
    parts = relpath.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def subpackage(relpath: str) -> str:
    """The part of torch a file belongs to: its first folder (`_dynamo`, `fx`), or "" for torch's
    own top-level modules (`torch/functional.py`)."""
    head, _, rest = relpath.partition("/")
    return head if rest else ""


def is_definition(code: CodeType) -> bool:
    return bool(code.co_flags & CO_NEWLOCALS) and not code.co_name.startswith(IMPLICIT_SCOPES)


def definitions(code: CodeType) -> Iterator[tuple[int, str]]:
    """(first line, qualified name) of every definition inside a module's code, nested ones included."""
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            if is_definition(constant):
                yield constant.co_firstlineno, constant.co_qualname
            yield from definitions(constant)


def module_code(path: str) -> CodeType | None:
    """A file's module code: its current `__pycache__` file, else its source compiled; None for a
    file that does not compile (torch ships none, but a patched install might)."""
    with open(path, "rb") as handle:
        source = handle.read()
    cached = _cached_code(path, source)
    if cached is not None:
        return cached
    try:
        return compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


def _cached_code(path: str, source: bytes) -> CodeType | None:
    """The code in `path`'s pyc when its header says it was made from this very source (timestamp
    pycs: size and mtime; hash-based pycs are not checked here and are compiled afresh)."""
    try:
        with open(importlib.util.cache_from_source(path), "rb") as handle:
            data = handle.read()
    except (OSError, NotImplementedError):
        return None
    if len(data) < 16 or data[:4] != importlib.util.MAGIC_NUMBER or int.from_bytes(data[4:8], "little") != 0:
        return None
    mtime, size = int.from_bytes(data[8:12], "little"), int.from_bytes(data[12:16], "little")
    status = os.stat(path)
    if mtime != int(status.st_mtime) & 0xFFFFFFFF or size != len(source) & 0xFFFFFFFF:
        return None
    try:
        code = marshal.loads(data[16:])
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def census(root: str) -> dict[str, object]:
    """Every torch module under `root` with its file, subpackage and definitions (the cache's content)."""
    modules: dict[str, dict[str, object]] = {}
    unreadable = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            relpath = os.path.relpath(path, root).replace(os.sep, "/")
            code = module_code(path)
            if code is None:
                unreadable.append(relpath)
                continue
            found = sorted(set(definitions(code)))
            modules[module_name(relpath)] = {"file": relpath, "subpackage": subpackage(relpath),
                                             "definitions": [list(d) for d in found]}
    return {"root": root, "python": sys.version.split()[0], "modules": modules, "unreadable": unreadable}


def main(argv: list[str]) -> int:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        print(f"{PACKAGE} is not importable by {sys.executable}", file=sys.stderr)
        return 1
    found = census(os.path.dirname(spec.origin))
    partial = argv[0] + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(found, handle, separators=(",", ":"))
    os.replace(partial, argv[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
