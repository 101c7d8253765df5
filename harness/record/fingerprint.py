"""Describe the interpreter, the machine and the test sources a run used.

The interpreter is asked about itself in a child process, so the description is true for the
interpreter the tests run under even when the harness runs in another one.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.protocol import Request

# Run inside the test interpreter: standard library only, no torch import (seconds saved per run).
_DESCRIBE = r"""
import importlib.metadata as m, importlib.util as u, json, platform, sys
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return None
def origin(name):
    try:
        spec = u.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec else None
def torch_git():
    import ast, os
    found = origin("torch")
    try:
        with open(os.path.join(os.path.dirname(found), "version.py"), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, TypeError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["git_version"]:
            return node.value.value if isinstance(node.value, ast.Constant) else None
    return None
print(json.dumps({
    "path": sys.executable,
    "version": platform.python_version(),
    "implementation": platform.python_implementation(),
    "machine": platform.machine(),
    "build": " ".join(platform.python_build()),
    "in_venv": sys.prefix != sys.base_prefix,
    "versions": {name: version(name) for name in ("torch", "cinderx", "pytest", "numpy")},
    "cinderx_origin": origin("cinderx") or origin("_cinderx") or origin("cinderjit"),
    "torch_git": torch_git(),
}))
"""

# Caches and databases each run keeps in its own folder (run/cache/<folder>), so that no
# configuration reuses what another built or learned: compiled kernels, C++ extensions, hypothesis
# examples. Not in the fingerprint: they would make every run's hash differ.
PER_RUN_FOLDERS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton",
                   "TORCH_EXTENSIONS_DIR": "torch_extensions", "HYPOTHESIS_STORAGE_DIRECTORY": "hypothesis"}
# Environment variables that switch PyTorch's test framework (which tests run, how, what it reports):
# they must be the same in both runs of a comparison (harness/compare/validity.py).
PYTORCH_SWITCH_PREFIXES = ("PYTORCH_TEST", "PYTORCH_OPINFO", "PYTORCH_HYPOTHESIS", "PYTORCH_PRINT_REPRO")
PYTORCH_SWITCHES = frozenset({"PYTORCH_DISABLE_RUNNING_SCRIPT_CHK", "DISABLED_TESTS_FILE", "SLOW_TESTS_FILE",
                              "TORCH_TEST_DEVICES", "OPINFO_RESTRICT_TO_DSL", "CI", "SANDCASTLE",
                              "CONTINUE_THROUGH_ERROR"})
# Environment variables that change what tests do; recorded and folded into the fingerprint.
_RELEVANT_PREFIXES = ("PYTHON", "CINDER", "PYTORCH", "TORCH", "CUDA", "OMP_", "MKL_", "OPENBLAS", "HYPOTHESIS", "CI",
                      "LD_", *PYTORCH_SWITCHES, *Request().to_env())


def describe_interpreter(python: str) -> dict[str, Any]:
    try:
        done = subprocess.run([python, "-c", _DESCRIBE], capture_output=True, text=True, timeout=120)
    except OSError as error:
        raise HarnessError(f"interpreter {python} cannot be started: {error.strerror}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise HarnessError(f"interpreter {python} failed to describe itself: {last}")
    try:
        description = json.loads(done.stdout)
        if not isinstance(description, dict) or not isinstance(description.get("versions"), dict):
            raise ValueError(description)
    except ValueError:
        printed = " ".join(done.stdout.split())[:80] or "nothing"
        raise HarnessError(f"interpreter {python} is not a Python the harness can use: asked to describe "
                           f"itself, it printed {printed!r}") from None
    return description


def environment_fingerprint(env: dict[str, str], interpreter: dict[str, Any]) -> dict[str, Any]:
    """Machine and environment facts that can change results, with one hash over all of them."""
    relevant = {key: value for key, value in sorted(env.items())
                if key.startswith(_RELEVANT_PREFIXES) and key not in PER_RUN_FOLDERS}
    facts = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu": _cpu_model(),
        "libc": " ".join(platform.libc_ver()),
        "python_build": interpreter.get("build"),
        "env": relevant,
    }
    facts["hash"] = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]
    facts["pytorch_switches"] = pytorch_switches(env)
    return facts


def pytorch_switches(env: dict[str, str]) -> dict[str, str]:
    """PyTorch's test switches as the test processes see them (unset ones left out)."""
    return {key: value for key, value in sorted(env.items())
            if key.startswith(PYTORCH_SWITCH_PREFIXES) or key in PYTORCH_SWITCHES}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


MAX_SIBLING_BYTES = 5 * 2**20  # sibling data files (manifests, helpers) count; large artefacts do not


def sources_identity(tests_dir: Path, files: list[str], origin: dict[str, Any] | None = None,
                     support: list[str] | None = None) -> dict[str, Any]:
    """A content hash of the files run, the files beside them (helpers, manifests), the conftest.py
    files above them and `support` files, plus a git commit if any. `origin` says where tests come
    from when that is not the files alone (PyTorch's suites inside torch: which torch); it is hashed too."""
    digest = hashlib.sha256(json.dumps(origin, sort_keys=True).encode())
    hashed = set(files) | set(support or ()) | _conftests(tests_dir, files) | _siblings(tests_dir, files)
    for relative in sorted(hashed):
        digest.update(relative.encode() + b"\0" + (tests_dir / relative).read_bytes() + b"\0")
    commit = subprocess.run(["git", "-C", str(tests_dir), "rev-parse", "HEAD"], capture_output=True, text=True)
    identity = {"hash": digest.hexdigest()[:16], "files": len(files),
                "commit": commit.stdout.strip() if commit.returncode == 0 else None}
    return {**identity, "origin": origin} if origin else identity


def _siblings(tests_dir: Path, files: list[str]) -> set[str]:
    found = set()
    for folder in {(tests_dir / relative).parent for relative in files}:
        for path in folder.iterdir():
            if path.is_file() and not path.name.startswith(".") and path.suffix != ".pyc" \
                    and path.stat().st_size <= MAX_SIBLING_BYTES:
                found.add(path.relative_to(tests_dir).as_posix())
    return found


def _conftests(tests_dir: Path, files: list[str]) -> set[str]:
    found = set()
    for relative in files:
        for parent in Path(relative).parents:
            if (tests_dir / parent / "conftest.py").is_file():
                found.add((parent / "conftest.py").as_posix())
    return found
