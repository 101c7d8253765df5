"""P3 without a PyTorch checkout, as a user runs it: torch.compile over PyTorch's databases inside
torch (harness/torch_suites/p3/), through nox, under stock and cinderx-jit (threshold 1000).

One OpInfo written in Python (`nn.functional.layer_norm`, so it has the three hot states) runs
through all three backends, selected as a user narrows P3 (its op stages, the entry by name); the verdict must be valid, list the hot-state bypass of a user's
function and module as known regressions, and nothing new.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_cinderx_end_to_end import nox

pytestmark = pytest.mark.e2e

ENTRY = "nn.functional.layer_norm"
BACKENDS = ("eager", "aot_eager", "inductor")


@pytest.fixture(scope="module")
def p3(tmp_path_factory: pytest.TempPathFactory) -> dict:
    results = tmp_path_factory.mktemp("p3")
    env = {"HARNESS_RESULTS": str(results)}
    stages = ("ops-eager", "ops-aot-eager", "ops-inductor")
    done = nox("-s", "stock-p3", "cinderx-jit-p3", "--", "--stage", *stages, "--select", ENTRY, "--jobs", "2", env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = nox("-s", "diff", env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return json.loads((results / "reports" / "report.json").read_text())


def test_p3_runs_every_backend_and_gives_a_valid_verdict(p3: dict):
    assert p3["valid"] and p3["problems"] == [], p3["problems"]
    assert p3["summary"]["regressions"] == 0
    modules = {row["module"]: row for row in p3["modules"]}
    for backend in BACKENDS:
        row = modules[f"harness.torch_suites.p3.test_compile_ops_{backend}"]
        assert row["baseline"].get("passed", 0) >= 4, row  # the compile test(s) and the three hot states
        assert row["jit_compiled"] > 0, row


def test_the_hot_state_bypass_is_known_and_the_entry_itself_is_still_captured(p3: dict):
    known = {entry["test"] for entry in p3["known_regressions"]}
    for backend in BACKENDS:
        for state in ("function_wrapper", "module_wrapper"):
            assert any(f"test_hot_{state}_{backend}_nn_functional_layer_norm" in test for test in known), known
        assert not any(f"test_hot_entry_{backend}_nn_functional_layer_norm" in test for test in known), known
