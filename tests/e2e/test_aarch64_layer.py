"""An emulated interpreter's shared layer, for real but small: this host's pip downloads the aarch64
wheels into a wheelhouse and installs them into the layer, the native interpreter compiles them, and
the emulated interpreter imports them (the 3 GB torch layer is built the same way, by the same code)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.configure import environments, provision
from harness.configure.architectures import (ARCHITECTURES, emulation_environment, emulator_command, emulator_ready,
                                             host_machine)

AARCH64 = ARCHITECTURES["aarch64"]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(host_machine() == AARCH64.machine, reason="aarch64 is native here: nothing is emulated"),
    pytest.mark.skipif(os.geteuid() != 0 and not emulator_ready(AARCH64),
                       reason=f"emulating aarch64 needs qemu-user and binfmt_misc, set up as root: {emulator_command(AARCH64)}"),
]


def test_an_emulated_layer_holds_aarch64_wheels_installed_and_compiled_natively(tmp_path, monkeypatch):
    # the real cache's interpreters (the native one compiles); the layer and its wheelhouse go to a scratch cache
    python, native = provision.ensure_python("3.14", "aarch64"), provision.ensure_python("3.14")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3.14").symlink_to(native)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    layer = environments.ensure_layer(python, ("pyyaml",))  # a binary wheel: its platform tag must be aarch64's
    assert layer.built_seconds is not None and (layer.root / "layer.json").is_file()
    [wheel] = (tmp_path / "cache" / "wheelhouses").glob("aarch64-cp314-*/*.whl")
    assert "aarch64" in wheel.name and "cp314" in wheel.name
    assert len(list(layer.site_packages.glob("yaml/_yaml.cpython-314-aarch64-linux-gnu.so"))) == 1  # libyaml, for arm64
    assert list(layer.site_packages.glob("yaml/__pycache__/__init__.cpython-314.pyc"))  # compiled, not left to qemu
    done = subprocess.run([str(layer.root / "bin" / "python"), "-c",
                           "import platform, yaml; print(platform.machine(), yaml.__with_libyaml__, yaml.__file__)"],
                          capture_output=True, text=True)
    assert done.stdout.split() == ["aarch64", "True", str(layer.site_packages / "yaml" / "__init__.py")], done.stderr
    assert environments.ensure_layer(python, ("pyyaml",)).built_seconds is None  # reused, not rebuilt


POLLS = """
import sys, tempfile
from pathlib import Path
from harness.run.events import EventStream

def rss_mb():
    return next(int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("VmRSS:"))

with tempfile.TemporaryDirectory() as folder:
    stream = EventStream(Path(folder) / "events.jsonl")
    (Path(folder) / "events.jsonl").write_text('{"event": "collected", "time": 0, "count": 1}\\n')
    stream.read_new()
    before = rss_mb()
    for _ in range(200):  # 40 s of a runner polling a test process that writes nothing
        stream.read_new()
    print(len(stream.events), round(rss_mb() - before, 1))
"""


def test_an_emulated_runner_polling_its_event_stream_keeps_its_memory():
    """The runner reads each test process's event stream 5 times a second. Under qemu-user 7.2 a read
    that asked for a 256 MiB buffer leaked about 1.4 MB each time: long emulated runs were OOM-killed
    at 14 GB. 200 polls of an idle stream, in the emulated interpreter, now grow it by under 10 MB."""
    python = provision.ensure_python("3.14", "aarch64")
    done = subprocess.run([str(python), "-c", POLLS], capture_output=True, text=True, cwd=Path(__file__).parents[2],
                          env={**os.environ, **emulation_environment(python), "PYTHONPATH": str(Path(__file__).parents[2])})
    events, grown = done.stdout.split()
    assert events == "1" and float(grown) < 10, done.stderr
