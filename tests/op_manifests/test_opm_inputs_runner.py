"""Building inputs (presets, strides, seeds, files) and judging a case against CPU eager."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from op_manifests.inputs import InputError, build_arguments
from op_manifests.loader import CaseSpec, Limits, load_manifest
from op_manifests.runner import CaseError, compare, max_errors, run_case

pytestmark = pytest.mark.unit

DEFAULT_LIMITS = Limits()


@pytest.fixture
def case_from(manifest_dir):
    """One CaseSpec from the YAML text of a single case."""

    def load(case_yaml: str, limits: Limits = DEFAULT_LIMITS) -> CaseSpec:
        text = "model: m\ndefault: {seed: 5}\ncases:\n" + "".join(
            f"  {line}\n" for line in case_yaml.splitlines()
        )
        manifest = load_manifest(manifest_dir("m.yaml", text), limits)
        assert not manifest.errors, [str(e) for _, e in manifest.errors]
        return manifest.cases[0]

    return load


def test_presets_give_the_described_shape_and_layout(case_from) -> None:
    case = case_from(
        "- name: a\n  op: torch.add\n  inputs:\n"
        "    - tensor: {shape: [2, 3, 8], preset: noncontig_slice, preset_args: {dim: 1, step: 2}}\n"
        "    - tensor: {shape: [2, 3, 8], preset: transpose_view, preset_args: {dim0: 1, dim1: 2}}\n"
        "    - tensor: {shape: [2, 3, 8], preset: expand, preset_args: {dims: [0]}}\n"
        "    - tensor: {shape: [3, 4], stride: [1, 5], storage_offset: 2}\n"
    )
    sliced, transposed, expanded, strided = build_arguments(case, Limits())[0]
    assert all(t.shape == (2, 3, 8) for t in (sliced, transposed, expanded))
    assert sliced.stride() == (48, 16, 1) and not sliced.is_contiguous()
    assert transposed.stride() == (24, 1, 3) and not transposed.is_contiguous()
    assert expanded.stride() == (0, 8, 1)
    assert strided.shape == (3, 4) and strided.stride() == (1, 5) and strided.storage_offset() == 2


def test_inputs_are_reproducible_from_the_seed_and_fresh_each_time(case_from) -> None:
    case = case_from("- name: a\n  op: torch.neg\n  inputs: [{tensor: {shape: [64]}}, {value: [1, 2]}]")
    (first, value1), _ = build_arguments(case, Limits())
    (second, value2), _ = build_arguments(case, Limits())
    assert torch.equal(first, second) and first.data_ptr() != second.data_ptr()
    assert value1 == value2 and value1 is not value2  # an op mutating a list cannot leak
    (other, _), _ = build_arguments(dataclasses.replace(case, seed=6), Limits())
    assert not torch.equal(first, other)


def test_init_kinds_respect_their_arguments(case_from) -> None:
    case = case_from(
        "- name: a\n  op: torch.add\n  inputs:\n"
        "    - tensor: {shape: [1000], init: randint, init_args: {low: 3, high: 5}, dtype: int64}\n"
        "    - tensor: {shape: [1000], init: uniform, init_args: {low: -2.0, high: -1.0}}\n"
        "    - tensor: {shape: [1000], dtype: bool}\n"
        "    - tensor: {init: data, init_args: {values: [[1.5, .nan], [-.inf, 0]]}, dtype: fp64}\n"
        "    - tensor: {shape: [2, 3], init: arange, dtype: bf16}\n"
    )
    ints, uniform, flags, data, arange = build_arguments(case, Limits())[0]
    assert set(ints.tolist()) == {3, 4} and ints.dtype == torch.int64
    assert uniform.min() >= -2.0 and uniform.max() < -1.0 and uniform.dtype == torch.float32
    assert flags.dtype == torch.bool and 400 < int(flags.sum()) < 600  # "50% chance of True"
    assert data.dtype == torch.float64 and data[0, 0] == 1.5 and math.isnan(data[0, 1])
    assert arange.tolist() == [[0, 1, 2], [3, 4, 5]] and arange.dtype == torch.bfloat16


def test_file_inputs_are_checked_after_loading(case_from, manifest_dir) -> None:
    folder = manifest_dir("placeholder.yaml", "").parent
    torch.save({"t": torch.ones(4, 4)}, folder / "dict.pt")
    case = case_from("- name: a\n  op: torch.neg\n  inputs: [{file: {path: dict.pt, key: t}}]")
    assert torch.equal(build_arguments(case, Limits())[0][0], torch.ones(4, 4))
    with pytest.raises(InputError, match=r"m.yaml:\d+:\d+: case 'a': file 'dict.pt': tensor has 16 elements"):
        build_arguments(case, Limits(max_tensor_elements=8))
    no_key = case_from("- name: a\n  op: torch.neg\n  inputs: [{file: dict.pt}]")
    with pytest.raises(InputError, match="holds dict, expected a tensor"):
        build_arguments(no_key, Limits())
    (folder / "dict.pt").unlink()
    with pytest.raises(InputError, match="no such file"):
        build_arguments(case, Limits())


def test_a_passing_case_reports_its_errors(case_from) -> None:
    case = case_from(
        "- name: a\n  op: torch.nn.functional.softmax\n  attrs: {dim: -1}\n  inputs: [{tensor: {shape: [4, 8]}}]"
    )
    result = run_case(case, "eager", Limits())
    assert result.mismatch is None and result.max_abs_err == 0.0 and result.max_rel_err == 0.0


def test_aot_eager_backend_runs_the_op_compiled(case_from) -> None:
    case = case_from(
        "- name: a\n  op: torch.matmul\n  inputs:\n"
        "    - tensor: {shape: [4, 8]}\n"
        "    - tensor: {shape: [8, 3], preset: transpose_view}\n"
    )
    result = run_case(case, "aot_eager", Limits())
    assert result.mismatch is None and result.max_abs_err is not None and result.max_abs_err < 1e-5


def test_expected_errors_must_happen_on_both_sides(case_from) -> None:
    raising = case_from(
        "- name: a\n  op: torch.view\n  expects_error: {type: RuntimeError, match: view}\n  inputs:\n"
        "    - tensor: {shape: [2, 3, 8], preset: noncontig_slice, preset_args: {dim: 1}}\n"
        "    - value: [2, 24]\n"
    )
    assert run_case(raising, "eager", Limits()).mismatch is None
    assert run_case(raising, "aot_eager", Limits()).mismatch is None  # wrapped by dynamo, still matched
    wrong_match = dataclasses.replace(
        raising, expects_error=dataclasses.replace(raising.expects_error, match="zzz")
    )
    assert "expected RuntimeError matching 'zzz'" in run_case(wrong_match, "eager", Limits()).mismatch
    quiet = case_from(
        "- name: a\n  op: torch.neg\n  expects_error: {type: ValueError}\n  inputs: [{tensor: {shape: [2]}}]"
    )
    assert (
        "CPU eager reference returned normally; expected ValueError"
        in run_case(quiet, "eager", Limits()).mismatch
    )


def test_unexpected_errors_and_unknown_ops_fail_clearly(case_from) -> None:
    case = case_from("- name: a\n  op: torch.add\n  inputs: [{tensor: {shape: [2]}}, {tensor: {shape: [3]}}]")
    assert run_case(case, "eager", Limits()).mismatch.startswith(
        "CPU eager reference raised RuntimeError: The size"
    )
    unknown = case_from("- name: a\n  op: torch.not_an_op\n  inputs: [{tensor: {shape: [2]}}]")
    with pytest.raises(
        CaseError, match=r"m.yaml:5:9: case 'a': unknown op 'torch.not_an_op': no such tensor op"
    ):
        run_case(unknown, "eager", Limits())


def test_compare_detects_drift_and_measures_it(case_from) -> None:
    case = case_from(
        "- name: a\n  op: torch.neg\n  rtol: 0.0\n  atol: 1.0e-3\n  inputs: [{tensor: {shape: [2]}}]"
    )
    expected = torch.tensor([1.0, 0.0, float("nan"), float("inf")])
    close = torch.tensor([1.0005, 0.0, float("nan"), float("inf")])
    result = compare((expected, 3), (close, 3), case)
    assert result.mismatch is None and result.max_abs_err == pytest.approx(5e-4, rel=1e-3)
    drift = compare(expected, torch.tensor([1.1, 0.01, 0.0, float("inf")]), case)
    assert "output: Tensor-likes are not close" in drift.mismatch
    assert drift.max_abs_err == math.inf  # a NaN that became a number is never hidden
    assert max_errors(torch.tensor([2.0, 0.0]), torch.tensor([2.5, 0.1])) == (0.5, math.inf)
    assert "expected a sequence of 2" in compare((expected, expected), expected, case).mismatch


def test_metadata_compare_checks_shape_dtype_and_strides_only(case_from) -> None:
    case = case_from("- name: a\n  op: torch.empty\n  compare: metadata\n  inputs: [{value: 2}, {value: 3}]")
    assert run_case(case, "eager", Limits()).mismatch is None
    base = torch.zeros(2, 3)
    assert compare(base, torch.ones(2, 3), case).mismatch is None
    assert "stride differs" in compare(base, torch.zeros(3, 2).t(), case).mismatch
    assert "dtype differs" in compare(base, torch.zeros(2, 3, dtype=torch.float64), case).mismatch
