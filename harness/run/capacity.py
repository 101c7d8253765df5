"""`--jobs auto`: how many test processes a run starts, from the cores and the memory it may use.

Cores: the CPUs this process may run on (sched_getaffinity), fewer if its cgroup's CPU quota says so
(v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`). Memory: what the machine has available
(MemAvailable), less if the cgroup's limit leaves less (v2 `memory.max` - `memory.current`, v1
`memory.limit_in_bytes` - `memory.usage_in_bytes`). Each test process is counted at the largest peak
RSS the tier's recent runs recorded (FileRecord.peak_mb: the test processes report their
ru_maxrss), else DEFAULT_PROCESS_MB, with MEMORY_HEADROOM of the memory left for everything else
(the runner, page cache, a test's short-lived children). A run never starts more processes than the
memory holds: past it the kernel swaps or the OOM killer ends a test, which would be recorded as a
crash. When memory, not cores, sets N, the one line says so.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.record.store import recent_runs
from harness.run.schedule import RECENT_RUNS

# A test process's peak RSS when no run of the tier has recorded one: the broad workload
# (transformer, fx, export, torch.compile) peaked at 1.6 GB under CinderX at threshold 1
# (/work/shared/ENVIRONMENT.md); the breadth modules' processes stay below 1 GB.
DEFAULT_PROCESS_MB = 1600.0
MEMORY_HEADROOM = 0.1  # of the available memory, left to everything else

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Limits:
    """What the run may use: cores, memory in MB, and where each figure came from."""

    cores: int
    cores_from: str
    memory_mb: float
    memory_from: str


@dataclass(frozen=True)
class Choice:
    jobs: int
    line: str  # how N was chosen, printed once


def choose(limits: Limits, process_mb: float, process_from: str) -> Choice:
    """N: the cores, or fewer when N processes of `process_mb` would not fit the memory."""
    fits = max(1, math.floor(limits.memory_mb * (1 - MEMORY_HEADROOM) / process_mb))
    jobs = min(limits.cores, fits)
    memory = (f"{limits.memory_mb / 1024:,.1f} GB available ({limits.memory_from}) at {process_mb:,.0f} MB per "
              f"test process ({process_from})")
    if fits < limits.cores:
        return Choice(jobs, f"--jobs auto: {jobs} (fewer than the {limits.cores} cores, {limits.cores_from}: "
                            f"{memory}; more would swap or meet the OOM killer)")
    return Choice(jobs, f"--jobs auto: {jobs} ({limits.cores} cores, {limits.cores_from}; {memory})")


def limits(root: Path = CGROUP_ROOT, meminfo: Path = Path("/proc/meminfo"),
           membership: Path = Path("/proc/self/cgroup")) -> Limits:
    """This process's cores and memory, cgroup limits included."""
    cores, cores_from = len(os.sched_getaffinity(0)), "CPU affinity"
    quota = _cpu_quota(root, _cgroups(membership))
    if quota is not None and quota < cores:
        cores, cores_from = max(1, math.ceil(quota)), f"cgroup CPU quota {quota:g}"
    memory, memory_from = _mem_available(meminfo), "MemAvailable"
    left = _memory_left(root, _cgroups(membership))
    if left is not None and left < memory:
        memory, memory_from = left, "cgroup memory limit less its usage"
    return Limits(cores, cores_from, memory, memory_from)


def process_mb(results_root: Path, tier: str) -> tuple[float, str]:
    """The largest test-process peak the tier's recent runs recorded, else the default."""
    peaks = [f.peak_mb for record in recent_runs(results_root, tier, RECENT_RUNS) for f in record.files if f.peak_mb]
    if peaks:
        return max(peaks), f"the largest peak RSS of tier {tier}'s last {RECENT_RUNS} runs"
    return DEFAULT_PROCESS_MB, f"no run of tier {tier} recorded one: the default"


def _cgroups(membership: Path) -> dict[str, str]:
    """Controller (or "" for v2's unified tree) -> this process's cgroup path, from /proc/self/cgroup."""
    found: dict[str, str] = {}
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        if line.count(":") < 2:
            continue
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _ancestors(base: Path, path: str) -> list[Path]:
    """The cgroup folder and every folder above it up to the controller's root: a limit set on a
    parent holds for its children too."""
    folder = base / path.lstrip("/")
    return [folder, *[parent for parent in folder.parents if parent.is_relative_to(base)]]


def _cpu_quota(root: Path, groups: dict[str, str]) -> float | None:
    """The tightest CPU quota, in cores, over this cgroup and its parents (None: no quota)."""
    quotas: list[float] = []
    if "" in groups and (root / "cgroup.controllers").exists():
        for folder in _ancestors(root, groups[""]):
            text = _read(folder / "cpu.max")
            if text and not text.startswith("max"):
                quota, period = text.split()
                quotas.append(int(quota) / int(period))
    if "cpu" in groups:
        for folder in _ancestors(root / "cpu", groups["cpu"]):
            quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
            if quota and period and int(quota) > 0:
                quotas.append(int(quota) / int(period))
    return min(quotas, default=None)


def _memory_left(root: Path, groups: dict[str, str]) -> float | None:
    """The least memory (MB) any enclosing cgroup's limit leaves (None: no limit)."""
    left: list[float] = []
    if "" in groups and (root / "cgroup.controllers").exists():
        for folder in _ancestors(root, groups[""]):
            limit, usage = _read(folder / "memory.max"), _read(folder / "memory.current")
            if limit and limit != "max" and usage:
                left.append((int(limit) - int(usage)) / 2**20)
    if "memory" in groups:
        for folder in _ancestors(root / "memory", groups["memory"]):
            limit, usage = _read(folder / "memory.limit_in_bytes"), _read(folder / "memory.usage_in_bytes")
            if limit and usage and int(limit) < 2**62:  # v1 writes "no limit" as a huge number
                left.append((int(limit) - int(usage)) / 2**20)
    return max(min(left), 0.0) if left else None


def _mem_available(meminfo: Path) -> float:
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise HarnessError(f"{meminfo}: no MemAvailable line; give --jobs a number")
