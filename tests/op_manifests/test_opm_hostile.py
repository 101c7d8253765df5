"""The hostile corpus: every attack is rejected case by case, one line each, and nothing runs."""

from __future__ import annotations

import builtins
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch
from conftest import HOSTILE, run_pytest

pytestmark = pytest.mark.integration

MARKER = "hostile-executed.marker"

# test id -> a phrase its one-line error must contain (the location is checked separately).
EXPECTED = {
    "alias_bomb::laughs": "aliases of lists/mappings are not supported",
    "broken_syntax.yaml::manifest-error": "invalid YAML",
    "not_a_manifest.yaml::manifest-error": "manifest must be a mapping",
    "code_in_expressions::skip_if_import": "function call is not allowed in skip_if",
    "code_in_expressions::skip_if_open": "not allowed in skip_if",
    "code_in_expressions::skip_if_lambda": "function call is not allowed in skip_if",
    "code_in_expressions::skip_if_comprehension": "ListComp syntax is not allowed",
    "code_in_expressions::skip_if_unknown_name": "function call is not allowed in skip_if",
    "code_in_expressions::py_import": "function call is not allowed in a py: literal",
    "code_in_expressions::py_eval": "function call is not allowed in a py: literal",
    "code_in_expressions::py_power_bomb": "BinOp syntax is not allowed",
    "code_in_expressions::py_walrus": "NamedExpr syntax is not allowed",
    "code_in_expressions::py_not_parsable": "not a valid expression",
    "dunder_access::py_class_bases": "not allowed in a py: literal",
    "dunder_access::skip_if_class_bases": "attribute access ('.__bases__') is not allowed",
    "dunder_access::skip_if_variable_attribute": "attribute access ('.__class__') is not allowed",
    "dunder_access::op_dunder": "no private or dunder names",
    "dunder_access::op_private": "no private or dunder names",
    "dunder_access::attrs_dunder_key": "attrs keys must be keyword names",
    "huge_shapes::trillion_elements": "tensor needs 1000000000000 elements (limit 16777216",
    "huge_shapes::expanded_trillion": "tensor needs 1000000000000 elements",
    "huge_shapes::huge_strides": "tensor needs 1000000000002 elements",
    "huge_shapes::case_total_over_limit": "case needs 83886080 tensor elements (limit 67108864",
    "path_traversal::dotdot": "'..' is not allowed in file paths",
    "path_traversal::absolute": "absolute paths are not allowed",
    "path_traversal::home": "absolute paths are not allowed",
    "path_traversal::symlink_escape": "resolves outside the manifest's folder",
    "path_traversal::pickle_payload": "rejected by torch.load(weights_only=True): UnpicklingError",
    "unknown_ops::not_a_torch_op": "unknown op 'torch.definitely_not_an_op': no such tensor op",
    "unknown_ops::os_system": "unknown op 'os.system': namespace must be one of",
    "unknown_ops::builtins_eval": "unknown op 'eval'",
    "unknown_ops::torch_save": "op 'torch.save' is not allowed",
    "unknown_ops::aten_from_file": "op 'torch.ops.aten.from_file' is not allowed",
    "unknown_ops::operator_attrgetter": "allowed operators are",
    "unknown_ops::op_not_a_string": "op must be a name like 'torch.add'",
    "wrong_types::shape_is_text": "shape must be a list of integers >= 0",
    "wrong_types::shape_negative": "shape entries must be an integer >= 0, got -1",
    "wrong_types::shape_bool": "got True",
    "wrong_types::typo_in_key": "unknown key 'shapee' in tensor",
    "wrong_types::tolerance_as_text": "write 1.0e-3",
    "wrong_types::unknown_dtype": "unknown dtype 'fp8'",
    "wrong_types::inputs_not_a_list": "inputs must be a list",
    "wrong_types::two_kinds_in_one_input": "each input must be a mapping with one key",
    "wrong_types::error_type_not_allowed": "unknown error type 'SystemExit'",
    "wrong_types::python_tag": "YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed",
    "wrong_types::seed_float": "seed must be an integer",
    "wrong_types::skip_if_without_reason": "missing required key 'reason'",
    "wrong_types::unregistered_marker": "unknown marker 'not_registered_anywhere'",
    "wrong_types::#13": "duplicate case name 'typo_in_key'",
    "wrong_types::#14": "missing required key 'name'",
}


class _Payload:
    """Pickles to a call of open(marker, 'w'): if torch.load ran it, the marker would exist."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return builtins.open, (str(self.marker), "w")


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[str, str]]]:
    """Run the corpus once (from a copy holding the live payloads); results by test id."""
    work = tmp_path_factory.mktemp("hostile-run")
    corpus = work / "hostile"
    shutil.copytree(HOSTILE, corpus)
    torch.save({"x": _Payload(work / MARKER)}, corpus / "payload.pt")
    torch.save(torch.ones(2), work / "outside.pt")
    (corpus / "escape.pt").symlink_to(work / "outside.pt")
    junit = work / "junit.xml"
    done = run_pytest("--manifest-dir", str(corpus), f"--junitxml={junit}", cwd=work)
    assert done.returncode == 1, done.stdout + done.stderr  # tests failed; nothing crashed
    results = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test_id = re.search(r"\[(.*)\]$", case.get("name", "")).group(1)  # type: ignore[union-attr]
        failure = case.find("failure")
        outcome = (
            "failed" if failure is not None else "skipped" if case.find("skipped") is not None else "passed"
        )
        results[test_id] = (outcome, failure.get("message", "") if failure is not None else "")
    return work, results


def test_every_hostile_case_fails_with_its_own_one_line_error(hostile_run) -> None:
    _, results = hostile_run
    assert set(results) == set(EXPECTED) | {"good::add_ok"}
    for test_id, phrase in EXPECTED.items():
        outcome, message = results[test_id]
        assert outcome == "failed", test_id
        assert phrase in message, (test_id, message)
        assert "\n" not in message.strip(), (test_id, message)
        assert re.search(r"hostile/\w+\.yaml:\d+:\d+: ", message), (test_id, message)


def test_the_good_manifest_still_runs(hostile_run) -> None:
    _, results = hostile_run
    assert results["good::add_ok"] == ("passed", "")


def test_no_payload_ran(hostile_run) -> None:
    work, results = hostile_run
    assert "Unsupported global" in results["path_traversal::pickle_payload"][1]
    assert not list(work.rglob(MARKER))
    assert not (Path.cwd() / MARKER).exists()


def test_pickle_payload_is_live(tmp_path: Path) -> None:
    """The corpus proves something only if the payload would run under a plain unpickler."""
    marker = tmp_path / MARKER
    torch.save({"x": _Payload(marker)}, tmp_path / "payload.pt")
    torch.load(tmp_path / "payload.pt", weights_only=False)
    assert marker.exists()


def test_list_cases_prints_the_errors_and_exits_zero() -> None:
    done = run_pytest("--manifest-dir", str(HOSTILE), "--list-cases")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "good::add_ok  torch.add" in lines
    errors = [line for line in lines if "  ERROR " in line]
    # payload.pt and escape.pt do not exist in the committed corpus; they are errors too.
    assert len(errors) == len(EXPECTED)
    assert any("huge_shapes.yaml:5:23: case 'trillion_elements': tensor needs" in line for line in errors)
