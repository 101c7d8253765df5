"""Planning (selection, skip_if, dedupe, ids) and the metrics report built from it."""

from __future__ import annotations

import json

import pytest

from op_manifests.loader import Limits, load_dir
from op_manifests.plan import UnknownModel, build_plan
from op_manifests.report import CaseOutcome, markdown, summarize, write

pytestmark = pytest.mark.unit

ADD = "op: torch.add\n    inputs: [{tensor: {shape: [4]}}, {value: 1}]"
MARKERS = frozenset({"op_layout"})


def _plan(folder, models=(), dedupe=True, backend="eager"):
    return build_plan(
        load_dir(folder, Limits()), models=models, dedupe=dedupe, backend=backend, known_markers=MARKERS
    )


@pytest.fixture
def two_models(manifest_dir):
    manifest_dir(
        "a.yaml",
        f"model: alpha\ncases:\n  - name: add_a\n    {ADD}\n  - name: neg_a\n    op: torch.neg\n    inputs: [{{tensor: {{shape: [4]}}}}]\n",
    )
    return manifest_dir("b.yaml", f"model: beta\ncases:\n  - name: add_b\n    {ADD}\n").parent


def test_same_case_in_two_models_runs_once_under_the_first_models_id(two_models) -> None:
    plan = _plan(two_models)
    assert [item.test_id for item in plan.items] == ["alpha::add_a", "alpha::neg_a"]
    (dup,) = plan.duplicates
    assert (dup.test_id, dup.kept) == ("beta::add_b", "alpha::add_a")


def test_no_dedupe_keeps_every_case(two_models) -> None:
    plan = _plan(two_models, dedupe=False)
    assert [item.test_id for item in plan.items] == ["alpha::add_a", "alpha::neg_a", "beta::add_b"]
    assert plan.duplicates == ()


def test_selecting_a_model_runs_its_cases_even_if_another_model_has_them(two_models) -> None:
    assert [item.test_id for item in _plan(two_models, models=["beta"]).items] == ["beta::add_b"]
    with pytest.raises(UnknownModel, match=r"unknown model\(s\): gamma \(known: alpha, beta\)"):
        _plan(two_models, models=["gamma"])


def test_skip_if_is_decided_per_backend_and_skipped_cases_do_not_hide_duplicates(manifest_dir) -> None:
    skip = "skip_if: {expr: \"backend == 'inductor'\", reason: no inductor kernel}"
    manifest_dir("a.yaml", f"model: alpha\ncases:\n  - name: add_a\n    {skip}\n    {ADD}\n")
    folder = manifest_dir("b.yaml", f"model: beta\ncases:\n  - name: add_b\n    {ADD}\n").parent
    eager = _plan(folder, backend="eager")
    assert [(i.test_id, i.skip_reason) for i in eager.items] == [("alpha::add_a", None)]
    inductor = _plan(folder, backend="inductor")
    assert [(i.test_id, i.skip_reason) for i in inductor.items] == [
        ("alpha::add_a", "no inductor kernel"),
        ("beta::add_b", None),
    ]


def test_model_names_and_markers_are_checked(manifest_dir) -> None:
    manifest_dir(
        "a.yaml", f"model: alpha\ncases:\n  - name: x\n    mark: [op_layout, typo_marker]\n    {ADD}\n"
    )
    folder = manifest_dir("b.yaml", "model: alpha\ncases: []\n").parent
    first, second = _plan(folder).items
    assert first.test_id == "alpha::x" and "unknown marker 'typo_marker'" in first.error
    assert second.test_id == "b.yaml::manifest-error"
    assert "b.yaml:1:8: model 'alpha' is already defined by a.yaml" in second.error


def _outcome(test_id: str, op: str, outcome: str, seconds: float = 0.5) -> CaseOutcome:
    return CaseOutcome(test_id, test_id.split("::")[0], op, outcome, seconds, 0.0, 0.0)


def test_report_has_pass_rates_coverage_dedupe_and_runtimes(two_models, tmp_path) -> None:
    plan = _plan(two_models)
    outcomes = [
        _outcome("alpha::add_a", "torch.add", "passed"),
        _outcome("alpha::neg_a", "torch.neg", "failed", 2.0),
    ]
    summary = summarize(plan, outcomes)
    assert summary["models"]["alpha"]["pass_rate"] == 0.5
    assert summary["ops"]["torch.add"]["pass_rate"] == 1.0 and summary["ops"]["torch.neg"]["pass_rate"] == 0.0
    assert summary["coverage"]["distinct_ops"] == 2
    assert summary["coverage"]["distinct_input_signatures"] == 2
    assert summary["coverage"]["models"]["beta"] == {
        "ops": 1, "input_signatures": 1, "duplicates_not_collected": 1
    }  # fmt: skip
    assert "| beta | 1 | 1 | 1 |" in markdown(summary)
    assert summary["dedupe_stats"] == {
        "valid_cases": 3, "collected": 2, "duplicates_not_collected": 1, "efficiency": 0.3333
    }  # fmt: skip
    assert summary["slowest"][0]["test_id"] == "alpha::neg_a" and summary["runtime_s"] == 2.5
    write(summary, tmp_path / "out")
    assert (
        json.loads((tmp_path / "out" / "op_manifests_report.json").read_text())["models"]["alpha"]["tests"]
        == 2
    )
    text = markdown(summary)
    assert "| `alpha` | 2 | 1 | 1 | 0 | 0 | 50.0% | 2.5 |" in text
    assert "| `torch.neg` | 1 | 0 | 1 | 0 | 0 | 0.0% | 2.0 |" in text
