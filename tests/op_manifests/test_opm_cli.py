"""`pytest op_manifests ...` from the repository root, as users and CI run it."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import REPO, run_pytest

import pytest

pytestmark = pytest.mark.integration


def _ids(text: str) -> list[str]:
    return re.findall(r"test_op\[(.*?)\]", text)


def test_list_models_prints_and_exits_without_running() -> None:
    done = run_pytest("--list-models")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "template: 22 cases (template.yaml)" in lines and "toy_mlp: 20 cases (toy_mlp.yaml)" in lines
    shipped = sorted(path.name for path in (REPO / "op_manifests").glob("*.yaml"))
    assert sorted(line.rsplit("(", 1)[1].rstrip(")") for line in lines) == shipped  # one line per manifest


def test_list_cases_shows_tests_duplicates_and_a_summary() -> None:
    done = run_pytest("--list-cases", "--model", "toy_mlp")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "toy_mlp::embed_tokens  torch.nn.functional.embedding" in lines
    assert (
        "toy_mlp::residual_add_again  torch.add  [duplicate of toy_mlp::residual_add: not collected]" in lines
    )
    assert lines[-1] == "19 tests from 1 manifests; 1 duplicates not collected (dedupe on); 0 errors"
    assert not any(line.startswith("template::") for line in lines)


def test_collection_selects_by_model_by_case_and_by_op() -> None:
    done = run_pytest("--collect-only", "-q", "--model", "template", "-k", "torch.logical_and or aten_view")
    assert _ids(done.stdout) == ["template::op_bool_tensors", "template::aten_view"], done.stdout
    undeduped = run_pytest("--collect-only", "-q", "--model", "toy_mlp", "--no-dedupe")
    assert "toy_mlp::residual_add_again" in _ids(undeduped.stdout)


def test_backend_comes_from_the_option_else_the_environment(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(
        "model: m\ncases:\n  - name: x\n    op: torch.neg\n"
        "    skip_if: {expr: \"backend == 'aot_eager'\", reason: chosen backend is aot_eager}\n"
        "    inputs: [{tensor: {shape: [2]}}]\n"
    )
    env = {**os.environ, "TEST_COMPILE_BACKEND": "aot_eager"}
    run = run_pytest("--manifest-dir", str(tmp_path), "-rs", env=env)
    assert "chosen backend is aot_eager" in run.stdout and "1 skipped" in run.stdout
    overridden = run_pytest("--manifest-dir", str(tmp_path), "--compile-backend", "eager", env=env)
    assert "1 passed" in overridden.stdout, overridden.stdout
    bad = run_pytest("--compile-backend", "tvm", "--collect-only")
    assert bad.returncode == 4 and "'tvm' is not one of eager, aot_eager, inductor" in bad.stderr


def test_unknown_model_is_a_usage_error() -> None:
    done = run_pytest("--model", "no_such_model", "--collect-only")
    assert done.returncode == 4
    assert "unknown model(s): no_such_model (known: " in done.stderr and "toy_mlp" in done.stderr


def test_xdist_run_has_the_same_ids_records_properties_and_writes_the_report(tmp_path: Path) -> None:
    models = ("--model", "template", "--model", "toy_mlp")  # the hand-written manifests: fast, every feature
    serial = run_pytest("--collect-only", "-q", *models)
    junit, report = tmp_path / "junit.xml", tmp_path / "report"
    parallel = run_pytest("-n", "2", f"--junitxml={junit}", "--manifest-report", str(report), *models)
    assert parallel.returncode == 0, parallel.stdout[-3000:]
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    assert sorted(_ids(serial.stdout)) == sorted(_ids(" ".join(c.get("name", "") for c in cases)))
    assert len(cases) == 41  # 22 + 20 cases, one toy_mlp duplicate not collected
    props = {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")} for c in cases}
    add = props["test_op[template::add_basic]"]
    assert add["model"] == "template" and add["op"] == "torch.add" and add["backend"] == "eager"
    assert float(add["max_abs_err"]) == 0.0 and "max_rel_err" in add
    assert add["manifest"].endswith("op_manifests/template.yaml:12:5")
    summary = json.loads((report / "op_manifests_report.json").read_text())
    assert summary["models"]["toy_mlp"]["pass_rate"] == 1.0 and summary["totals"]["tests"] == 41
    assert summary["dedupe_stats"]["duplicates_not_collected"] == 1
    assert "## Pass rate per op" in (report / "op_manifests_report.md").read_text()
    assert "op manifests" in parallel.stdout and "pass rate 100.0%" in parallel.stdout
