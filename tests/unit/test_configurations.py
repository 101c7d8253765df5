"""Configurations and tiers as data: shipped defaults, user files, one-line errors."""

import pytest

from harness.configure import entries
from harness.configure.configurations import load_catalog
from harness.configure.tiers import HARNESS_ROOT, get_tier, load_tiers
from harness.errors import HarnessError

pytestmark = pytest.mark.unit


def write(tmp_path, text, name="user.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_configurations_are_the_three_of_the_product():
    catalog = load_catalog()
    assert list(catalog.configurations) == ["stock", "cinderx-nojit", "cinderx-jit", "cinderx-jit-disengaged",
                                            "stock-aarch64", "cinderx-nojit-aarch64", "cinderx-jit-aarch64"]
    assert catalog.get("cinderx-jit-disengaged").compile_disengage and not catalog.get("cinderx-jit").compile_disengage
    jit = catalog.get("cinderx-jit")
    assert (jit.jit, jit.threshold, jit.activation, jit.packages) == ("on", 1000, "after-collection", ("cinderx",))
    assert catalog.get("stock").jit == "absent" and catalog.get("stock").packages == ()
    assert catalog.get("cinderx-nojit").jit == "off"
    assert catalog.baseline == "stock" and catalog.torch.startswith("torch==")


def test_threshold_override_applies_to_jit_configurations_only():
    catalog = load_catalog()
    assert catalog.get("cinderx-jit").with_threshold(1).threshold == 1
    with pytest.raises(HarnessError, match="--threshold applies to JIT configurations; 'stock'"):
        catalog.get("stock").with_threshold(1)


def test_user_file_adds_an_existing_interpreter_without_venv(tmp_path):
    python = tmp_path / "vendor-python"
    python.write_text("")
    user = write(tmp_path, f"configurations:\n  vendor:\n    python: {python}\n    venv: false\n    jit: on\n"
                           "    env: {PYTHONJITDEBUG: 0, FLAG: yes}\n")
    vendor = load_catalog(user).get("vendor")
    assert (vendor.venv, vendor.jit, vendor.threshold) == (False, "on", 1000)
    assert vendor.env == {"PYTHONJITDEBUG": "0", "FLAG": "1"}
    assert "stock" in load_catalog(user).configurations  # shipped entries stay


@pytest.mark.parametrize("text, message", [
    ("configurations:\n  mine:\n    python: '3.14'\n    threshhold: 5\n",
     "user.yaml:4: configuration 'mine': unknown key 'threshhold'"),
    ("configurations:\n  mine:\n    python: '3.14'\n    threshold: many\n",
     "user.yaml:4: configuration 'mine': 'threshold' must be int, not str 'many'"),
    ("configurations:\n  mine:\n    python: /no/such/python\n",
     "user.yaml:3: configuration 'mine': 'python': interpreter /no/such/python does not exist"),
    ("configurations:\n  mine:\n    jit: on\n", "user.yaml:3: configuration 'mine': missing key 'python'"),
    ("configurations:\n  mine:\n    python: '3.14'\n    jit: sometimes\n",
     "user.yaml:4: configuration 'mine': 'jit' must be one of absent, off, on, not 'sometimes'"),
    ("configurations:\n  mine:\n    python: '3.14'\n    venv: false\n",
     "user.yaml:3: configuration 'mine': venv: false needs 'python' to be an interpreter's path"),
    ("configurations:\n  mine: [1, 2\n", "user.yaml:3: invalid YAML"),
    ("toolchain: x\n", "user.yaml:1: configurations file: unknown key 'toolchain'"),
    ("configurations:\n  mine:\n    python: '3.14'\n    env:\n      OMP_NUM_THREADS: 1\n      PYTHONJITLISTALL: 0\n",
     "user.yaml:6: configuration 'mine': env: CinderX does not know 'PYTHONJITLISTALL' and would ignore it "
     "(its variables: cinderx_variables.txt)"),
    ("configurations:\n  mine:\n    python: '3.14'\n    env: {CINDERX_JIT_TRESHOLD: 5}\n",
     "user.yaml:4: configuration 'mine': env: CinderX does not know 'CINDERX_JIT_TRESHOLD'"),
])
def test_bad_configuration_data_is_one_line_naming_file_line_and_key(tmp_path, text, message):
    with pytest.raises(HarnessError) as error:
        load_catalog(write(tmp_path, text))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_cinderx_variables_it_knows_are_accepted_in_every_spelling(tmp_path):
    user = write(tmp_path, "configurations:\n  mine:\n    python: '3.14'\n    env: {CINDERX_JIT_COMPILE_N_CALLS: 5, "
                           "PYTHONJITCOMPILENCALLS: 5, PYTHONJITLISTFILE: /l, CINDERX_DISABLE: 1, CINDERXY: 1}\n")
    assert len(load_catalog(user).get("mine").env) == 5


def test_environment_variable_names_the_user_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CONFIGURATIONS", str(write(tmp_path, "configurations:\n  x:\n    python: '3.13'\n")))
    assert load_catalog().get("x").python == "3.13"


def test_tiers_are_data_and_discover_files_with_excludes(tmp_path):
    for name in ("test_a.py", "test_b.py", "test_cuda.py", "helper.py"):
        (tmp_path / name).write_text("")
    user = write(tmp_path, "tiers:\n  mine:\n    files: ['test_*.py']\n    exclude: ['test_cuda*.py']\n    timeout: 5\n",
                 name="tiers.yaml")
    tier = load_tiers(user)["mine"]
    assert tier.discover(tmp_path) == ["test_a.py", "test_b.py"]
    assert set(load_tiers(user)) >= {"p0", "p1", "p2", "p3", "breadth", "gpu", "mine"}


def test_pytorch_tiers_without_bundled_suites_need_a_tests_directory(monkeypatch):
    monkeypatch.delenv("HARNESS_TESTS_DIR", raising=False)
    with pytest.raises(HarnessError, match="pass --tests-dir"):
        get_tier("gpu").located(None)


def test_p3_runs_torch_compile_over_the_databases_without_a_checkout(monkeypatch):
    monkeypatch.delenv("HARNESS_TESTS_DIR", raising=False)
    tier, tests_dir = get_tier("p3").located(None)
    assert tier.source == "torch" and tests_dir == HARNESS_ROOT and tier.entry == "pytest"
    assert tier.files == ("harness/torch_suites/p3/test_*.py", "harness/interop/test_*.py")
    assert tier.env["TORCHINDUCTOR_COMPILE_THREADS"] == "1" and tier.env["OMP_NUM_THREADS"] == "1"
    assert len(tier.discover(tests_dir)) == 14  # nine database modules, user-style Python, fx passes, Inductor modes, the matrix's two
    stage, stage_dir = get_tier("p3").selecting(["ops-inductor"]).located(None)
    assert stage.files == ("harness/torch_suites/p3/test_compile_ops_inductor.py",) and stage_dir == HARNESS_ROOT
    assert stage.env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"


def test_p1_p2_and_breadth_run_the_suites_inside_torch_without_a_checkout(monkeypatch, tmp_path):
    monkeypatch.delenv("HARNESS_TESTS_DIR", raising=False)
    for name in ("p1", "p2", "breadth"):
        tier, tests_dir = get_tier(name).located(None)
        assert tier.source == "torch" and tier.name == name and tests_dir == HARNESS_ROOT
        assert tier.files == (f"harness/torch_suites/{name}/test_*.py",) and tier.env["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("HARNESS_TESTS_DIR", str(tmp_path))  # a checkout wins: its files, as PyTorch's CI runs them
    tier, tests_dir = get_tier("p1").located(None)
    assert tier.source == "pytorch" and "test_torch.py" in tier.files and tests_dir == tmp_path
    for file in get_tier("breadth").files:  # with a checkout, PyTorch's files of tier breadth run there only
        (tmp_path / file).write_text("")
        assert file in get_tier("breadth").discover(tmp_path)
        assert file not in get_tier("p1").discover(tmp_path) + get_tier("p2").discover(tmp_path)


def test_gpu_tier_carries_seed_002_environment_and_deselection():
    gpu = get_tier("gpu")
    assert gpu.requires == "cuda" and gpu.env == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert "not CUDAGraph" in " ".join(gpu.pytest_args)


def test_unknown_tier_key_is_named(tmp_path):
    with pytest.raises(HarnessError, match=r"tiers.yaml:3: tier 'x': unknown key 'file'"):
        load_tiers(write(tmp_path, "tiers:\n  x:\n    file: a.py\n    files: [a.py]\n", name="tiers.yaml"))


def test_files_a_tier_names_that_a_checkout_lacks_are_listed_as_absent(tmp_path):
    (tmp_path / "test_torch.py").write_text("")
    tier = get_tier("p1")
    assert "test_torch.py" not in tier.absent(tmp_path)
    assert {"test_autograd.py", "test_nn.py"} <= set(tier.absent(tmp_path))
    assert get_tier("p2").absent(tmp_path) == []  # patterns only: nothing named one by one


def test_database_entries_select_the_files_that_cover_them():
    covered = {"harness/torch_suites/p1/test_ops.py": ["add", "sub", "linalg.norm"],
               "harness/torch_suites/p1/test_modules.py": ["nn.Linear"]}
    files = list(covered)
    assert entries.files_for(["nn.Linear"], covered, files) == ["harness/torch_suites/p1/test_modules.py"]
    assert entries.files_for(["add", "nn.Linear"], covered, files) == files
    with pytest.raises(HarnessError, match=r"--select sbu: no test file, node id or PyTorch test-database entry "
                                           r"of that name in this tier \(did you mean: sub\?\)"):
        entries.files_for(["sbu"], covered, files)
    assert entries.is_path("test_x.py", HARNESS_ROOT) and entries.is_path("a/b.py::T::t", HARNESS_ROOT)
    assert not entries.is_path("nn.Linear", HARNESS_ROOT) and not entries.is_path("add", HARNESS_ROOT)
