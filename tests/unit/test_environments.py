"""A session's environment belongs to one nox run at a time (`environments.sole_run`)."""

from __future__ import annotations

import os

import pytest

from harness.configure.environments import sole_run
from harness.errors import HarnessError

pytestmark = pytest.mark.unit


def test_a_second_run_in_a_session_environment_is_one_line_naming_the_first_and_the_way_out(tmp_path):
    environment = tmp_path / ".nox" / "stock-p0"
    with sole_run(environment):
        with pytest.raises(HarnessError) as raised, sole_run(environment):
            pass
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{environment}: another nox run of this session "
                                                      f"(pid {os.getpid()})") and "--envdir" in message, message
    with sole_run(environment):  # the first run ended: the environment is free again
        pass
