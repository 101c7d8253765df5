"""The `python` stage's graph-break checks (harness/torch_suites/dynamo/graphbreaks.py) and debugging-tool
checks (harness/torch_suites/dynamo/dynamodebug.py) pass on what they drive, and fail where it silently
did not happen: a fallback to eager, a function that never breaks, code after a break that ran
eagerly, a debug backend that captured nothing, an accuracy checker that missed a wrong backend,
graphs or frames not routed by their ids.

Run with this interpreter's torch, in-process.
"""

from __future__ import annotations

import pytest

from tests.torch_suites.test_dynamo_tools import skip_where_unsupported

pytestmark = pytest.mark.integration

BACKENDS = ["eager", "aot_eager"]


def _case():
    from tests.torch_suites.test_transform_checks import Case

    return Case()


def _break_names() -> list[str]:
    from harness.torch_suites.dynamo.graphbreaks import BREAKS

    return [subject.name for subject in BREAKS]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", _break_names())
def test_each_graph_break_resumes_into_a_graph_and_a_fallback_to_eager_fails_it(name, backend):
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager
    from harness.torch_suites.dynamo.graphbreaks import BREAKS, check_break

    skip_where_unsupported(name)
    subject = next(subject for subject in BREAKS if subject.name == name)
    check_break(_case(), subject, Backend(backend))
    with torch.compiler.set_stance("force_eager"), pytest.raises(FallbackToEager, match="captured no graph"):
        check_break(_case(), subject, Backend(backend))


def test_a_function_that_never_breaks_fails_the_break_check():
    """A check whose function traces as one graph tests nothing about breaks: it must fail."""
    from harness.torch_suites.compiled.compilechecks import Backend
    from harness.torch_suites.dynamo.graphbreaks import Break, check_break

    def whole(x):
        return x.sin().cos()

    with pytest.raises(AssertionError, match="recorded no graph break"):
        check_break(_case(), Break("whole", whole), Backend.EAGER)


def test_code_after_a_break_that_runs_eagerly_fails_the_break_check():
    """A break whose resumed frame dynamo skips (the code after it is run by `torch._dynamo.disable`
    d code): the outputs are eager's and a graph was captured, so only the count catches it."""
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager
    from harness.torch_suites.dynamo.graphbreaks import Break, check_break

    @torch._dynamo.disable
    def rest(y):
        return y.cos() * 2

    def half_compiled(x):
        return rest(x.sin())

    with pytest.raises(FallbackToEager, match="the code after it ran eagerly"):
        check_break(_case(), Break("half_compiled", half_compiled), Backend.EAGER)


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_backends_pass_and_a_fallback_to_eager_fails_them(backend):
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager
    from harness.torch_suites.dynamo.dynamodebug import check_debug_backends

    skip_where_unsupported("debug_backends")
    check_debug_backends(_case(), Backend(backend))
    with torch.compiler.set_stance("force_eager"), pytest.raises(FallbackToEager, match="captured no graph"):
        check_debug_backends(_case(), Backend(backend))


def test_the_accuracy_minifier_check_catches_a_wrong_backend_and_fails_where_the_checker_misses_it(monkeypatch):
    """The wrong backend rewrites `torch.relu` calls only: a subject that calls `Tensor.relu` gives it
    nothing to break, so the checker raises nothing, and the check must say so."""
    import torch

    from harness.torch_suites.dynamo import dynamodebug
    from harness.torch_suites.compiled.compilechecks import Backend

    dynamodebug.check_accuracy_minifier(_case(), Backend.EAGER)
    monkeypatch.setattr(dynamodebug, "_accuracy_subject", lambda x, weight: (x @ weight).relu().sum(0) + 1)
    with pytest.raises(AssertionError, match="not raised"):
        dynamodebug.check_accuracy_minifier(_case(), Backend.EAGER)
    assert torch._dynamo.config.repro_level != 4, "accuracy checking left on after the check"


@pytest.mark.parametrize("backend", BACKENDS)
def test_graphs_must_reach_the_backend_their_id_selects(backend, monkeypatch):
    """Routing switched off (the override left empty): every graph goes to the given backend, and
    the check must fail."""
    from harness.torch_suites.dynamo import dynamodebug
    from harness.torch_suites.compiled.compilechecks import Backend
    from harness.torch_suites.dynamo.dynamodebug import check_graph_routing

    check_graph_routing(_case(), Backend(backend))
    monkeypatch.setattr(dynamodebug, "ROUTING", "")
    with pytest.raises(AssertionError, match="not routed"):
        check_graph_routing(_case(), Backend(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_frame_must_get_the_dynamo_settings_its_id_selects(backend, monkeypatch):
    """The override pointed at a frame id that never occurs: the resumed frame keeps dynamo's
    default, breaks on `.item()` once more, and the check must fail."""
    from harness.torch_suites.dynamo import dynamodebug
    from harness.torch_suites.compiled.compilechecks import Backend
    from harness.torch_suites.dynamo.dynamodebug import check_config_routing

    check_config_routing(_case(), Backend(backend))
    monkeypatch.setattr(dynamodebug, "CONFIG_ROUTING", dynamodebug.CONFIG_ROUTING.replace(">=1", ">=99"))
    with pytest.raises(AssertionError, match="did not reach the frame"):
        check_config_routing(_case(), Backend(backend))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["subclass_input", "count_iterator", "int_subclass"])
def test_inputs_of_a_subclass_or_an_iterator_recompile_where_their_guards_fail(name, backend):
    """Each scenario passes, and its last step really fails a guard: under the stance that forbids
    recompiling, that call raises."""
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, check_recompiles
    from harness.torch_suites.dynamo.dynamopaths import RECOMPILES

    scenario = next(scenario for scenario in RECOMPILES if scenario.name == name)
    check_recompiles(_case(), scenario.function, scenario.steps, scenario.graphs, Backend(backend))
    with torch.compiler.set_stance("fail_on_recompile"), pytest.raises(RuntimeError, match="fail_on_recompile"):
        check_recompiles(_case(), scenario.function, scenario.steps, scenario.graphs, Backend(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_precompiled_module_must_load_and_run_its_graphs(backend, monkeypatch):
    """Loading made a no-op: the module runs its forward eagerly, with the right numbers, and only
    the check's look at what was loaded catches it."""
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager
    from harness.torch_suites.dynamo.dynamotools import check_precompile_module

    skip_where_unsupported("precompile_module")
    check_precompile_module(_case(), Backend(backend))
    monkeypatch.setattr(torch._dynamo.eval_frame.OptimizedModule, "_load_aot_compiled_module", lambda self, data: None)
    with pytest.raises(FallbackToEager, match="holds no precompiled graph"):
        check_precompile_module(_case(), Backend(backend))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_profiler_check_passes_and_a_fallback_to_eager_fails_it(backend):
    import torch

    from harness.torch_suites.dynamo import dynamodebug
    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager

    skip_where_unsupported("dynamo_profiler")
    dynamodebug.check_dynamo_profiler(_case(), Backend(backend))
    with torch.compiler.set_stance("force_eager"), pytest.raises(FallbackToEager, match="captured no graph"):
        dynamodebug.check_dynamo_profiler(_case(), Backend(backend))
