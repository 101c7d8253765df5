"""Where a JIT-compiled function's code is: `module:qualname` to file and first line.

CinderX names functions the way its JIT list does, without a place. The names are looked up in
the configuration's own interpreter, in a process that collects the failing test exactly as its
replay does (`--collect-only` with this module as a pytest plugin), so the test's modules carry
the same names they had when CinderX compiled them. A function defined inside another
(`f.<locals>.g`) or in generated code has no attribute path to it: it keeps its module's file,
without a line.

The plugin half is standard library only: it runs inside every configuration's interpreter.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import CodeType
from typing import Any

from harness.protocol import Env

Place = tuple[str, int | None]  # (file, first line); ("", None) when not found


def locate(prefix: str, nodeid: str, names: Sequence[str], timeout: float) -> dict[str, Place]:
    """Each name's place, from a collecting process of the test's configuration."""
    with tempfile.TemporaryDirectory(prefix="harness-locate-") as folder:
        wanted = Path(folder) / "names.json"
        wanted.write_text(json.dumps(list(names)), encoding="utf-8")
        command = f"{prefix} -p {__name__} --collect-only {shlex.quote(nodeid)}"
        env = {**os.environ, Env.LOCATE: str(wanted)}
        try:
            subprocess.run(["/bin/sh", "-c", command], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            pass
        answer = wanted.with_suffix(".places.json")
        found = json.loads(answer.read_text(encoding="utf-8")) if answer.is_file() else {}
    return {name: (str(found[name][0]), found[name][1]) if name in found else ("", None) for name in names}


def pytest_collection_finish(session: Any) -> None:
    """In the collecting process: answer beside the names file (`<names>.places.json`)."""
    path = os.environ.get(Env.LOCATE)
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        names = json.load(handle)
    answer = {name: place_of(name) for name in names}
    with open(path.removesuffix(".json") + ".places.json", "w", encoding="utf-8") as handle:
        json.dump(answer, handle)


def place_of(name: str) -> Place:
    """Attributes from the module down the qualname; past `<locals>`, the code objects nested in
    the enclosing function's code (a function defined inside another has no attribute path)."""
    module_name, _, qualname = name.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # any failure to import means: not found
            return ("", None)
    file = getattr(module, "__file__", None) or ""
    thing: Any = module
    code: CodeType | None = None
    for part in qualname.split("."):
        if part == "<locals>":
            code, thing = code or _code(thing), None
        elif thing is None:
            code = next((c for c in (code.co_consts if code else ()) if isinstance(c, CodeType) and c.co_name == part),
                        None)
        else:
            thing, code = getattr(thing, part, None), None
        if thing is None and code is None:
            return (file, None)
    code = code if thing is None else _code(thing)
    return (code.co_filename, code.co_firstlineno) if code else (file, None)


def _code(thing: Any) -> CodeType | None:
    """The code of a function, method, static or class method."""
    return getattr(getattr(thing, "__func__", thing), "__code__", None)
