"""Which processor architecture an interpreter is built for, and how this host runs it.

Everything that depends on the architecture (Debian's package architecture, the dynamic loader,
the wheels' platform tags, whether qemu-user must run it) is chosen from the *interpreter's*
architecture, read from its ELF header, never from the host's: on an aarch64 host the ordinary
configurations are native, and on an x86_64 host an aarch64 interpreter is run by qemu-user
through binfmt_misc (docs/aarch64.md).

The host's architecture is the kernel's (`/proc/sys/kernel/arch`): under qemu-user,
`platform.machine()` answers with the emulated one, so the harness, itself running in an emulated
interpreter, could not otherwise tell that it is emulated.

Standard library only: the noxfile calls this before any virtual environment exists.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

BINFMT = Path("/proc/sys/fs/binfmt_misc")
KERNEL_ARCH = Path("/proc/sys/kernel/arch")
EMULATOR_PACKAGES = ("qemu-user-static", "binfmt-support")
PREFIX_VARIABLE = "QEMU_LD_PREFIX"  # where qemu-user looks first for every file an emulated process opens


@dataclass(frozen=True)
class Architecture:
    """One processor architecture, under every name the tools that provision it use."""

    machine: str  # platform.machine() and the kernel's name: x86_64, aarch64
    debian: str  # Debian's package architecture
    loader: str  # the dynamic loader's file name in /usr/lib/<machine>-linux-gnu
    elf: int  # e_machine in an ELF header
    qemu: str  # the binfmt_misc entry qemu-user-static registers for it
    midr: str = ""  # a CPU identification register value for emulated ARM processes (Neoverse V2)

    @property
    def wheel_platforms(self) -> tuple[str, ...]:
        """Every platform tag pip must be told to accept when it downloads wheels for this architecture
        from another one: torch's nvidia-* dependencies are spread over manylinux_2_17 to _2_39."""
        return (*(f"manylinux_2_{minor}_{self.machine}" for minor in range(17, 40)),
                f"manylinux2014_{self.machine}", f"linux_{self.machine}")


ARCHITECTURES = {
    "x86_64": Architecture("x86_64", "amd64", "ld-linux-x86-64.so.2", 62, "qemu-x86_64"),
    "aarch64": Architecture("aarch64", "arm64", "ld-linux-aarch64.so.1", 183, "qemu-aarch64",
                            midr="0x00000000410fd4f0"),
}


def architecture(machine: str) -> Architecture:
    """The architecture of this name; one line naming the known ones otherwise."""
    if machine not in ARCHITECTURES:
        raise HarnessError(f"unknown architecture '{machine}' (known: {', '.join(ARCHITECTURES)})")
    return ARCHITECTURES[machine]


def host_machine() -> str:
    """The architecture the kernel runs: what qemu-user cannot pretend otherwise about."""
    try:
        return KERNEL_ARCH.read_text().strip() or platform.machine()
    except OSError:
        return platform.machine()


def elf_machine(path: Path) -> str | None:
    """The architecture an ELF executable is built for (links followed); None for a script or unknown."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
    except OSError:
        return None
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    code = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
    return next((arch.machine for arch in ARCHITECTURES.values() if arch.elf == code), None)


def interpreter_machine(python: Path) -> str:
    """The architecture of the interpreter itself: its ELF header, or (a wrapper script) what it says."""
    found = elf_machine(Path(os.path.realpath(python)))
    if found:
        return found
    try:
        done = subprocess.run([str(python), "-c", "import platform; print(platform.machine())"],
                              capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return host_machine()
    return done.stdout.strip() or host_machine()


def is_emulated(machine: str, host: str | None = None) -> bool:
    """Whether an interpreter of this architecture runs under an emulator on this host."""
    return machine != (host or host_machine())


def emulator_ready(arch: Architecture) -> bool:
    """binfmt_misc is mounted and hands this architecture's executables to an enabled emulator."""
    entry = BINFMT / arch.qemu
    try:
        return entry.read_text().splitlines()[0].strip() == "enabled"
    except (OSError, IndexError):
        return False


def emulator_command(arch: Architecture) -> str:
    """What a root user runs to let this host start `arch` executables."""
    return (f"apt-get install -y {' '.join(EMULATOR_PACKAGES)} && "
            f"(mountpoint -q {BINFMT} || mount -t binfmt_misc binfmt_misc {BINFMT}) && "
            f"update-binfmts --enable {arch.qemu}")


def ensure_emulator(arch: Architecture) -> None:
    """Make this host run `arch` executables through qemu-user (as root), else say what to run."""
    if emulator_ready(arch):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise HarnessError(f"{arch.machine} interpreters need qemu-user and binfmt_misc on this "
                           f"{host_machine()} host; as root run: {emulator_command(arch)}")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    mount = [] if (BINFMT / "status").exists() else [["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)]]
    steps = [*mount, ["apt-get", "install", "-y", "-q", *EMULATOR_PACKAGES], ["update-binfmts", "--enable", arch.qemu]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, env=environment)
        if done.returncode != 0 and not emulator_ready(arch):
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise HarnessError(f"setting up {arch.machine} emulation: `{' '.join(step)}` failed: {last}; "
                               f"run: {emulator_command(arch)}")
    if not emulator_ready(arch):
        raise HarnessError(f"binfmt_misc has no enabled {arch.qemu} entry after installing {EMULATOR_PACKAGES[0]}; "
                           f"run: {emulator_command(arch)}")


def emulated_identity(root: Path, arch: Architecture, cpus: int) -> None:
    """Give emulated processes this architecture's /proc/cpuinfo and CPU identification registers
    inside qemu's path prefix: qemu-user shows the host's x86 /proc/cpuinfo, and torch's cpuinfo
    dies at import (SIGSEGV) when it cannot read `midr_el1`."""
    if not arch.midr:
        return
    processors = "\n".join(
        f"processor\t: {cpu}\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics "
        "fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat "
        f"ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint\n"
        f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n"
        for cpu in range(cpus))
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "cpuinfo").write_text(processors)
    for cpu in range(cpus):
        registers = root / "sys" / "devices" / "system" / "cpu" / f"cpu{cpu}" / "regs" / "identification"
        registers.mkdir(parents=True, exist_ok=True)
        (registers / "midr_el1").write_text(f"{arch.midr}\n")


def emulation_environment(python: Path) -> dict[str, str]:
    """The variables an emulated interpreter provisioned by the harness needs in every process it
    starts: qemu's path prefix, its private root (the CPU identity and the loader live there)."""
    resolved = Path(os.path.realpath(python))
    machine = elf_machine(resolved)
    root = resolved.parents[2] if len(resolved.parents) > 2 else resolved.parent
    if machine is None or not is_emulated(machine) or not (root / "proc" / "cpuinfo").is_file():
        return {}
    return {PREFIX_VARIABLE: str(root)}
