"""An aarch64 interpreter's provisioning killed mid-way (SIGKILL: no cleanup runs) against a scratch
cache: nothing it left looks finished, and the next provisioning starts again cleanly and completes.
The interpreter root is the cheap part to kill (about 20 s: Debian's arm64 packages, unpacked,
patched, the standard library compiled); the layer and the wheelhouse use the same lock and
completion marker pattern (harness/configure/environments.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from harness.configure import provision
from harness.configure.architectures import ARCHITECTURES, emulator_command, emulator_ready, host_machine

AARCH64 = ARCHITECTURES["aarch64"]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(host_machine() == AARCH64.machine, reason="aarch64 is native here: nothing is emulated"),
    pytest.mark.skipif(not shutil.which("apt-get"), reason="provisions from Debian's archive: needs apt-get"),
    pytest.mark.skipif(os.geteuid() != 0 and not emulator_ready(AARCH64),
                       reason=f"emulating aarch64 needs qemu-user and binfmt_misc, set up as root: {emulator_command(AARCH64)}"),
]

PROVISION = "from harness.configure.provision import ensure_python; print(ensure_python('3.14', 'aarch64'))"


def test_a_killed_aarch64_provisioning_leaves_nothing_finished_and_the_next_one_completes(tmp_path, monkeypatch):
    native = provision.ensure_python("3.14")  # from the real cache: the test kills the emulated root's build only
    path = tmp_path / "bin"
    path.mkdir()
    (path / "python3.14").symlink_to(native)
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE", str(cache))
    monkeypatch.setenv("PATH", f"{path}{os.pathsep}{os.environ['PATH']}")
    building = subprocess.Popen([sys.executable, "-c", PROVISION], start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    # mid-way: the packages are unpacked and the standard library is being compiled
    while not list(cache.glob(".cpython-3.14-aarch64.partial-*/root/usr/lib/python3.14/__pycache__/*.pyc")):
        assert building.poll() is None, f"provisioning ended before it could be killed: {building.communicate()}"
        assert time.monotonic() < deadline, "provisioning never reached the standard library's compilation"
        time.sleep(0.2)
    os.killpg(building.pid, signal.SIGKILL)
    building.wait()

    python = provision.provisioned_python("3.14", "aarch64")
    assert not python.exists() and provision.find_python("3.14", "aarch64") is None
    assert list(cache.glob(".cpython-3.14-aarch64.partial-*"))  # what the kill left, out of the way

    again = subprocess.run([sys.executable, "-c", PROVISION], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == str(python)
    machine = subprocess.run([str(python), "-c", "import platform, sqlite3, ssl; print(platform.machine())"],
                             capture_output=True, text=True)
    assert machine.stdout.strip() == "aarch64", machine.stderr
    assert not list(cache.glob(".cpython-3.14-aarch64.partial-*"))  # the killed build's scratch is gone
