"""`python -m harness scan-model` as users run it: a manifest from a model, deterministic, green when run.

TinyNet below is the `module:attribute` model the tests scan; the line numbers of its forward matter
(the manifest cites them), which the tests find by searching this file rather than hard-coding them.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

from harness.scan.capture import ValueFacts
from harness.scan.normalize import choose_init

REPOSITORY = Path(__file__).resolve().parents[2]
THIS_FILE = Path(__file__).resolve().relative_to(REPOSITORY).as_posix()
TINY = "tests.unit.test_scan_model:TinyNet"  # imported by the scanner's process, run from the repository root


class TinyNet(nn.Module):
    """Small, but calls what a scanner must handle: repeats, empty, random ops, rsqrt, index tensors,
    complex values (not expressible) and dropout (random in train mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 8)
        self.drop = nn.Dropout(0.25)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        for _ in range(3):
            h = torch.tanh(h)  # scan: three identical calls
        scratch = torch.empty_like(h)  # scan: uninitialized
        noise = torch.rand_like(h)  # scan: random
        h = self.drop(h)
        scale = (h * h).mean(-1, keepdim=True).add(1e-6).rsqrt()  # scan: positive input
        picked = torch.gather(h, 1, h.argmax(-1, keepdim=True))  # scan: index tensor
        spectrum = torch.view_as_real(torch.fft.rfft(h)).sum()  # scan: complex
        return h * scale + picked + scratch.zero_() + noise * 0 + spectrum


def harness(*args: object, cwd: Path = REPOSITORY) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, check=False)


def scan_tiny(output: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    done = harness("scan-model", "--module", TINY, "--input-shape", "2,16", "--train", "--output", output, *extra)
    assert done.returncode == 0, done.stderr
    return done


def line_of(text: str) -> int:
    """The line of this file holding `text` (the scanner must cite it)."""
    lines = Path(__file__).read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line and "line_of(" not in line)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    output = tmp_path_factory.mktemp("scan") / "tiny_net.yaml"
    scan_tiny(output)
    return output, yaml.safe_load(output.read_text())


def cases_of(manifest: dict, op: str) -> list[dict]:
    return [case for case in manifest["cases"] if case["op"] == op]


@pytest.mark.integration
def test_repeated_calls_become_one_case_citing_the_source_line(tiny):
    _, manifest = tiny
    (tanh,) = cases_of(manifest, "torch.ops.aten.tanh.default")
    line = line_of("h = torch.tanh(h)")
    assert tanh["description"].splitlines() == [
        f"{THIS_FILE}:{line}  h = torch.tanh(h)  # scan: three identical calls",
        "3 calls with this signature",
    ]
    (only,) = tanh["inputs"]
    assert only["tensor"]["shape"] == [2, 8]
    assert len({case["name"] for case in manifest["cases"]}) == len(manifest["cases"])


@pytest.mark.integration
def test_empty_and_random_ops_compare_metadata_only(tiny):
    _, manifest = tiny
    # dropout in train mode on CPU: empty_like for the mask, then bernoulli_ fills it
    for op, reason in (("empty_like.default", "uninitialized memory"), ("rand_like.default", "random values"),
                       ("bernoulli_.float", "random values")):
        found = cases_of(manifest, f"torch.ops.aten.{op}")
        assert found, op
        for case in found:
            assert case["compare"] == "metadata", op
            assert reason in case["description"], case["description"]
    values = [case for case in manifest["cases"] if case.get("compare", "values") == "values"]
    assert len(values) > 10


@pytest.mark.integration
def test_inputs_stay_valid_for_the_op(tiny):
    _, manifest = tiny
    (rsqrt,) = cases_of(manifest, "torch.ops.aten.rsqrt.default")
    assert rsqrt["inputs"][0]["tensor"]["init_args"]["low"] > 0
    (gather,) = cases_of(manifest, "torch.ops.aten.gather.default")
    index = gather["inputs"][2]["tensor"]
    assert index["dtype"] == "int64" and index["init"] == "data"
    assert all(0 <= value < 8 for row in index["init_args"]["values"] for value in row)
    (zero,) = cases_of(manifest, "torch.ops.aten.zero_.default")  # its input came from empty_like
    assert zero["inputs"][0]["tensor"]["init"] == "zeros" and "uninitialized memory" in zero["description"]


@pytest.mark.integration
def test_what_cannot_be_expressed_is_listed_in_the_header_not_emitted(tiny):
    path, manifest = tiny
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    assert any("aten._fft_r2c.default x1: private aten op" in line for line in header), header
    assert any("aten.view_as_real.default x1: argument 'self': tensor dtype complex64" in line for line in header)
    assert not cases_of(manifest, "torch.ops.aten.view_as_real.default")


@pytest.mark.integration
def test_scanning_again_writes_the_same_bytes_and_the_header_regenerates_it(tiny, tmp_path):
    first, _ = tiny
    again = tmp_path / "elsewhere" / first.name
    scan_tiny(again)
    assert again.read_bytes() == first.read_bytes()
    text = first.read_text()
    assert str(tmp_path.parent) not in text and "/tmp" not in text and "0x" not in text
    command = text.splitlines()[1].removeprefix("#").strip()
    assert command == (f"python -m harness scan-model --module {TINY} --input-shape 2,16 --train "
                       "--output op_manifests/tiny_net.yaml")


@pytest.mark.integration
def test_scanned_manifest_runs_green_under_the_op_manifest_runner(tiny):
    path, manifest = tiny
    done = subprocess.run([sys.executable, "-m", "pytest", "op_manifests", "--manifest-dir", path.parent,
                           "--model", "tiny_net", "-q", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=REPOSITORY, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{len(manifest['cases'])} passed" in done.stdout


@pytest.mark.integration
def test_bad_module_is_a_one_line_usage_error(tmp_path):
    done = harness("scan-model", "--module", "no_such_package.models:Net", "--input-shape", "2",
                   "--output", tmp_path / "x.yaml")
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "cannot import 'no_such_package.models'" in done.stderr
    assert not (tmp_path / "x.yaml").exists()


def _committed_header(path: Path) -> tuple[list[str], dict[str, str]]:
    lines = path.read_text().splitlines()
    command = shlex.split(lines[1].removeprefix("#").strip())
    versions = dict(part.split(" ", 1) for part in
                    lines[2].removeprefix("# Generated with ").removesuffix(".").split(", "))
    return command, versions


@pytest.mark.integration
@pytest.mark.parametrize("manifest", ["gpt_oss.yaml"])
def test_committed_manifest_regenerates_byte_for_byte(manifest, tmp_path):
    committed = REPOSITORY / "op_manifests" / manifest
    command, versions = _committed_header(committed)
    transformers = pytest.importorskip("transformers")
    here = {"python": f"{sys.version_info.major}.{sys.version_info.minor}", "torch": torch.__version__,
            "transformers": transformers.__version__}
    if here != versions:
        pytest.skip(f"{manifest} was generated with {versions}; this environment has {here}")
    assert command[:4] == ["python", "-m", "harness", "scan-model"] and command[-2] == "--output"
    done = harness(*command[3:-1], tmp_path / manifest)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / manifest).read_bytes() == committed.read_bytes()


@pytest.mark.unit
def test_ranges_at_float_noise_are_the_same_on_every_machine():
    """Tiny gradients of a random model differ between CPUs (3.0e-08 here, 4.5e-08 there): below the
    noise floor only the sign is kept, so a manifest regenerates byte for byte anywhere."""
    def init(low, high):
        return choose_init("float32", ValueFacts(low, high, False, None), exact_allowed=True, empty=False)

    assert init(-3.0e-08, 3.0e-08) == init(-4.5e-08, 3.4e-08) == ("uniform", (("high", 1.0e-6), ("low", -1.0e-6)))
    assert init(2.0e-09, 7.0e-08) == ("uniform", (("high", 1.0e-6), ("low", 0.0)))
    assert init(-2.5e-3, 4.1e-3) == ("uniform", (("high", 0.0041), ("low", -0.0025)))  # above it: as before
