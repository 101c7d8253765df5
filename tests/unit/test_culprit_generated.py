"""Culprits in code torch.compile generated: named to CinderX's JIT list by code, described to a user.

Names and files as torch 2.14.1 makes them, measured on CinderX 2026.11.2.0 (docs/culprit.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.compare.culprit import cinderx, generated
from harness.compare.culprit.blame import reproducer
from harness.compare.culprit.probes import Target
from harness.protocol import Env
from harness.record.culprits import Culprit, CulpritFunction, CulpritStatus
from harness.run import compiled

pytestmark = pytest.mark.unit

AOT_FILE = "<eval_with_key>.1 from /site-packages/torch/fx/experimental/proxy_tensor.py:1910 in wrapped"
CODEGEN = "/site-packages/torch/_functorch/_aot_autograd/codegen.py:codegen(runtime_wrapper_orchestration)"
INDUCTOR = "torch._inductor.runtime.compile_tasks.caeo5nqb5iscrscreaor53knensdoqausikk3saxzdoykjzopkar:Runner.call"
LOG = """\
JIT: cinderx/Jit/compiler.cpp:259 -- Compiling torch.fx.graph:Graph.create_node
JIT: cinderx/Jit/compiler.cpp:259 -- Compiling <invalid>:forward
JIT: cinderx/Jit/compiler.cpp:259 -- Compiling <invalid>:forward
JIT: cinderx/Jit/hir/inliner.cpp:586 -- Inlining function <invalid>:add into torch.fx.graph:Graph.create_node
"""


def test_a_function_without_a_module_name_is_named_by_its_code_the_last_part_of_its_file_and_line():
    assert cinderx.by_code("forward", "<eval_with_key>.3", 4) == "forward@<eval_with_key>.3:4"
    assert cinderx.by_code("forward", AOT_FILE, 4) == "forward@proxy_tensor.py:1910 in wrapped:4"
    assert cinderx.by_code("_runtime_wrapper", CODEGEN, 1) == "_runtime_wrapper@codegen.py:codegen(runtime_wrapper_orchestration):1"
    assert cinderx.named_by_code("forward@<eval_with_key>.3:4") and not cinderx.named_by_code(INDUCTOR)
    assert not cinderx.named_by_code("m:f.<locals>.g")


def test_the_log_names_generated_functions_by_the_code_the_rerun_wrote_beside_it(tmp_path: Path):
    log = tmp_path / "3-0.log"
    log.write_text(LOG, encoding="utf-8")
    (tmp_path / "3-0.log.4242").write_text(" -- Compiling worker:step\n")  # a process the test started
    folder = cinderx.compiled_folder(log)
    folder.mkdir()
    (folder / "100.json").write_text(json.dumps({"unnamed": [["forward", "<eval_with_key>.1", 4],
                                                             ["forward", "<eval_with_key>.3", 4]]}))
    found = cinderx.read_log(log)
    assert cinderx.logs(log) == [log, tmp_path / "3-0.log.4242"]  # not the folder beside it
    assert found.names == ("torch.fx.graph:Graph.create_node", "worker:step", "forward@<eval_with_key>.1:4",
                           "forward@<eval_with_key>.3:4")  # `<invalid>:add`, inlined only, has no code to name
    assert found.by_code["forward@<eval_with_key>.3:4"] == ("<eval_with_key>.3", 4)
    listed = ["torch.fx.graph:Graph.create_node", "worker:step", "forward@<eval_with_key>.3:4"]
    assert found.outside(listed) == ("forward@<eval_with_key>.1:4",)  # a list by code applies or not, forward by forward


def test_the_compiled_record_keeps_functions_without_a_module_name_by_code(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    scope: dict[str, object] = {}
    exec(compile("def forward(self, x):\n    return x\n", "<eval_with_key>.7", "exec"), scope)
    forward = scope["forward"]
    assert getattr(forward, "__module__", None) is None  # as fx's GraphModule code has it
    monkeypatch.setattr(compiled.jit, "compiled_functions", lambda: [forward, compiled.write])
    monkeypatch.setenv(Env.COMPILED, str(tmp_path))
    compiled.write()
    assert cinderx.read_unnamed(tmp_path) == {("forward", "<eval_with_key>.7", 1)}
    assert cinderx.read_unnamed(tmp_path / "absent") == set()
    (tmp_path / "killed.json").write_text('{"unnamed": [["forward", "<eval_wi')  # a process killed while writing
    assert cinderx.read_unnamed(tmp_path) == {("forward", "<eval_with_key>.7", 1)}


@pytest.mark.parametrize(("name", "file", "words"), [
    ("forward@<eval_with_key>.3:4", "<eval_with_key>.3", "fx GraphModule dynamo captured"),
    ("forward@proxy_tensor.py:1910 in wrapped:4", AOT_FILE, "AOTAutograd traced from wrapped"),
    ("_runtime_wrapper@codegen.py:codegen(runtime_wrapper_orchestration):1", CODEGEN,
     "AOTAutograd's generated runtime_wrapper_orchestration"),
    (INDUCTOR, "", "caeo5nqb5iscrscreaor53knensdoqausikk3saxzdoykjzopkar.py in Inductor's cache folder"),
    ("m:torch_dynamo_resume_in_forward_at_12", "/src/m.py", "resume function"),
    ("add@<string>:10", "<string>", "without a module name (file <string>)"),
])
def test_generated_code_says_what_made_it_and_how_to_see_it(name: str, file: str, words: str):
    assert words in generated.origin(name, file)


def test_a_function_of_a_source_file_has_no_origin():
    assert generated.origin("torch.fx.graph:Graph.create_node", "/site-packages/torch/fx/graph.py") == ""
    assert generated.origin("torch._guards:Guard.__init__", "<string>") == ""  # dataclass-made, named by module


def test_the_reproducer_matches_lines_only_when_it_names_code(tmp_path: Path):
    target = Target("m::test_x", "test_m.py::test_x", "cd /t && python -m pytest", "failed", "", tmp_path)
    plain = reproducer(target, tmp_path / "x.jitlist", ("m:f",))
    by_code = reproducer(target, tmp_path / "x.jitlist", ("m:f", "forward@<eval_with_key>.3:4"))
    assert cinderx.MATCH_LINE_NUMBERS not in plain
    assert by_code.startswith(f"env CINDERX_JIT_LIST_FILE={tmp_path / 'x.jitlist'} CINDERX_JIT_LIST_MATCH_LINE_NUMBERS=1 sh -c ")


def test_a_generated_culprit_reads_back_with_its_origin_and_an_older_record_without_one():
    function = CulpritFunction("forward@<eval_with_key>.3:4", "<eval_with_key>.3", 4,
                               origin=generated.origin("forward@<eval_with_key>.3:4", "<eval_with_key>.3"))
    culprit = Culprit(CulpritStatus.FOUND, (function,))
    assert Culprit.from_json(culprit.to_json()) == culprit
    assert function.where.startswith("forward@<eval_with_key>.3:4 (<eval_with_key>.3:4): forward of the fx GraphModule")
    old = {"status": "found", "functions": [{"name": "m:f", "file": "m.py", "line": 3, "inlined": []}]}
    assert Culprit.from_json(old).functions[0].where == "m:f (m.py:3)"
