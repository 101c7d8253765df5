"""Provisioning for another architecture against the real registries: what cannot be had is one line
naming it (Debian's archive for the arm64 packages, PyPI for the aarch64 wheels)."""

from __future__ import annotations

import shutil

import pytest

from harness.configure import environments, provision
from harness.configure.architectures import ARCHITECTURES
from harness.configure.provision import ProvisionError

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("apt-get"), reason="needs apt-get (a Debian-like host)")]


def test_a_missing_arm64_package_is_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(provision, "DEBIAN_PACKAGES", [*provision.DEBIAN_PACKAGES[:1], "python3.14-no-such-package"])
    with pytest.raises(ProvisionError) as raised:
        provision._download_debs(tmp_path, provision._system_mirror(), ARCHITECTURES["aarch64"])
    message = str(raised.value)
    assert "\n" not in message and "(arm64)" in message and "python3.14-no-such-package" in message, message


def test_a_missing_aarch64_wheel_is_one_line_naming_it_and_nothing_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    with pytest.raises(ProvisionError) as raised:
        environments.ensure_wheelhouse("aarch64", "3.14", ("cinderx==1999.1.1.0",))
    message = str(raised.value)
    assert "\n" not in message and message.startswith("no aarch64 wheel for cp314: ") and "cinderx==1999.1.1.0" in message, message
    assert not list((tmp_path / "wheelhouses").glob("*/wheelhouse.json"))  # not marked complete: retried next time
