"""Loading manifests: the RFC schema, exact error locations, and per-case isolation of errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from op_manifests.loader import Limits, TensorSpec, confined_path, load_dir, load_manifest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def _errors(manifest) -> list[str]:
    return [str(error) for _, error in manifest.errors]


def test_shipped_manifests_load_without_errors() -> None:
    manifests = {m.model: m for m in load_dir(REPO / "op_manifests", Limits())}
    assert set(manifests) >= {"template", "toy_mlp", "gpt_oss", "granite_moe_hybrid", "vit", "whisper"}
    for manifest in manifests.values():
        assert _errors(manifest) == []
    assert len(manifests["toy_mlp"].cases) >= 15


def test_template_uses_every_schema_feature() -> None:
    template = load_manifest(REPO / "op_manifests" / "template.yaml", Limits())
    cases = {case.name: case for case in template.cases}
    text = (REPO / "op_manifests" / "template.yaml").read_text()
    for key in ("init_args:", "preset_args:", "stride:", "storage_offset:", "expects_error:", "mark:",
                "skip_if:", "compare: metadata", "description:", "attrs:", "- py:", "- file:",
                "tensor_list:", "- dtype:", "seed:", "rtol:", "atol:"):  # fmt: skip
        assert key in text, key
    for preset in ("noncontig_slice", "transpose_view", "expand"):
        assert any(a.preset == preset for c in cases.values() for a in c.args if isinstance(a, TensorSpec))
    inits = {a.init for c in cases.values() for a in c.args if isinstance(a, TensorSpec)}
    assert {"rand", "randn", "zeros", "ones", "arange", "randint", "uniform", "data"} <= inits
    assert cases["add_basic"].dtype == "float16" and cases["add_basic"].seed == 123  # defaults
    assert cases["sum_explicit_strides"].dtype == "float32" and cases["sum_explicit_strides"].seed == 7


def test_error_names_file_line_column_and_case_in_one_line(manifest_dir) -> None:
    path = manifest_dir(
        "x.yaml",
        "model: m\ncases:\n  - name: foo\n    op: torch.add\n    inputs:\n      - tensor: {shapee: [2]}\n",
    )
    (error,) = _errors(load_manifest(path, Limits(), display_root=path.parent.parent))
    assert error == (
        "manifests/x.yaml:6:18: case 'foo': unknown key 'shapee' in tensor "
        "(allowed: shape, init, init_args, dtype, preset, preset_args, stride, storage_offset)"
    )


def test_a_bad_case_does_not_take_the_others_down(manifest_dir) -> None:
    path = manifest_dir(
        "x.yaml",
        "model: m\ncases:\n"
        "  - {name: ok1, op: torch.neg, inputs: [{tensor: {shape: [2]}}]}\n"
        "  - {name: bad, op: torch.neg, inputs: [{tensor: {shape: [-2]}}]}\n"
        "  - {name: ok2, op: torch.neg, inputs: [{tensor: {shape: [3]}}]}\n",
    )
    manifest = load_manifest(path, Limits())
    assert [case.name for case in manifest.cases] == ["ok1", "ok2"]
    assert [(index, error.case) for index, error in manifest.errors] == [(1, "bad")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model: m\ncases: []\nextra: 1\n", "unknown key 'extra' in manifest"),
        ("cases: []\n", "missing required key 'model'"),
        ("model: m\ndefault: {dtype: fp8}\ncases: []\n", "unknown dtype 'fp8'"),
        ("model: 'bad name'\ncases: []\n", "model must be 1-100 chars"),
        ("model: m\ncases: {a: 1}\n", "'cases' must be a list"),
        ("", "empty manifest"),
    ],
)
def test_header_problems_reject_the_whole_file(manifest_dir, text: str, message: str) -> None:
    manifest = load_manifest(manifest_dir("x.yaml", text), Limits())
    assert manifest.cases == ()
    ((index, error),) = manifest.errors
    assert index == -1 and message in str(error)


def test_limits_are_configurable(manifest_dir) -> None:
    path = manifest_dir(
        "x.yaml", "model: m\ncases:\n  - {name: a, op: torch.neg, inputs: [{tensor: {shape: [4, 4]}}]}\n"
    )
    assert load_manifest(path, Limits()).cases
    (error,) = _errors(load_manifest(path, Limits(max_tensor_elements=15)))
    assert "tensor needs 16 elements (limit 15" in error
    (error,) = _errors(load_manifest(path, Limits(max_manifest_bytes=10)))
    assert "bytes (limit 10)" in error


@pytest.mark.parametrize(
    ("tensor", "message"),
    [
        ("{init: data, init_args: {values: [[1, 2], [3]]}}", "rectangular"),
        ("{shape: [3], init: data, init_args: {values: [1, 2]}}", "does not match"),
        ("{shape: [2], init: randint}", "needs init_args: {high: N}"),
        ("{shape: [2], init: zeros, init_args: {high: 3}}", "takes no init_args"),
        ("{shape: [2, 3], preset: transpose_view, preset_args: {dim0: 0, dim1: 5}}", "dim 5 is out of range"),
        ("{shape: [2, 3], preset: expand, stride: [1, 1]}", "either a preset or stride"),
        ("{shape: [2, 3], stride: [1]}", "stride has 1 entries but shape has 2"),
        ("{shape: [2], storage_offset: 3}", "needs an explicit stride"),
    ],
)
def test_tensor_descriptions_are_checked(manifest_dir, tensor: str, message: str) -> None:
    path = manifest_dir(
        "x.yaml", f"model: m\ncases:\n  - name: a\n    op: torch.neg\n    inputs: [{{tensor: {tensor}}}]\n"
    )
    (error,) = _errors(load_manifest(path, Limits()))
    assert message in error


def test_presets_and_strides_size_the_storage(manifest_dir) -> None:
    path = manifest_dir(
        "x.yaml",
        "model: m\ncases:\n  - name: a\n    op: torch.add\n    inputs:\n"
        "      - tensor: {shape: [2, 3, 8], preset: noncontig_slice, preset_args: {dim: -2, step: 2}}\n"
        "      - tensor: {shape: [2, 3, 8], preset: transpose_view, preset_args: {dim0: 1, dim1: 2}}\n"
        "      - tensor: {shape: [2, 3, 8], preset: expand, preset_args: {dims: [0, -1]}}\n"
        "      - tensor: {shape: [3, 4], stride: [1, 5], storage_offset: 2}\n",
    )
    (case,) = load_manifest(path, Limits()).cases
    assert [arg.base_shape for arg in case.args] == [(2, 6, 8), (2, 8, 3), (1, 3, 1), (2 + 1 + 2 + 15,)]
    assert case.args[0].preset_args == (("dim", 1), ("step", 2))  # normalized: -2 -> 1


def _signature(manifest_dir, name: str, case: str) -> str:
    path = manifest_dir(f"{name}.yaml", f"model: {name}\ncases:\n  - {case}\n")
    (loaded,) = load_manifest(path, Limits()).cases
    return loaded.signature


def test_dedupe_signature_ignores_names_models_and_seeds_but_not_inputs(manifest_dir) -> None:
    base = _signature(
        manifest_dir, "a", "{name: x, op: aten.view, inputs: [{tensor: {shape: [4]}}, {value: [2, 2]}]}"
    )
    same = _signature(
        manifest_dir,
        "b",
        "{name: y, op: torch.ops.aten.view, seed: 9, inputs: [{tensor: {shape: [4]}}, {py: '[2, 2]'}]}",
    )
    other_dtype = _signature(
        manifest_dir,
        "c",
        "{name: x, op: aten.view, dtype: bf16, inputs: [{tensor: {shape: [4]}}, {value: [2, 2]}]}",
    )
    tuple_arg = _signature(
        manifest_dir, "d", "{name: x, op: aten.view, inputs: [{tensor: {shape: [4]}}, {py: '(2, 2)'}]}"
    )
    assert base == same
    assert len({base, other_dtype, tuple_arg}) == 3


def test_file_paths_are_confined_to_the_manifest_folder(tmp_path: Path) -> None:
    folder = tmp_path / "manifests"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "x.pt").write_bytes(b"")
    (tmp_path / "outside.pt").write_bytes(b"")
    os.symlink(tmp_path / "outside.pt", folder / "link.pt")
    assert confined_path(folder, "data/x.pt") == (folder / "data" / "x.pt").resolve()
    for bad, reason in [
        ("../outside.pt", "'..'"),
        ("data/../../outside.pt", "'..'"),
        (str(tmp_path / "outside.pt"), "absolute"),
        ("link.pt", "outside the manifest's folder"),
        ("missing.pt", "no such file"),
    ]:
        with pytest.raises(ValueError, match=reason):
            confined_path(folder, bad)
