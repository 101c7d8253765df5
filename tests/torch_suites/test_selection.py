"""The bundled torch suites, collected for real with this interpreter's torch: the catalog names
what each module covers, HARNESS_ENTRIES narrows collection to exactly the named entries, and a
module collects the same tests run as a script (`--use-pytest`) as under `python -m pytest`.

Collection only: running the suites is the tiers' job. One process per question keeps this file
to a few `import torch`s (about half a minute on two cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from harness.protocol import Env
from harness.torch_suites.shared.catalog import TIERS

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
P1 = "harness/torch_suites/p1"
P2 = "harness/torch_suites/p2"
BREADTH = "harness/torch_suites/breadth"


def run(*args: str, entries: str | None = None, ci: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """One process; `ci` is the CI variable torch's run_tests() reads (unset unless given, so the
    answers are the same on a laptop and in a CI job)."""
    env = {key: value for key, value in os.environ.items() if key not in (Env.ENTRIES, "CI")}
    if entries is not None:
        env[Env.ENTRIES] = entries
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-bb", *args], cwd=cwd, env=env, capture_output=True, text=True)


def node_ids(done: subprocess.CompletedProcess[str]) -> set[str]:
    return {line for line in done.stdout.splitlines() if "::" in line}


@pytest.fixture(scope="module")
def catalog() -> dict[str, list[str]]:
    done = run("-m", "harness.torch_suites.shared.catalog")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_catalog_lists_every_bundled_module_with_the_entries_it_covers(catalog):
    assert set(catalog) == {path.relative_to(ROOT).as_posix() for tier in TIERS
                            for path in ROOT.glob(f"harness/torch_suites/{tier}/test_*.py")}
    assert "add" in catalog[f"{BREADTH}/test_ops_gradients.py"] and "add" in catalog[f"{BREADTH}/test_ops_fwd_gradients.py"]
    assert {"add", "div", "div.floor_rounding"} <= set(catalog[f"{P1}/test_ops_consistency.py"])
    assert "nn.Linear" in catalog[f"{P1}/test_module_db.py"] and "nn.Linear" in catalog[f"{P1}/test_nn_common.py"]
    assert "Adam" in catalog[f"{P1}/test_optim_db.py"]
    assert catalog[f"{P1}/test_fx_pass_manager.py"] == ["TestPassManager"]
    assert all(catalog[f"{P2}/test_rpc_{index}.py"] == ["RpcTest"] for index in (1, 2, 3, 4, 5))
    assert catalog[f"{P2}/test_distributed_gloo_1.py"] == ["DistributedTest"]


def test_entries_narrow_collection_to_exactly_the_named_entries():
    files = [f"{P1}/test_ops_consistency.py", f"{P1}/test_module_db.py", f"{P1}/test_ops_reference.py",
             f"{P2}/test_rpc_modules.py"]
    done = run("-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files,
               entries="add, nn.Linear,ParameterServerTest")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    consistency, module_db = f"{P1}/test_ops_consistency.py::TestCommonCPU", f"{P1}/test_module_db.py::TestModuleCPU"
    assert node_ids(done) == {
        f"{consistency}::test_noncontiguous_samples_add_cpu_float32",
        f"{consistency}::test_variant_consistency_eager_add_cpu_float32",
        *(f"{module_db}::{test}_nn_Linear_cpu_float32" for test in
          ("test_forward", "test_repr", "test_pickle", "test_non_contiguous_tensors")),
        f"{module_db}::test_grad_nn_Linear_cpu_float64",
        f"{P1}/test_ops_reference.py::TestBinaryUfuncsCPU::test_reference_numerics_add_cpu_float32",
        f"{P2}/test_rpc_modules.py::TensorPipeParameterServerTest::test_batch_updating_parameter_server",
    }


def test_a_module_without_the_named_entries_collects_nothing_and_fails_nothing():
    done = run("-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", f"{P1}/test_optim_db.py",
               entries="nn.Linear")
    assert done.returncode == 5, done.stdout[-3000:]  # pytest's "no tests collected", not an error
    assert node_ids(done) == set()


def test_script_mode_collects_what_pytest_collects():
    file = f"{P1}/test_nn_common.py"
    as_script = run(file, "--use-pytest", "--collect-only", "-q", "-p", "no:cacheprovider", entries="nn.Linear")
    under_pytest = run("-m", "pytest", file, "--collect-only", "-q", "-p", "no:cacheprovider", entries="nn.Linear")
    assert as_script.returncode == under_pytest.returncode == 0, as_script.stdout[-2000:] + as_script.stderr[-2000:]
    assert node_ids(as_script) == node_ids(under_pytest) == {
        f"{file}::TestNN::test_Linear", f"{file}::TestNN::test_Linear_no_batch_dim", f"{file}::TestNN::test_Linear_no_bias"}


def test_script_mode_in_a_ci_job_writes_the_junit_report_pytorchs_ci_reads(tmp_path):
    """With CI set, run_tests() passes --junit-xml-reruns=PATH (PyTorch's conftest's option): the
    script run still works without that conftest, and the report lists the tests it ran."""
    file = ROOT / P1 / "test_nn_common.py"
    done = run(str(file), "--use-pytest", "-q", "-p", "no:cacheprovider", "-k", "test_Linear_no_bias",
               entries="nn.Linear", ci="true", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [report] = (tmp_path / "test-reports").rglob("*.xml")
    cases = JUnitXml.fromfile(str(report))
    assert [(case.classname, case.name, case.result) for suite in cases for case in suite] == [
        ("TestNN", "test_Linear_no_bias", [])]


def test_tier_breadth_runs_pytorchs_checks_of_an_entry_in_every_dtype_pytorch_runs_them_in():
    """`add` and its reference `_refs.add` in tier breadth: PyTorch's class and test names, over the
    dtypes PyTorch's own files give each check (P1: float32, or float64 for gradients), every module
    and class of the tier with tests; its gradient checks pass in both dtypes."""
    done = run("-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", BREADTH, entries="add,_refs.add")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    def ids(module: str, cls: str, tests: dict[str, tuple[str, ...]], entry: str = "add") -> set[str]:
        """Node ids of `tests` (name -> dtypes; an empty dtype: a test without one) for `entry`."""
        return {f"{BREADTH}/{module}::{cls}CPU::{test}_{entry.replace('.', '_')}_cpu{'_' + dtype if dtype else ''}"
                for test, dtypes in tests.items() for dtype in dtypes}

    gradients = ids("test_ops_gradients.py", "TestBwdGradients", dict.fromkeys(
        ("test_fn_grad", "test_fn_gradgrad", "test_fn_fail_gradgrad", "test_inplace_grad", "test_inplace_gradgrad"),
        ("float64", "complex128")))
    forward = ids("test_ops_fwd_gradients.py", "TestFwdGradients", dict.fromkeys(
        ("test_forward_mode_AD", "test_inplace_forward_mode_AD", "test_fn_fwgrad_bwgrad"), ("float64", "complex128")))
    common = ids("test_ops_consistency.py", "TestCommon", {
        "test_noncontiguous_samples": ("float32", "int64", "complex64"),
        "test_variant_consistency_eager": ("float32", "complex64")})
    more_common = ids("test_ops_common.py", "TestCommon", {
        "test_dtypes": ("",), "test_errors": ("",), "test_complex_half_reference_testing": ("complex32",),
        "test_non_standard_bool_values": ("bool",), "test_out_requires_grad_error": ("float32", "complex64"),
        "test_meta_consistency_out_dtype_mismatch": ("float32",), "test_multiple_devices": ("float32", "int64")}) | ids("test_ops_common.py", "TestCommon",
                                                               {"test_dtypes": ("",)}, "_refs.add")
    every_dtype = ("bfloat16", "bool", "complex128", "complex32", "complex64", "float16", "float32", "float64",
                   "int16", "int32", "int64", "int8", "uint8")
    refs = ids("test_ops_refs.py", "TestCommon", {
        "test_python_ref": every_dtype, "test_python_ref_torch_fallback": every_dtype,
        "test_python_ref_meta": every_dtype, "test_python_ref_errors": ("",), "test_out": ("float32",),
        "test_out_warning": ("",)},
        "_refs.add") | {f"{BREADTH}/test_ops_refs.py::TestCommonCPU::test_python_ref_executor__refs_add_executor_aten_cpu_{dtype}"
                        for dtype in every_dtype}
    math_bits_tests = {"test_conj_view": ("complex64",), "test_neg_view": ("float64",), "test_neg_conj_view": ("complex128",)}
    math_bits = (ids("test_ops_math_bits.py", "TestMathBits", math_bits_tests)
                 | ids("test_ops_math_bits.py", "TestMathBits", math_bits_tests, "_refs.add"))
    composite = ids("test_ops_composite.py", "TestCompositeCompliance", dict.fromkeys(
        ("test_operator", "test_backward", "test_forward_ad", "test_cow_input", "test_view_replay"), ("float32",)))
    fake = ids("test_ops_fake.py", "TestFakeTensor", dict.fromkeys(
        ("test_pointwise_ops", "test_fake", "test_fake_autocast", "test_fake_crossref_backward_no_amp",
         "test_fake_crossref_backward_amp"), ("float32",)))
    tags = ids("test_ops_tags.py", "TestTags", {"test_tags": ("float32",)}) | ids(
        "test_ops_tags.py", "TestTags", {"test_tags": ("float32",)}, "_refs.add")
    refs_info = {f"{BREADTH}/test_ops_refs_info.py::TestRefsOpsInfoCPU::{test}_op__refs_add_cpu"
                 for test in ("test_refs_are_in_python_ref_db", "test_refs_are_in_decomp_table")}
    scalars = {f"{BREADTH}/test_ops_scalars.py::TestForwardADWithScalarsCPU::test_0d_tensor_with_python_scalar_add_cpu_float32"}
    # no test_numpy_ref, test_compare_cpu, test_promotes_int_to_float, test_strided_layout,
    # test_reduction_ops_reduce, test_out_integral_dtype: add is a ufunc with a NumPy reference that
    # keeps integers, not a factory nor a reduction
    assert node_ids(done) == (gradients | forward | common | more_common | refs | math_bits | composite | fake
                              | tags | refs_info | scalars)

    ran = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "test_fn_grad_add or test_forward_mode_AD_add",
              f"{BREADTH}/test_ops_gradients.py", f"{BREADTH}/test_ops_fwd_gradients.py", entries="add")
    assert ran.returncode == 0 and "4 passed" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-3000:]


def test_tier_breadth_runs_pytorchs_module_and_optimizer_checks_that_p1_does_not():
    """nn.Linear and Adam in breadth's test_modules.py and test_optim.py: PyTorch's test names, in
    the dtypes PyTorch's `@modules` / `@optims` give, none of P1's tests again (P1: float32, and
    float64 for test_grad and test_foreach_matches_forloop)."""
    modules, optim = f"{BREADTH}/test_modules.py", f"{BREADTH}/test_optim.py"
    done = run("-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", modules, optim, entries="nn.Linear,Adam")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    linear = {f"{test}_nn_Linear{params}_cpu_{dtype}"
              for test, params, dtypes in (
                  *((name, "", ("float64",)) for name in ("test_forward", "test_repr", "test_save_load",
                                                           "test_non_contiguous_tensors", "test_gradgrad")),
                  *((name, "", ("float32", "float64")) for name in ("test_factory_kwargs", "test_memory_format",
                                                                     "test_if_train_and_eval_modes_differ",
                                                                     "test_device_ctx_init")),
                  *(("test_to", f"_set_grad_{grad}_swap_{swap}", ("float32",)) for grad in (True, False)
                    for swap in (True, False)),
                  *(("test_to_empty", f"_swap_{swap}", ("float32",)) for swap in (True, False)))
              for dtype in dtypes}
    named = [f"_is_named_optim0_{first}_is_named_optim1_{second}" for first in (True, False) for second in (True, False)]
    adam = {f"{test}{params}_Adam_cpu_{dtype}"
            for test, params, dtypes in (
                ("test_fused_matches_forloop", "", ("float64", "float32", "bfloat16", "float16")),
                *((name, "", ("complex64",)) for name in ("test_complex", "test_complex_2d")),
                *(("test_state_dict_deterministic", one, ("float32",)) for one in named),
                *(("test_can_load_from_to_named_state_dict", one, ("float32",)) for one in named),
                *(("test_save_load_equality_with_weights_only", f"_is_named_optim_{one}", ("float32",))
                  for one in (True, False)),
                *((name, "", ("float32",)) for name in (
                    "test_optim_infos_do_not_specify_global_cliquey_kwargs", "test_fused_error_on_params_on_meta",
                    "test_param_groups_weight_decay", "test_param_groups_lr", "test_step_is_noop_when_params_have_no_grad",
                    "test_step_is_noop_for_zero_grads", "test_optimizer_can_be_printed", "test_can_load_older_state_dict",
                    "test_load_nontensor_step", "test_state_dict_pre_hook", "test_state_dict_post_hook",
                    "test_state_dict_pre_post_hook", "test_load_state_dict_pre_hook_and_prepend",
                    "test_load_state_dict_post_hook", "test_load_state_dict_pre_post_hook", "test_step_post_hook",
                    "test_step_pre_hook", "test_step_all_hooks", "test_deepcopy_copies_all_public_attrs",
                    "test_non_empty_state")))
            for dtype in dtypes}
    assert node_ids(done) == ({f"{modules}::TestModuleCPU::{test}" for test in linear}
                              | {f"{optim}::TestOptimRenewedCPU::{test}" for test in adam})
