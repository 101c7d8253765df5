"""Control and observe the CinderX JIT inside a test process.

Standard library only: this runs in every configuration's interpreter. `cinderx.jit` without its
native extension silently turns every call into a no-op (every count 0), so nothing here trusts
an import: JIT state is always read back from the JIT itself.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from harness.protocol import JitMode, Request

CINDERX_MODULES = ("cinderx", "_cinderx", "cinderjit")
LOG_FILE = "CINDERX_JIT_LOG_FILE"  # CinderX's log file, which it empties when it starts (culprit search)
JIT_LIST_FILE = "CINDERX_JIT_LIST_FILE"  # CinderX compiles only the functions this file names (culprit search)


@dataclass(frozen=True)
class JitSnapshot:
    """The JIT as it really is, read back after background compiles finished."""

    loaded: bool
    available: bool
    enabled: bool
    threshold: int | None
    compiled: int
    compile_time_ms: int | None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cinderx_origin() -> str | None:
    """Where CinderX would be imported from, or None if it cannot be imported (a falsifier, docs/background.md §1)."""
    for name in CINDERX_MODULES:
        if name in sys.modules:
            return f"{name} already imported from {getattr(sys.modules[name], '__file__', '?')}"
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            return f"{name} importable from {spec.origin}"
    return None


def cinderx_loaded() -> str | None:
    """The CinderX module this process has imported already, if any."""
    return next((name for name in CINDERX_MODULES if name in sys.modules), None)


def load_settings(path: str) -> str | None:
    """Put the CinderX settings a rerun client wrote (JSON: environment variable -> value: a JIT
    list, a debug log, a pass switched off) into this process's environment, where CinderX reads
    them when it is imported, as from a process started with them. Returns why they cannot apply."""
    try:
        with open(path, encoding="utf-8") as handle:
            settings = json.load(handle)
    except (OSError, ValueError) as error:
        return f"cannot read the CinderX settings {path}: {error}"
    loaded = cinderx_loaded()
    if settings and loaded:
        return f"CinderX settings not applied: {loaded} was imported before this worker started"
    os.environ.update({str(name): str(value) for name, value in settings.items()})
    return None


def own_log() -> None:
    """In a process a test started: CinderX's log goes beside its parent's (`LOG.<pid>`), which
    CinderX would otherwise empty when it starts here."""
    log = os.environ.get(LOG_FILE)
    if log:
        os.environ[LOG_FILE] = f"{log}.{os.getpid()}"


def _jit_module() -> Any:
    return importlib.import_module("cinderx.jit")


def apply(request: Request) -> str | None:
    """Switch the JIT as requested; return an error text when the request cannot be met."""
    if request.mode == JitMode.ABSENT:
        return None
    try:
        jit = _jit_module()
    except ImportError as error:
        return f"cannot import cinderx.jit: {error}"
    if request.mode == JitMode.OFF:
        jit.disable()
        return None
    if not is_available(jit):
        return f"cinderx.jit is not available: {getattr(jit, 'get_import_error', lambda: None)()}"
    jit.enable()
    jit.compile_after_n_calls(request.effective_threshold)
    return _disengage_during_dynamo(jit) if request.disengage else None


def _disengage_during_dynamo(jit: Any) -> str | None:
    """The P3 strategy (docs/background.md §1): run dynamo's frame compilation with the JIT paused.

    torch.compile traces lazily, on the first call of the compiled function, not when
    `torch.compile()` is called; dynamo's `convert_frame._compile` does that tracing and installs
    the guards, so the pause wraps it (a module global, looked up at every call).
    """
    try:
        convert_frame = importlib.import_module("torch._dynamo.convert_frame")
    except ImportError as error:
        return f"cannot disengage the JIT around torch.compile: {error}"
    original = convert_frame._compile

    @functools.wraps(original)
    def compile_with_jit_paused(*args: Any, **kwargs: Any) -> Any:
        with jit.pause():
            return original(*args, **kwargs)

    convert_frame._compile = compile_with_jit_paused
    return None


def snapshot() -> JitSnapshot:
    """Read the JIT's state; waits for background compiles so counts do not lag."""
    if "cinderx.jit" not in sys.modules:
        return JitSnapshot(loaded=False, available=False, enabled=False, threshold=None, compiled=0,
                           compile_time_ms=None)
    jit = sys.modules["cinderx.jit"]
    try:
        available = is_available(jit)
        if available:
            jit.wait_for_background_compiles()
        return JitSnapshot(
            loaded=True,
            available=available,
            enabled=bool(jit.is_enabled()),
            threshold=jit.get_compile_after_n_calls() if available else None,
            compiled=len(jit.get_compiled_functions()) if available else 0,
            compile_time_ms=int(jit.get_compilation_time()) if available else None,
        )
    except Exception as error:  # a broken JIT must still leave a record, never a crash here
        return JitSnapshot(loaded=True, available=False, enabled=False, threshold=None, compiled=0,
                           compile_time_ms=None, error=f"{type(error).__name__}: {error}")


def compiled_now() -> int:
    """Compiled functions so far, without waiting for background compiles (cheap, may lag)."""
    jit = _running_jit()
    return 0 if jit is None else len(jit.get_compiled_functions())


def compiled_functions() -> list[Callable[..., Any]]:
    """Every function the JIT has compiled, after pending background compiles finished."""
    jit = _running_jit()
    if jit is None:
        return []
    jit.wait_for_background_compiles()
    return list(jit.get_compiled_functions())


def _running_jit() -> Any:
    """`cinderx.jit` when it is loaded with its native extension, else None."""
    module = sys.modules.get("cinderx.jit")
    return module if module is not None and is_available(module) else None


def is_available(jit: Any) -> bool:
    """Whether `cinderx.jit` runs on its native extension (without it every call is a silent no-op).
    CinderX before 2026.11 has no `jit.is_available`, and 2026.10.26.0 is the newest release with an
    aarch64 wheel on PyPI (docs/aarch64.md): there, `cinderx.is_initialized()` says the same."""
    check = getattr(jit, "is_available", None)
    if check is not None:
        return bool(check())
    cinderx = sys.modules.get("cinderx")
    return bool(cinderx is not None and getattr(cinderx, "is_initialized", lambda: False)())


def is_compiled(function: Callable[..., Any], wait: bool = True) -> bool:
    """True when `function` runs as JIT-compiled code. `wait` first lets pending background
    compiles finish; without it, a compile still queued reads as not compiled."""
    jit = _running_jit()
    if jit is None:
        return False
    if wait:
        jit.wait_for_background_compiles()
    return bool(jit.is_jit_compiled(function))


def uncompile(function: Callable[..., Any]) -> None:
    """Throw `function`'s JIT code away: it runs interpreted until the JIT compiles it again."""
    jit = _running_jit()
    if jit is not None:
        jit.wait_for_background_compiles()
        jit.force_uncompile(function)


@contextmanager
def deoptimized() -> Iterator[None]:
    """Every JIT-compiled function runs interpreted inside; CinderX puts their code back after."""
    jit = _running_jit()
    if jit is None:
        yield
        return
    jit.wait_for_background_compiles()
    with jit.pause(deopt_all=True):
        yield


def compiles_in_background() -> bool:
    """Whether the JIT compiles on its background thread (so a compile can be queued, not done)."""
    jit = _running_jit()
    return jit is not None and bool(jit.get_background_compile())


def restricted_by_jit_list() -> bool:
    """Whether CinderX compiles only what a JIT list names: then a hot function stays interpreted
    unless the list names it, and a test may not claim it compiled (a culprit search's probes)."""
    return bool(os.environ.get(JIT_LIST_FILE))
