"""Session environments that share one torch installation.

torch with its CUDA dependencies is about 5.5 GB per environment. Every virtual-environment
configuration of the same interpreter therefore shares one *layer*: a virtual environment in the
harness cache with torch and the shared test packages, built once. A configuration's own nox
environment holds only what differs (CinderX, extra packages) and sees the layer through a `.pth`
file, so the same torch files serve every configuration: same version by construction.
The layer never holds a configuration's own packages, so `stock` cannot see CinderX through it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.configure.architectures import architecture, interpreter_machine, is_emulated
from harness.configure.configurations import Configuration
from harness.configure.provision import (ProvisionError, cache_lock, cache_root, ensure_python, find_python,
                                         provisioned_python)
from harness.errors import HarnessError

LAYER_PTH = "_harness_layer.pth"
CHECKOUT_PTH = "_harness_checkout.pth"  # an emulated environment's harness: the checkout, as `pip install -e` would


@dataclass(frozen=True)
class Layer:
    root: Path
    site_packages: Path
    requirements: tuple[str, ...]
    built_seconds: float | None  # None when it already existed


@contextmanager
def sole_run(environment: Path) -> Iterator[None]:
    """One nox run at a time in a session's environment, for the whole session: a second run
    reinstalls the environment's packages under the first one's running tests, which then fail to
    import (a file of the first run lost to an ImportError). The second run stops with one line."""
    environment.parent.mkdir(parents=True, exist_ok=True)
    with open(environment.with_name(f"{environment.name}.in-use"), "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise HarnessError(f"{environment}: another nox run of this session (pid {holder}) is using its environment; "
                               "wait for it to end (a second run would reinstall its packages under its tests), "
                               "or give this run another --envdir") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def interpreter_for(configuration: Configuration) -> str:
    """The interpreter path a configuration uses; for versions, where provisioning will put it."""
    if configuration.python_is_path:
        return configuration.python
    found = find_python(configuration.python, configuration.arch)
    return str(found or provisioned_python(configuration.python, configuration.arch))


def ensure_interpreter(configuration: Configuration) -> Path:
    """Find or provision the configuration's interpreter; errors name where it was configured."""
    if configuration.python_is_path:
        python = Path(configuration.python)
        if not _is_python(python):
            raise HarnessError(f"{configuration.origin}: configuration '{configuration.name}': 'python': {python} "
                               "is not a Python interpreter (it cannot run `-c 'import sys'`)")
        return python
    try:
        return ensure_python(configuration.python, configuration.arch)
    except HarnessError as error:
        raise HarnessError(f"{configuration.origin}: configuration '{configuration.name}': 'python': {error}") from None


def _is_python(python: Path) -> bool:
    try:
        probe = subprocess.run([str(python), "-c", "import sys; print(sys.hexversion)"], capture_output=True,
                               text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0 and probe.stdout.strip().isdigit()


def ensure_layer(python: Path, requirements: tuple[str, ...]) -> Layer:
    """The shared layer for this interpreter and these requirements, built once and reused."""
    version = _run_text([str(python), "-c", "import platform; print(platform.python_version())"])
    key = hashlib.sha256(json.dumps([str(python.resolve()), version, sorted(requirements)]).encode()).hexdigest()[:12]
    root = cache_root() / "layers" / f"py{version}-{key}"
    complete = root / "layer.json"
    machine = interpreter_machine(python)
    # a lock of its own (with_suffix would make "py3.14.lock" of every 3.14 layer): an emulated layer's
    # build must not hold up the native one's
    lock = root.with_suffix(".lock") if not is_emulated(machine) else root.with_name(f"{root.name}.lock")
    with cache_lock(lock):
        if complete.is_file():
            return Layer(root, _site_packages(root), requirements, None)
        began = time.monotonic()
        shutil.rmtree(root, ignore_errors=True)
        if is_emulated(machine):
            subprocess.run([str(python), "-m", "venv", "--without-pip", str(root)], check=True)
            _install_from_wheelhouse(python, _site_packages(root), requirements)
        else:
            subprocess.run([str(python), "-m", "venv", str(root)], check=True)
            install = subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                      "--disable-pip-version-check", *requirements])
            if install.returncode != 0:
                raise HarnessError(f"pip could not install the shared layer ({' '.join(requirements)}) into {root}")
        seconds = round(time.monotonic() - began, 1)
        complete.write_text(json.dumps({"requirements": list(requirements), "python": str(python),
                                        "version": version, "built_seconds": seconds}, indent=2) + "\n")
        return Layer(root, _site_packages(root), requirements, seconds)


def install_emulated(python: Path, venv: Path, checkout: Path, packages: tuple[str, ...]) -> None:
    """A configuration's own packages and the harness's dependencies in its emulated environment, and
    the checkout on its path (what `pip install -e` gives): the emulated pip took minutes per session
    run for the editable install alone, mostly compiling its build environment."""
    project = tomllib.loads((checkout / "pyproject.toml").read_text())["project"]
    site_packages = _site_packages(venv)
    _install_from_wheelhouse(python, site_packages, (*project["dependencies"], *packages))
    (site_packages / CHECKOUT_PTH).write_text(f"{checkout}\n")


def _install_from_wheelhouse(python: Path, site_packages: Path, requirements: tuple[str, ...]) -> None:
    """Install into an emulated interpreter's site-packages with this host's pip, from the wheelhouse,
    then compile by the native interpreter of the same version (the same bytecode the emulated one
    would write): wheels only, so nothing of it runs emulated. Emulated, ensurepip alone took 6 minutes
    and pip 216 s for torch on a quiet machine (docs/aarch64.md)."""
    machine = interpreter_machine(python)
    version = _minor_version(python)
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              "--no-compile", "--no-index", "--upgrade", "--ignore-requires-python",  # checked by the download
                              *_platform_options(machine, version),
                              "--find-links", str(ensure_wheelhouse(machine, version, requirements)),
                              "--target", str(site_packages), *requirements], capture_output=True, text=True)
    if install.returncode != 0:
        raise HarnessError(f"pip could not install {' '.join(requirements)} into {site_packages}: "
                           f"{_pip_complaint(install.stderr)}")
    subprocess.run([str(ensure_python(version)), "-m", "compileall", "-q", "-j", "0", str(site_packages)],
                   capture_output=True)


def _minor_version(python: Path) -> str:
    """An interpreter's `major.minor` (3.14): what provisioning and pip's `--python-version` take."""
    return _run_text([str(python), "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"])


def _platform_options(machine: str, version: str) -> list[str]:
    """pip's options that choose wheels for another interpreter (`version` is `major.minor`): its
    version, ABI and platforms."""
    platforms = [option for tag in architecture(machine).wheel_platforms for option in ("--platform", tag)]
    abi = f"cp{version.replace('.', '')}"
    return ["--only-binary=:all:", "--python-version", version, "--implementation", "cp", "--abi", abi, *platforms]


def ensure_wheelhouse(machine: str, version: str, requirements: tuple[str, ...]) -> Path:
    """The wheels of `requirements` for `machine` and this interpreter's version, downloaded once by this
    host's pip into the cache (a lock and a completion marker, as for the layer)."""
    cp = version.replace(".", "")
    key = hashlib.sha256(json.dumps([machine, cp, sorted(requirements)]).encode()).hexdigest()[:12]
    folder = cache_root() / "wheelhouses" / f"{machine}-cp{cp}-{key}"
    complete = folder / "wheelhouse.json"
    with cache_lock(folder.with_suffix(".lock")):
        if complete.is_file():
            return folder
        download = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                                   *_platform_options(machine, version), "-d", str(folder), *requirements],
                                  capture_output=True, text=True)
        if download.returncode != 0:
            raise ProvisionError(f"no {machine} wheel for cp{cp}: {_pip_complaint(download.stderr)}")
        complete.write_text(json.dumps({"machine": machine, "python": version, "requirements": list(requirements)},
                                       indent=2) + "\n")
    return folder


def _pip_complaint(stderr: str) -> str:
    """pip's line that names what it could not find (`No matching distribution found for X`), else its last error."""
    errors = [line.removeprefix("ERROR: ") for line in stderr.splitlines() if line.startswith("ERROR:")]
    naming = [line for line in errors if line.startswith(("No matching distribution", "Cannot install"))]
    return (naming or errors or stderr.strip().splitlines() or ["pip download failed"])[-1]


def attach_layer(venv: Path, layer: Layer) -> None:
    """Make a virtual environment see the layer's packages (after its own, which take precedence)."""
    (_site_packages(venv) / LAYER_PTH).write_text(f"{layer.site_packages}\n")


def _site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python*/site-packages"))
    if not found:
        raise HarnessError(f"{venv}: no lib/python*/site-packages: not a virtual environment")
    return found[0]


def _run_text(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise HarnessError(f"{command[0]} failed: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()

