"""JIT coverage: the census's counting rule, compiled functions matched to their definitions,
attribution and merging, the results database, the reports and `harness coverage`."""

from __future__ import annotations

import importlib.util
import json
import py_compile
import re
import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cli import main
from harness.configure.beyond_cpu import BeyondCpu
from harness.configure.beyond_cpu import load as load_rules
from harness.errors import HarnessError
from harness.record.coverage import Coverage, Definitions, Row, attribute, function_key, merge, read, write
from harness.record.ingest import ingest
from harness.record.store import RunDirectory
from harness.report import html, json_report, markdown
from harness.report.model import CoverageSide, build
from harness.run import census
from tests.conftest import write_run
from tests.unit.test_report_model import candidate

pytestmark = pytest.mark.unit

SOURCE = textwrap.dedent('''\
    import functools

    def plain(x):
        return [y for y in x] + list(z for z in x)

    @functools.lru_cache
    def decorated(x: int) -> int:
        return x

    class Model:
        scale = 2

        def forward(self, x):
            def inner(y):
                return y
            return inner(x)

        @property
        def size(self):
            return 1

        @size.setter
        def size(self, value):
            pass

    square = lambda x: x * x
    ''')


def torch_tree(root: Path) -> Path:
    """A package laid out like torch: a top-level module, a subpackage and a nested module."""
    folder = root / "torch"
    (folder / "fx" / "passes").mkdir(parents=True)
    (folder / "__init__.py").write_text("def top():\n    pass\n")
    (folder / "fx" / "__init__.py").write_text("")
    (folder / "fx" / "graph.py").write_text(SOURCE)
    (folder / "fx" / "passes" / "split.py").write_text("def split():\n    return lambda: 1\n")
    return folder


def test_the_census_counts_defs_and_lambdas_nested_included_and_not_the_compilers_own_scopes(tmp_path):
    found = census.census(str(torch_tree(tmp_path)))
    graph = found["modules"]["torch.fx.graph"]
    assert graph["subpackage"] == "fx" and graph["file"] == "fx/graph.py"
    names = sorted(qualname for _, qualname in graph["definitions"])
    # class bodies, the module, generator expressions (and, on 3.14, __annotate__ functions) are no definitions;
    # a property's getter and setter share a qualified name but not a first line: two definitions
    assert names == ["<lambda>", "Model.forward", "Model.forward.<locals>.inner", "Model.size", "Model.size",
                     "decorated", "plain"]
    assert found["modules"]["torch"]["subpackage"] == "" and found["modules"]["torch.fx"]["definitions"] == []
    assert found["modules"]["torch.fx.passes.split"]["subpackage"] == "fx"
    assert [q for _, q in found["modules"]["torch.fx.passes.split"]["definitions"]] == ["split", "split.<locals>.<lambda>"]


def test_the_census_reads_a_current_pyc_and_finds_the_same_definitions(tmp_path):
    folder = torch_tree(tmp_path)
    path = folder / "fx" / "graph.py"
    from_source = sorted(census.definitions(census.module_code(str(path))))
    py_compile.compile(str(path), doraise=True)
    cached = census._cached_code(str(path), path.read_bytes())
    assert cached is not None and sorted(census.definitions(cached)) == from_source
    path.write_text(SOURCE + "\n# changed\n")  # a stale pyc is not used
    assert census._cached_code(str(path), path.read_bytes()) is None


def test_a_function_object_carries_the_key_of_the_definition_the_census_counted(tmp_path):
    """What compiled.py reads from a compiled function (code file, first line, qualname) is what the
    census read from the source: decorated functions, methods, closures and lambdas alike."""
    path = torch_tree(tmp_path) / "fx" / "graph.py"
    spec = importlib.util.spec_from_file_location("graph_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    instance = module.Model()
    functions = [module.plain, module.decorated.__wrapped__, module.Model.forward, module.Model.size.fget,
                 module.Model.size.fset, module.square, instance.forward.__func__]
    keys = {(f.__code__.co_firstlineno, f.__code__.co_qualname) for f in functions}
    assert keys <= set(census.definitions(census.module_code(str(path))))


def test_a_process_writes_its_compiled_functions_by_source_file_and_made_code_by_module(tmp_path, monkeypatch):
    import dataclasses

    from harness.protocol import Env
    from harness.run import compiled, jit

    Point = dataclasses.make_dataclass("Point", ["x"])  # its __init__ is made by exec: no source file
    monkeypatch.setattr(jit, "compiled_functions", lambda: [test_the_census_reads_a_current_pyc_and_finds_the_same_definitions,
                                                          Point.__init__, len])
    monkeypatch.setenv(Env.COMPILED, str(tmp_path))
    compiled.write()
    [written] = tmp_path.glob("*.json")
    content = json.loads(written.read_text())
    code = test_the_census_reads_a_current_pyc_and_finds_the_same_definitions.__code__
    assert content["files"] == {code.co_filename: [[code.co_firstlineno, code.co_qualname]]}
    assert content["generated"] == {Point.__init__.__module__: ["Point.__init__"]}  # its given name, not the maker's
    torch = sys.modules.get("torch")
    assert content["pid"] == int(written.stem) and content["torch"] == (torch and str(Path(torch.__file__).parent))


def definitions_of(root: Path) -> Definitions:
    return Definitions.from_census(census.census(str(root)))


def test_attribution_matches_definitions_counts_each_function_once_and_keeps_the_rest_apart(tmp_path):
    folder = torch_tree(tmp_path)
    linked = tmp_path / "linked"
    linked.symlink_to(folder)  # a process may see torch through another path: matched by real path
    graph, split = str(folder / "fx" / "graph.py"), str(linked / "fx" / "passes" / "split.py")
    first = {"torch": str(folder), "files": {graph: [[3, "plain"], [13, "Model.forward"], [99, "gone"]],
                                              "/usr/lib/python3.14/os.py": [[1, "walk"]]},
             "generated": {"torch.fx.graph": ["__create_fn__.<locals>.__init__"], "dataclasses": ["x"]}}
    second = {"torch": str(linked), "files": {graph: [[3, "plain"]], split: [[1, "split"], ["bad"], [2, 3]]}}
    coverage = attribute(definitions_of(folder), [first, second, {}], "2.14.1", "run-a")
    assert coverage.compiled == {"fx": tuple(sorted([function_key("torch.fx.graph", "plain", 3),
                                                     function_key("torch.fx.graph", "Model.forward", 13),
                                                     function_key("torch.fx.passes.split", "split", 1)]))}
    assert coverage.defined == {"": 1, "fx": 9}
    rows = {row.name: (row.defined, row.compiled) for row in coverage.rows}
    assert rows == {"fx": (9, 3), "(top-level modules)": (1, 0)} and coverage.exercised == ("fx",)
    assert coverage.unattributed == ("torch.fx.graph:__create_fn__.<locals>.__init__", "torch.fx.graph:gone")
    assert coverage.other == ("/usr/lib/python3.14/os.py:walk:1", "dataclasses:x")
    assert (coverage.total.defined, coverage.total.compiled, coverage.processes) == (10, 3, 3)


def test_a_subpackage_opens_into_its_modules_the_most_left_uncompiled_first(tmp_path, capsys):
    folder = torch_tree(tmp_path)
    graph, split = str(folder / "fx" / "graph.py"), str(folder / "fx" / "passes" / "split.py")
    process = {"torch": str(folder), "files": {graph: [[3, "plain"], [13, "Model.forward"]], split: [[1, "split"]]}}
    coverage = attribute(definitions_of(folder), [process], "2.14.1", "run-a")
    assert [(row.name, row.defined, row.compiled) for row in coverage.module_rows("fx")] == [
        ("torch.fx.graph", 7, 2), ("torch.fx.passes.split", 2, 1)]  # 5 left uncompiled, then 1
    assert [(row.name, row.compiled) for row in coverage.module_rows("(top-level modules)")] == [("torch", 0)]
    run = write_run(tmp_path / "results", "cinderx-jit", {"test_a": "passed"}, started="2026-11-01T00:00:00",
                    threshold=1)
    write(RunDirectory(run), coverage)
    assert main(["coverage", str(run), "--subpackage", "fx"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # laid out as text: a table's cells apart by spaces
    assert "JIT coverage of torch 2.14.1, fx by module: cinderx-jit (threshold 1), tier p1" in out and "## " not in out
    assert "torch.fx.graph 7 2 5 28.6%" in out and "3 of its 9 functions compiled, in 2 of 2 modules" in out
    assert main(["coverage", str(run), "--subpackage", "fx", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["modules"][1] == {"module": "torch.fx.passes.split", "defined": 2, "compiled": 1,
                                     "beyond_cpu": 0, "beyond_cpu_compiled": 0, "needs": None}
    assert printed["total"] == {"defined": 9, "compiled": 3, "beyond_cpu": 0, "beyond_cpu_compiled": 0}
    assert main(["coverage", str(run), "--subpackage", "fxx"]) == 3
    assert "--subpackage fxx: torch 2.14.1 has no such subpackage (did you mean: fx?)" in capsys.readouterr().err
    write(RunDirectory(run), coverage_of("torch.fx.a:f:1"))  # recorded before per-module counts
    assert main(["coverage", str(run), "--subpackage", "fx"]) == 3
    assert "recorded before per-module counts: run the tier again" in capsys.readouterr().err


def rules_of(tmp_path: Path, text: str) -> BeyondCpu:
    path = tmp_path / "beyond.yaml"
    path.write_text(textwrap.dedent(text))
    return load_rules(path)


def test_modules_a_cpu_only_machine_cannot_run_count_apart_with_the_share_of_the_rest(tmp_path):
    folder = torch_tree(tmp_path)
    graph, split = str(folder / "fx" / "graph.py"), str(folder / "fx" / "passes" / "split.py")
    process = {"torch": str(folder), "files": {graph: [[3, "plain"], [13, "Model.forward"]], split: [[1, "split"]]}}
    coverage = attribute(definitions_of(folder), [process], "2.14.1", "run-a")
    gpu_only = rules_of(tmp_path, "- {needs: GPU, why: a GPU, modules: [torch.fx.passes.split]}\n")
    [fx, top] = coverage.rows_beyond(gpu_only)
    assert (fx.name, fx.defined, fx.compiled, fx.beyond, fx.beyond_compiled) == ("fx", 9, 3, 2, 1)
    assert fx.rest_share == 2 / 7 and fx.share == 3 / 9  # 2 of the 7 functions this machine can run
    assert top.beyond == 0 and top.rest_share == 0.0 and Row("cuda", 5, 1, 5, 1).rest_share is None
    assert [(row.name, row.needs, row.beyond) for row in coverage.module_rows("fx", gpu_only)] == [
        ("torch.fx.graph", None, 0), ("torch.fx.passes.split", "GPU", 2)]


@pytest.mark.parametrize(("module", "needs"), [
    ("torch._inductor.codegen.triton", "Triton"), ("torch._inductor.runtime.triton_heuristics", "Triton"),
    ("torch._inductor.codegen.simd", "Triton"), ("torch._inductor.codegen.cuda.cuda_kernel", "NVIDIA/AMD GPU"),
    ("torch._inductor.cudagraph_trees", "NVIDIA/AMD GPU"), ("torch.cuda", "NVIDIA/AMD GPU"),
    ("torch._inductor.codegen.mps", "other accelerator"), ("torch._inductor.codegen.halide", "Halide"),
    ("torch._inductor.codegen.cpp", None), ("torch._inductor.codegen.cpp_wrapper_cpu", None),
    ("torch._inductor.kernel.flex.flex_cpu", None), ("torch._inductor.lowering", None), ("torch._dynamo.eval_frame", None),
    ("torch.cudart_like", None)])
def test_the_shipped_rules_leave_inductors_cpu_path_in_the_rest(module, needs):
    assert load_rules().needs(module) == needs


@pytest.mark.parametrize(("module", "qualname", "needs"), [
    ("torch._dynamo.device_interface", "CudaInterface.is_available", "NVIDIA/AMD GPU"),
    ("torch._dynamo.device_interface", "CudaInterface.Worker.set_device", "NVIDIA/AMD GPU"),
    ("torch._dynamo.device_interface", "MpsInterface.Worker.current_device", "other accelerator"),
    ("torch._dynamo.device_interface", "XpuInterface.raise_if_triton_unavailable", "other accelerator"),
    ("torch._dynamo.device_interface", "CpuInterface.Worker.set_device", None),
    ("torch._dynamo.device_interface", "DeviceInterface.Worker.set_device", None),  # the abstract base runs here
    ("torch._dynamo.device_interface", "get_interface_for_device", None),
    ("torch._dynamo.variables.functions", "TritonKernelVariable.call_function", "Triton"),
    ("torch._dynamo.variables.functions", "TritonSetAllocatorVariable.call_function.<locals>.real_impl", "Triton"),
    ("torch._dynamo.variables.functions", "UserFunctionVariable.call_function", None),
    ("torch._dynamo.variables.memory", "CUDAMemPoolVariable.__init__", "NVIDIA/AMD GPU"),
    ("torch._dynamo.variables.streams", "StreamVariable.__init__", None)])  # CPU streams trace here
def test_the_shipped_rules_name_the_device_classes_of_dynamos_mixed_modules(module, qualname, needs):
    assert load_rules().needs(module, qualname) == needs
    assert load_rules().needs(module) == ("NVIDIA/AMD GPU" if module.endswith("memory") else None)  # as a whole


def test_a_malformed_rules_file_is_one_error_naming_it_and_the_entry(tmp_path):
    path = tmp_path / "beyond.yaml"
    path.write_text("- needs: GPU\n  why: a GPU\n  modules: [torch.cuda]\n- needs: TPU\n  modules: []\n")
    with pytest.raises(HarnessError, match=r"beyond.yaml: entry 2 needs `needs:` and `why:`"):
        load_rules(path)


@pytest.mark.parametrize("pattern", ["torch.fx.graph:", ":Model.*", "torch.fx.graph:Model:size", 3])
def test_a_malformed_pattern_is_the_same_one_line_error(tmp_path, pattern):
    path = tmp_path / "beyond.yaml"
    path.write_text(f"- needs: GPU\n  why: a GPU\n  modules: [torch.cuda, {json.dumps(pattern)}]\n")
    with pytest.raises(HarnessError, match=r"^\S*beyond.yaml: entry 1 needs .*\(a list of patterns: MODULE or "
                                           r"MODULE:QUALNAME\)$"):
        load_rules(path)


def test_a_qualname_rule_counts_only_the_functions_it_names_and_the_first_rule_wins(tmp_path, monkeypatch, capsys):
    """A module that mixes code for a device with code that runs here: its functions are judged one
    by one, by the names the cached census gives them; without that census, as a whole module."""
    from harness.configure import beyond_cpu
    from harness.protocol import Setting
    from harness.run.coverage import census_path

    rules = rules_of(tmp_path, """\
        - needs: GPU
          why: a GPU
          modules: ["torch.fx.graph:Model.size", torch.fx.passes.split]
        - needs: TPU
          why: a TPU
          modules: ["torch.fx.graph:Model.*"]
        """)
    monkeypatch.setattr(beyond_cpu, "load", lambda: rules)
    monkeypatch.setenv(Setting.CACHE, str(tmp_path / "cache"))
    folder = torch_tree(tmp_path)
    graph, split = str(folder / "fx" / "graph.py"), str(folder / "fx" / "passes" / "split.py")
    process = {"torch": str(folder), "files": {graph: [[3, "plain"], [13, "Model.forward"]], split: [[1, "split"]]}}
    coverage = attribute(definitions_of(folder), [process], "2.14.1", "run-a")
    run = write_run(tmp_path / "results", "cinderx-jit", {"test_a": "passed"}, started="2026-11-01T00:00:00",
                    threshold=1)
    write(RunDirectory(run), coverage)
    path = census_path("2.14.1", "3.14.0")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(census.census(str(folder))))

    assert main(["coverage", str(run), "--subpackage", "fx"]) == 0
    # Model.size (getter and setter) are the first rule's; Model.forward and its closure the second's
    assert "torch.fx.graph 7 2 5 28.6% 4 of 7: GPU, TPU" in " ".join(capsys.readouterr().out.split())
    assert main(["coverage", str(run), "--format", "json"]) == 0
    [fx] = [row for row in json.loads(capsys.readouterr().out)["subpackages"] if row["subpackage"] == "fx"]
    assert (fx["defined"], fx["compiled"], fx["beyond_cpu"], fx["beyond_cpu_compiled"]) == (9, 3, 4 + 2, 1 + 1)

    path.unlink()  # no census to name the module's functions: judged as a whole (no rule names all of it)
    assert main(["coverage", str(run), "--subpackage", "fx", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [(row["module"], row["beyond_cpu"], row["needs"]) for row in printed["modules"]] == [
        ("torch.fx.graph", 0, None), ("torch.fx.passes.split", 2, "GPU")]


def test_without_the_torch_folder_a_process_file_attributes_nothing_to_torch(tmp_path):
    folder = torch_tree(tmp_path)
    coverage = attribute(definitions_of(folder), [{"files": {str(folder / "__init__.py"): [[1, "top"]]}}], "2.14.1")
    assert coverage.compiled == {} and len(coverage.other) == 1


def coverage_of(*keys: str, torch: str = "2.14.1", run: str = "r") -> Coverage:
    return Coverage(torch, {"fx": 4, "nn": 2}, {"fx": tuple(keys)}, ("torch.x:gen",), (), 1, (run,))


def test_merging_runs_is_a_union_and_refuses_different_torch_versions():
    merged = merge([coverage_of("torch.fx.a:f:1", "torch.fx.a:g:2", run="p0"),
                    coverage_of("torch.fx.a:g:2", "torch.fx.b:h:3", run="p1")])
    assert merged.compiled == {"fx": ("torch.fx.a:f:1", "torch.fx.a:g:2", "torch.fx.b:h:3")}
    assert merged.runs == ("p0", "p1") and merged.unattributed == ("torch.x:gen",) and merged.processes == 2
    assert [(row.name, row.compiled, row.share) for row in merged.rows] == [("fx", 3, 0.75), ("nn", 0, 0.0)]
    assert Row("_awaits", 0, 0).share is None  # a subpackage of imports only: no share, not 0%
    with pytest.raises(HarnessError, match="different torch versions"):
        merge([coverage_of(torch="2.13.0"), coverage_of()])


def covered_run(results: Path, started: str, *keys: str) -> Path:
    run = write_run(results, "cinderx-jit", {"test_a": "passed"}, started=started, threshold=1)
    write(RunDirectory(run), coverage_of(*keys, run=run.name))
    return run


def test_the_results_database_stores_coverage_per_subpackage_and_every_function(tmp_path):
    results = tmp_path / "results"
    run = covered_run(results, "2026-11-01T00:00:00", "torch.fx.a:f:1", "torch.fx.a:g:2")
    plain = write_run(results, "stock", {"test_a": "passed"}, started="2026-11-01T00:00:01")
    database = results / "harness.db"
    ingest(database, [run, plain])
    connection = sqlite3.connect(database)
    assert sorted(connection.execute("SELECT subpackage, defined, compiled FROM coverage").fetchall()) == [
        ("fx", 4, 2), ("nn", 2, 0)]
    assert connection.execute("SELECT count(*) FROM compiled_functions").fetchone() == (2,)
    assert connection.execute("PRAGMA user_version").fetchone() == (2,)


def test_a_database_of_the_first_schema_gains_the_coverage_tables(tmp_path):
    from harness.record.database import MIGRATIONS, connect

    path = tmp_path / "harness.db"
    old = sqlite3.connect(path, isolation_level=None)
    old.executescript(MIGRATIONS[0])
    old.execute("PRAGMA application_id = 1213353555")
    old.execute("PRAGMA user_version = 1")
    old.close()
    connect(path).close()
    tables = {name for (name,) in sqlite3.connect(path).execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert {"coverage", "compiled_functions", "runs"} <= tables


def test_the_reports_show_the_candidates_coverage(tmp_path):
    comparison = candidate(1)
    side = CoverageSide(comparison.candidate, coverage_of("torch.fx.a:f:1"))
    report = build([comparison], coverage=[side])
    text = markdown.render(report)
    assert "## JIT coverage of torch 2.14.1: cinderx-jit (threshold 1)" in text
    assert "| fx | 4 | 1 | 25.0% |" in text and "| **torch** | **6** | **1** | **16.7%** |" in text
    document = json_report.to_json(report)
    assert document["coverage"]["subpackages"][0] == {"subpackage": "fx", "defined": 4, "compiled": 1,
                                                      "beyond_cpu": 0, "beyond_cpu_compiled": 0}
    assert document["coverage"]["exercised"] == ["fx"]
    assert "coverage" not in json_report.to_json(build([comparison]))
    page = html.render(report)
    assert 'id="coverage"' in page and page.count("<svg") == 1 and "25.0%" in page


def test_the_html_report_counts_what_a_cpu_only_machine_cannot_run_apart():
    """The same columns as the markdown and JSON reports: Inductor's Triton code is beyond a CPU."""
    coverage = Coverage("2.14.1", {"_inductor": 4}, {"_inductor": ("torch._inductor.graph:f:1",)},
                        runs=("r",), modules={"_inductor": {"torch._inductor.codegen.triton": 3,
                                                            "torch._inductor.graph": 1}})
    page = html.render(build([candidate(1)], coverage=[CoverageSide(candidate(1).candidate, coverage)]))
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page[page.index('<table class="plain coverage">'):])
    assert cells[:6] == ["_inductor", "4", "1", "25.0%", "3", "100.0%"]
    assert "beyond a CPU</th><th>% of the rest</th>" in page
    assert "(25.0%; 100.0% of the 1 a CPU-only machine can run)" in page


def test_the_coverage_command_merges_the_runs_given(tmp_path, capsys):
    results = tmp_path / "results"
    covered_run(results, "2026-11-01T00:00:00", "torch.fx.a:f:1")
    covered_run(results, "2026-11-02T00:00:00", "torch.fx.a:f:1", "torch.fx.a:g:2")
    plain = write_run(results, "stock", {"test_a": "passed"}, started="2026-11-03T00:00:00")
    assert main(["coverage", str(results), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["total"] == {"defined": 6, "compiled": 2, "beyond_cpu": 0, "beyond_cpu_compiled": 0}
    assert len(printed["runs"]) == 2
    assert main(["coverage", str(results)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cinderx-jit (threshold 1), tier p1" in out and " fx 4 2 50.0% " in out
    assert f"Left out, without JIT coverage: {plain}" in out
    assert main(["coverage", str(plain)]) == 3
    assert "no JIT coverage" in capsys.readouterr().err
    assert read(plain) is None



def test_a_finished_jit_run_gets_its_coverage_from_the_cached_census(tmp_path, monkeypatch):
    from harness.protocol import Setting
    from harness.run.coverage import census_path, record_coverage

    monkeypatch.setenv(Setting.CACHE, str(tmp_path / "cache"))
    folder = torch_tree(tmp_path)
    run = RunDirectory(write_run(tmp_path / "results", "cinderx-jit", {"test_a": "passed"}, started="2026-11-01T00:00:00",
                                 threshold=1))
    compiled = run.compiled("test_mod")
    compiled.mkdir(parents=True)
    (compiled / "7.json").write_text(json.dumps({"torch": str(folder), "files": {str(folder / "__init__.py"): [[1, "top"]]}}))
    (compiled / "8.json").write_text("{cut short")  # a process killed while writing: left out
    path = census_path("2.14.1", "3.14.0")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(census.census(str(folder))))
    announced = record_coverage(run, run.read_record(), {})
    assert announced.startswith("JIT coverage: 1 of torch 2.14.1's 10 functions compiled (10.0%)")
    assert read(run.root).compiled == {"": ("torch:top:1",)} and read(run.root).processes == 1
    plain = RunDirectory(write_run(tmp_path / "results", "stock", {"test_a": "passed"}, started="2026-11-01T00:00:01"))
    assert record_coverage(plain, plain.read_record(), {}) is None
