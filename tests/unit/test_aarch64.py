"""aarch64 configurations: everything arch-specific chosen from the interpreter, emulation set up or
explained in one line, the architecture recorded and a cross-architecture diff refused."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.configure import architectures, provision
from harness.configure.architectures import ARCHITECTURES, elf_machine, emulation_environment, is_emulated
from harness.configure.configurations import load_catalog
from harness.configure.tiers import get_tier
from harness.errors import HarnessError
from harness.record.store import RunDirectory
from tests.conftest import markdown_report
from tests.unit.test_verdicts_identity import make_run

pytestmark = pytest.mark.unit
PASSING = {"test_ops": {"test_add": "passed", "test_mul": "passed"}}


def elf(path: Path, machine: str) -> Path:
    """A file with the ELF header of an executable built for `machine` (64-bit, little-endian)."""
    header = b"\x7fELF\x02\x01\x01" + bytes(11) + ARCHITECTURES[machine].elf.to_bytes(2, "little")
    path.write_bytes(header + bytes(44))
    path.chmod(0o755)
    return path


@pytest.fixture
def host(tmp_path, monkeypatch):
    """Pretend the kernel runs `machine` (what qemu-user cannot fake: /proc/sys/kernel/arch)."""
    def set_host(machine: str) -> None:
        kernel = tmp_path / "kernel-arch"
        kernel.write_text(f"{machine}\n")
        monkeypatch.setattr(architectures, "KERNEL_ARCH", kernel)
    return set_host


def test_the_architecture_is_read_from_the_interpreters_elf_header_through_links(tmp_path):
    arm = elf(tmp_path / "python3.14", "aarch64")
    (tmp_path / "python").symlink_to(arm)
    assert elf_machine(tmp_path / "python") == "aarch64"
    assert elf_machine(Path(sys.executable).resolve()) == architectures.host_machine() == "x86_64"
    (tmp_path / "wrapper").write_text("#!/bin/sh\nexec python3 \"$@\"\n")
    assert elf_machine(tmp_path / "wrapper") is None


def test_on_an_aarch64_host_the_aarch64_configurations_are_native_and_nothing_is_emulated(tmp_path, host, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    arm = elf(tmp_path / "python3.14", "aarch64")
    host("aarch64")
    assert not is_emulated("aarch64") and is_emulated("x86_64")
    # the ordinary interpreter's place and no emulated root
    assert provision.provisioned_python("3.14", "aarch64") == provision.provisioned_python("3.14")
    assert emulation_environment(arm) == {}
    host("x86_64")
    assert is_emulated("aarch64")
    assert provision.provisioned_python("3.14", "aarch64").parts[-5] == "cpython-3.14-aarch64"


def test_an_emulated_interpreter_gets_its_private_root_as_qemus_prefix(tmp_path, host):
    host("x86_64")
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    arm = elf(root / "usr" / "bin" / "python3.14", "aarch64")
    assert emulation_environment(arm) == {}  # not provisioned by the harness: no CPU identity there
    architectures.emulated_identity(root, ARCHITECTURES["aarch64"], cpus=2)
    assert emulation_environment(arm) == {"QEMU_LD_PREFIX": str(root)}
    assert "CPU implementer\t: 0x41" in (root / "proc" / "cpuinfo").read_text()
    midr = root / "sys/devices/system/cpu/cpu1/regs/identification/midr_el1"
    assert midr.read_text().strip() == ARCHITECTURES["aarch64"].midr


def test_without_root_the_emulator_is_one_line_naming_the_command(tmp_path, host, monkeypatch):
    host("x86_64")
    monkeypatch.setattr(architectures, "BINFMT", tmp_path / "binfmt_misc")
    monkeypatch.setattr(architectures.os, "geteuid", lambda: 1000)
    with pytest.raises(HarnessError) as raised:
        architectures.ensure_emulator(ARCHITECTURES["aarch64"])
    message = str(raised.value)
    assert "\n" not in message and "as root run: apt-get install -y qemu-user-static binfmt-support" in message
    assert "mount -t binfmt_misc binfmt_misc" in message and "update-binfmts --enable qemu-aarch64" in message


def test_a_registered_emulator_is_left_as_it_is(tmp_path, monkeypatch):
    binfmt = tmp_path / "binfmt_misc"
    binfmt.mkdir()
    (binfmt / "qemu-aarch64").write_text("enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\n")
    monkeypatch.setattr(architectures, "BINFMT", binfmt)
    monkeypatch.setattr(architectures.subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
    architectures.ensure_emulator(ARCHITECTURES["aarch64"])
    (binfmt / "qemu-aarch64").write_text("disabled\n")
    assert not architectures.emulator_ready(ARCHITECTURES["aarch64"])


def test_wheels_for_another_architecture_accept_every_manylinux_tag_torch_needs():
    tags = ARCHITECTURES["aarch64"].wheel_platforms
    assert "manylinux_2_17_aarch64" in tags and "manylinux_2_39_aarch64" in tags and "manylinux2014_aarch64" in tags
    assert not any("x86_64" in tag for tag in tags)


def test_the_aarch64_configurations_are_data_with_their_own_baseline():
    catalog = load_catalog()
    for name in ("stock-aarch64", "cinderx-nojit-aarch64", "cinderx-jit-aarch64"):
        assert catalog.get(name).arch == "aarch64"
    assert catalog.get("cinderx-jit").arch is None
    assert catalog.baseline_for(catalog.get("cinderx-jit-aarch64")).name == "stock-aarch64"
    assert catalog.baseline_for(catalog.get("cinderx-jit")).name == "stock"
    assert catalog.emulated_timeout_scale > 1


@pytest.mark.parametrize("text, message", [
    ("configurations:\n  mine:\n    python: '3.14'\n    arch: arm64\n",
     "user.yaml:4: configuration 'mine': 'arch' must be one of x86_64, aarch64, not 'arm64'"),
    ("emulated_timeout_scale: 0\n", "user.yaml:1: 'emulated_timeout_scale' must be 1 or more, not 0"),
])
def test_bad_architecture_data_is_one_line_naming_file_and_line(tmp_path, text, message):
    user = tmp_path / "user.yaml"
    user.write_text(text)
    with pytest.raises(HarnessError, match=message):
        load_catalog(user)


def test_emulated_time_limits_are_scaled_bundled_part_included():
    tier = get_tier("p1")
    scaled = tier.scaled(40)
    assert (scaled.timeout, scaled.test_timeout) == (tier.timeout * 40, tier.test_timeout * 40)
    assert scaled.exit_grace == tier.exit_grace * 40  # an emulated torch took over 30 s to exit, loaded
    assert scaled.bundled.test_timeout == tier.bundled.test_timeout * 40
    assert tier.scaled(1) is tier


def ran_as(run: Path, machine: str, emulated: bool) -> Path:
    record = json.loads((run / "run.json").read_text())
    record.update(architecture=machine, emulated=emulated, timeout_scale=40 if emulated else 1)
    (run / "run.json").write_text(json.dumps(record))
    return run


def test_a_cross_architecture_diff_is_invalid_unless_allowed_and_then_said(tmp_path, capsys):
    stock = ran_as(make_run(tmp_path / "r", "stock", None, PASSING), "x86_64", False)
    arm = ran_as(make_run(tmp_path / "r", "cinderx-jit-aarch64", 1000, PASSING), "aarch64", True)
    assert main(["diff", str(stock), str(arm)]) == 2
    out = capsys.readouterr().out
    assert "architectures differ: baseline x86_64, candidate aarch64 (emulated)" in out
    assert "on aarch64 (emulated) vs x86_64" in out  # the section's title
    assert main(["diff", str(stock), str(arm), "--allow-architecture-mismatch", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["platform"] == {"baseline": "x86_64", "candidate": "aarch64 (emulated)"}
    assert any("allowed by --allow-architecture-mismatch" in note for note in report["notes"])


def test_two_emulated_aarch64_runs_compare_and_say_emulated_in_the_title(tmp_path, capsys):
    stock = ran_as(make_run(tmp_path / "r", "stock-aarch64", None, PASSING), "aarch64", True)
    arm = ran_as(make_run(tmp_path / "r", "cinderx-jit-aarch64", 1000, PASSING), "aarch64", True)
    status, markdown = markdown_report(["diff", str(stock), str(arm)], tmp_path / "out")
    assert status == 0
    assert "## cinderx-jit-aarch64 (threshold 1000) vs stock-aarch64 (tier p1) on aarch64 (emulated)" in markdown
    screen = capsys.readouterr().out  # the first screen says it too
    assert "cinderx-jit-aarch64 (threshold 1000) vs stock-aarch64 (tier p1) on aarch64 (emulated)" in screen


def test_a_run_recorded_before_architectures_were_kept_reads_as_the_hosts(tmp_path, capsys):
    old = make_run(tmp_path / "r", "stock", None, PASSING)
    record = json.loads((old / "run.json").read_text())
    for key in ("architecture", "emulated", "timeout_scale"):
        del record[key]
    record["fingerprint"] = {"machine": "x86_64"}
    (old / "run.json").write_text(json.dumps(record))
    read = RunDirectory(old).read_record()
    assert (read.architecture, read.emulated, read.timeout_scale) == ("", False, 1)
    arm = ran_as(make_run(tmp_path / "r", "cinderx-jit-aarch64", 1000, PASSING), "aarch64", True)
    assert main(["diff", str(old), str(arm)]) == 2
    assert "architectures differ: baseline x86_64, candidate aarch64 (emulated)" in capsys.readouterr().out


def test_diff_latest_compares_each_architecture_with_its_own_baseline(tmp_path, capsys):
    results = tmp_path / "results"
    ran_as(make_run(results, "stock", None, PASSING), "x86_64", False)
    ran_as(make_run(results, "cinderx-jit", 1000, PASSING), "x86_64", False)
    ran_as(make_run(results, "stock-aarch64", None, PASSING), "aarch64", True)
    ran_as(make_run(results, "cinderx-jit-aarch64", 1000, PASSING), "aarch64", True)
    assert main(["diff-latest", "--results", str(results), "--format", "json"]) == 0
    pairs = [(c["candidate"], c["baseline"], c["valid"]) for c in json.loads(capsys.readouterr().out)]
    assert pairs == [("cinderx-jit (threshold 1000)", "stock", True),
                     ("cinderx-jit-aarch64 (threshold 1000)", "stock-aarch64", True)]


def test_the_ci_workflow_runs_every_tier_also_natively_on_arm64_as_the_aarch64_configurations():
    import yaml

    workflow = yaml.safe_load((Path(__file__).resolve().parents[2] / "ci" / "github-actions.yml").read_text())
    run = workflow["jobs"]["run"]
    platforms = {p["runner"]: p["suffix"] for p in run["strategy"]["matrix"]["platform"]}
    assert platforms == {"ubuntu-latest": "", "ubuntu-24.04-arm": "-aarch64"}
    assert run["runs-on"] == "${{ matrix.platform.runner }}"
    sessions = {f"{config}{suffix}" for config in run["strategy"]["matrix"]["config"] for suffix in platforms.values()}
    assert sessions <= set(load_catalog().configurations)  # every session the matrix names exists
    tiers = run["strategy"]["matrix"]["tier"]
    assert "p0" in tiers and "p1" in tiers and "p2" in tiers  # pull requests and nightly alike


def test_a_cinderx_without_jit_is_available_is_judged_by_its_native_initialization(monkeypatch):
    """cinderx 2026.10.26.0, the newest aarch64 wheel on PyPI here, has no `cinderx.jit.is_available`:
    every JIT file of the first aarch64 run stopped with INTERNALERROR (AttributeError)."""
    from types import SimpleNamespace

    from harness.run import jit

    older = SimpleNamespace()  # a cinderx.jit without is_available
    monkeypatch.setitem(sys.modules, "cinderx", SimpleNamespace(is_initialized=lambda: True))
    assert jit.is_available(older)
    monkeypatch.setitem(sys.modules, "cinderx", SimpleNamespace(is_initialized=lambda: False))
    assert not jit.is_available(older)  # the silent no-op fallback, without the native extension
    assert not jit.is_available(SimpleNamespace(is_available=lambda: False))


def test_a_jit_file_of_an_emulated_interpreter_runs_unforked_and_says_why(host):
    """A JIT switched on in a forked worker died under qemu-user (docs/aarch64.md): an emulated JIT
    file's process is no fork host; stock files there, and JIT files natively, still fork."""
    from harness.run import forkserver

    host("aarch64")  # this x86_64 interpreter, on a kernel that says aarch64: emulated
    assert forkserver.unsafe_to_fork("3", jit_in_workers=True) == forkserver.EMULATED_JIT
    assert forkserver.unsafe_to_fork("3", jit_in_workers=False) != forkserver.EMULATED_JIT
    host(platform.machine())  # native
    assert forkserver.unsafe_to_fork("3", jit_in_workers=True) != forkserver.EMULATED_JIT
