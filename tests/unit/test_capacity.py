"""`--jobs auto` (harness/run/capacity.py): N from the cores and memory a run may use, cgroup limits
included, never more test processes than the memory holds."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands.arguments import jobs_argument
from harness.run.capacity import DEFAULT_PROCESS_MB, Limits, choose, limits, process_mb
from tests.conftest import run_fixtures

ROOT = Path(__file__).resolve().parents[2]
GB = 1024.0


def meminfo(tmp_path: Path, available_mb: float) -> Path:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       99999999 kB\nMemAvailable:   {int(available_mb * 1024)} kB\n")
    return path


def cgroup_v2(tmp_path: Path, cpu_max: str, memory_max: str, memory_current: int) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    group = root / "job" / "run"
    group.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory\n")
    (root / "job" / "cpu.max").write_text(f"{cpu_max} 100000\n")  # set on the parent: holds for the child
    (group / "memory.max").write_text(f"{memory_max}\n")
    (group / "memory.current").write_text(f"{memory_current}\n")
    membership = tmp_path / "self-cgroup"
    membership.write_text("0::/job/run\n")
    return root, membership


@pytest.mark.unit
def test_memory_not_cores_sets_n_when_n_processes_would_not_fit_and_the_line_says_so():
    chosen = choose(Limits(16, "CPU affinity", 32 * GB, "MemAvailable"), 4000.0, "measured")
    assert chosen.jobs == 7  # 32 GB less a tenth holds 7 processes of 4 GB, not 16
    assert chosen.line.startswith("--jobs auto: 7 (fewer than the 16 cores")
    assert "4,000 MB per test process (measured)" in chosen.line and "\n" not in chosen.line
    roomy = choose(Limits(16, "CPU affinity", 32 * GB, "MemAvailable"), 1000.0, "measured")
    assert roomy.jobs == 16 and "fewer" not in roomy.line


@pytest.mark.unit
def test_at_least_one_process_runs_whatever_the_memory():
    assert choose(Limits(4, "CPU affinity", 100.0, "MemAvailable"), DEFAULT_PROCESS_MB, "default").jobs == 1


@pytest.mark.unit
def test_cgroup_v2_quota_of_a_parent_and_memory_limit_less_usage_bound_n(tmp_path):
    root, membership = cgroup_v2(tmp_path, "150000", str(3 * 2**30), 2**30)
    found = limits(root, meminfo(tmp_path, 64 * GB), membership)
    assert found.cores == min(2, len(os.sched_getaffinity(0)))  # 1.5 cores of quota round up
    assert found.memory_mb == pytest.approx(2 * GB) and "cgroup" in found.memory_from


@pytest.mark.unit
def test_cgroup_v2_without_limits_leaves_affinity_and_mem_available(tmp_path):
    root, membership = cgroup_v2(tmp_path, "max", "max", 2**30)
    (root / "job" / "cpu.max").write_text("max 100000\n")
    found = limits(root, meminfo(tmp_path, 5 * GB), membership)
    assert (found.cores, found.memory_mb) == (len(os.sched_getaffinity(0)), 5 * GB)


@pytest.mark.unit
def test_cgroup_v1_quota_and_memory_limit(tmp_path):
    root = tmp_path / "cgroup"
    cpu, memory = root / "cpu" / "box", root / "memory" / "box"
    cpu.mkdir(parents=True)
    memory.mkdir(parents=True)
    (cpu / "cpu.cfs_quota_us").write_text("100000\n")
    (cpu / "cpu.cfs_period_us").write_text("100000\n")
    (memory / "memory.limit_in_bytes").write_text(f"{2**31}\n")
    (memory / "memory.usage_in_bytes").write_text(f"{2**30}\n")
    (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (root / "memory" / "memory.usage_in_bytes").write_text(f"{2**33}\n")
    membership = tmp_path / "self-cgroup"
    membership.write_text("4:memory:/box\n2:cpu:/box\n0::/\n")
    found = limits(root, meminfo(tmp_path, 64 * GB), membership)
    assert found.cores == 1 and found.memory_mb == pytest.approx(GB)


@pytest.mark.unit
@pytest.mark.parametrize("text, jobs", [("auto", None), ("3", 3)])
def test_jobs_is_a_count_or_auto(text, jobs):
    assert jobs_argument(text) == jobs


@pytest.mark.unit
@pytest.mark.parametrize("text", ["0", "-2", "many", ""])
def test_other_jobs_are_refused_in_one_line(text):
    with pytest.raises(argparse.ArgumentTypeError, match="expected a (positive )?whole number"):
        jobs_argument(text)


@pytest.mark.unit
def test_without_a_recorded_peak_the_default_is_used_and_said(tmp_path):
    assert process_mb(tmp_path, "p3") == (DEFAULT_PROCESS_MB, "no run of tier p3 recorded one: the default")


@pytest.mark.integration
def test_test_processes_record_their_peak_memory_and_auto_sizes_on_it(tmp_path):
    run = run_fixtures(tmp_path / "results", ("test_cpu_and_sleep.py",))
    [record] = run.read_record().files
    assert 10 < record.peak_mb < 2000  # a Python running pytest: tens of MB
    measured, source = process_mb(tmp_path / "results", "fixture")
    assert measured == record.peak_mb and "largest peak RSS of tier fixture" in source


@pytest.fixture
def memory_cgroup():
    """A real cgroup (v1 memory controller, or v2) limited to 1 GiB; root only."""
    if os.geteuid() != 0:
        pytest.skip("needs root: creates a cgroup with a memory limit")
    v1 = Path("/sys/fs/cgroup/memory")
    group = (v1 if v1.is_dir() else Path("/sys/fs/cgroup")) / f"harness-jobs-{os.getpid()}"
    try:
        group.mkdir()
        (group / ("memory.limit_in_bytes" if v1.is_dir() else "memory.max")).write_text(str(2**30))
    except OSError as error:
        pytest.skip(f"cannot create a memory cgroup here: {error}")
    yield group
    group.rmdir()


@pytest.mark.integration
def test_a_real_run_inside_a_1_gib_cgroup_starts_fewer_processes_and_says_why(memory_cgroup, tmp_path):
    """`harness run --jobs auto` in a cgroup of 1 GiB: 1 test process of the default 1.6 GB fits,
    whatever the cores, and the run says memory chose N."""
    command = [sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "p0", "--jobs", "auto",
               "--python", sys.executable, "--tests-dir", str(ROOT / "tests" / "fixtures" / "outcomes"),
               "--select", "test_cpu_and_sleep.py", "--results", str(tmp_path / "results")]
    procs = memory_cgroup / "cgroup.procs"
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: procs.write_text(str(os.getpid())))
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("--jobs auto")]
    assert line.startswith("--jobs auto: 1 ") and "cgroup memory limit less its usage" in line, line
    if len(os.sched_getaffinity(0)) > 1:
        assert "fewer than the" in line
