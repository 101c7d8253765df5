"""torch.fx's passes over `module_db`, for P3's `fx` stage (p3/test_fx_passes.py).

Every torch.compile goes through torch.fx: dynamo and AOTAutograd build fx graphs, Inductor and
torch.export rewrite them with fx's passes, and each rewrite generates Python source for the graph
and `exec`s it. That code is pure Python over graphs (node lists, name tables, generated source),
the kind a Python JIT compiles hot, and the compile stages reach only the passes their pipeline
happens to call. Here each pass runs on purpose, on two graphs of every module fx can trace: the
module's own graph (`symbolic_trace`), and its ATen graph (`make_fx` over the module with its
parameters as inputs, as AOTAutograd traces it). A pass must leave the graph computing what the
module computes: the check runs the rewritten graph and compares with the module run eagerly, and
where a pass promises a shape (partitions, metadata) the check asserts that too, so a pass that
silently did nothing cannot pass.
"""

from __future__ import annotations

import copy
import inspect
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import torch
import torch.fx as fx
from torch.testing._internal.common_utils import TestCase

from harness.torch_suites.compilechecks import first_module, input_gradients
from harness.torch_suites.determinism import seeded

# Modules of module_db that torch.fx cannot trace symbolically, by cause (torch 2.14.1, measured):
# fx's tracer raises on Python control flow over a traced value (`if input.dim() == 3:` and the like).
CONTROL_FLOW = frozenset({
    "nn.BatchNorm1d", "nn.BatchNorm2d", "nn.BatchNorm3d", "nn.InstanceNorm1d", "nn.InstanceNorm2d",
    "nn.InstanceNorm3d", "nn.ConvTranspose1d", "nn.ConvTranspose2d", "nn.ConvTranspose3d",
    "nn.LazyConvTranspose1d", "nn.LazyConvTranspose2d", "nn.LazyConvTranspose3d", "nn.Transformer",
    "nn.MultiheadAttention", "nn.RNNCell",
    "nn.GRUCell", "nn.LSTMCell", "nn.RNN", "nn.GRU", "nn.LSTM", "nn.Softmax2d", "nn.CircularPad1d",
    "nn.CircularPad2d", "nn.CircularPad3d",
})
# Their forward checks a mask's type while tracing (`F._none_or_dtype` refuses fx's Proxy).
TYPE_CHECKED = frozenset({"nn.TransformerEncoder", "nn.TransformerEncoderLayer"})
# Lazy modules create their parameters on the first call: a graph traced before it runs on none.
LAZY = frozenset({"nn.LazyConv1d", "nn.LazyConv2d", "nn.LazyConv3d"})
# make_fx needs every shape before the values: these branch on a value (GaussianNLLLoss checks that
# its variance is positive) or return a shape that depends on values (CTCLoss).
VALUE_DEPENDENT = frozenset({"nn.GaussianNLLLoss", "nn.CTCLoss"})


def traceable(module_info: Any) -> bool:
    """Whether fx can trace the module of a ModuleInfo (the `fx` stage's subjects)."""
    return module_info.name not in CONTROL_FLOW | TYPE_CHECKED | LAZY


class Level(StrEnum):
    """The graph a pass rewrites: the module's own (call_module nodes), or its ATen graph."""

    MODULE = "module"
    ATEN = "aten"


@dataclass(frozen=True)
class Subject:
    """A module of module_db, its fx graph, and one forward input bound to the graph's placeholders."""

    name: str
    module: torch.nn.Module
    graph: fx.GraphModule
    inputs: tuple[Any, ...]  # positional, in the order of the graph's placeholders

    def expected(self) -> Any:
        return seeded(copy.deepcopy(self.module), *self.inputs)

    def state(self) -> dict[str, torch.Tensor]:
        return {**dict(self.graph.named_parameters()), **dict(self.graph.named_buffers())}

    def flat_inputs(self) -> list[Any]:
        """The ATen graph's inputs: the module's parameters and buffers, then the forward input."""
        return [t.detach() for t in self.state().values()] + list(self.inputs)

    def aten(self, tracing_mode: str = "real", functional: bool = False) -> fx.GraphModule:
        """The module's ATen graph, as AOTAutograd traces it: `make_fx` over a functional call with
        the parameters as inputs (so fake and symbolic tracing meet no real tensor)."""
        from torch.fx.experimental.proxy_tensor import make_fx
        from torch.func import functional_call, functionalize

        names, graph = list(self.state()), self.graph

        def call(*flat: Any) -> Any:
            return functional_call(graph, dict(zip(names, flat[:len(names)])), tuple(flat[len(names):]))

        return make_fx(functionalize(call) if functional else call, tracing_mode=tracing_mode)(*self.flat_inputs())


def subject(module_info: Any, device: str, dtype: torch.dtype) -> Subject:
    """The first forward input of a ModuleInfo, its module in eval mode, traced by fx."""
    module, args, kwargs = first_module(module_info, device, dtype, training=False)
    graph = fx.symbolic_trace(module)
    bound = inspect.signature(graph.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return Subject(module_info.name, module, graph, tuple(bound.arguments.values()))


Run = Callable[[], Any]


def call_nodes(graph: fx.GraphModule, op: str) -> list[fx.Node]:
    return [node for node in graph.graph.nodes if node.op == op]


# --- Passes over the module's own graph ------------------------------------------------------------

def interpreter(case: TestCase, s: Subject) -> Run:
    return lambda: fx.Interpreter(s.graph).run(*s.inputs)


def transformer(case: TestCase, s: Subject) -> Run:
    rebuilt = fx.Transformer(s.graph).transform()
    return lambda: rebuilt(*s.inputs)


def run_keeping_values(graph: fx.GraphModule, *inputs: Any) -> tuple[Any, dict[fx.Node, Any]]:
    """The graph run by fx's Interpreter from one RNG state: its output, and every node's value."""
    interpreter = fx.Interpreter(graph, garbage_collect_values=False)
    output = seeded(interpreter.run, *inputs)
    return output, interpreter.env


def assert_recorded(case: TestCase, values: dict[fx.Node, Any], recorded: Callable[[fx.Node], Any]) -> None:
    """Each tensor node's recorded shape and dtype (a pass's metadata) are those it computed."""
    for node, value in values.items():
        if isinstance(value, torch.Tensor):
            meta = recorded(node)
            case.assertEqual((meta.shape, meta.dtype), (value.shape, value.dtype), msg=f"node {node.name}")


def shape_prop(case: TestCase, s: Subject) -> Run:
    """ShapeProp's recorded shapes and dtypes are those the graph's nodes compute."""
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(s.graph).propagate(*s.inputs)
    output, values = run_keeping_values(s.graph, *s.inputs)
    assert_recorded(case, values, lambda node: node.meta["tensor_meta"])
    return lambda: output


def fake_tensor_prop(case: TestCase, s: Subject) -> Run:
    """FakeTensorProp's fake values have the shapes and dtypes of the real run's."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    graph = s.aten()
    FakeTensorProp(graph, FakeTensorMode(allow_non_fake_inputs=True)).propagate(*s.flat_inputs())
    output, values = run_keeping_values(graph, *s.flat_inputs())
    assert_recorded(case, values, lambda node: node.meta["val"])
    return lambda: output


def split_module(case: TestCase, s: Subject) -> Run:
    """Split into partitions of two nodes each: a graph of submodules that call each other."""
    from torch.fx.passes.split_module import split_module as split

    order = {node: index for index, node in enumerate(s.graph.graph.nodes)}
    parts = split(s.graph, s.module, lambda node: order[node] // 2)
    case.assertTrue(call_nodes(parts, "call_module"), "split_module made no partition")
    return lambda: parts(*s.inputs)


def split_by_tags(case: TestCase, s: Subject) -> Run:
    """Tag the first half of the computing nodes `first`, the rest `second` (in graph order, as the
    tags must follow the data flow), and split by tags."""
    from torch.fx.passes.split_utils import split_by_tags as split

    tags = ["first", "second"]
    computing = [node for node in s.graph.graph.nodes if node.op not in ("placeholder", "output")]
    for index, node in enumerate(computing):
        node.tag = tags[2 * index // len(computing)]
    parts = split(s.graph, tags)
    case.assertTrue(call_nodes(parts, "call_module"), "split_by_tags made no submodule")
    return lambda: parts(*s.inputs)


def const_fold(case: TestCase, s: Subject) -> Run:
    from torch.fx.experimental.const_fold import split_const_subgraphs

    folded = split_const_subgraphs(s.graph)
    return lambda: folded(*s.inputs)


def normalize(case: TestCase, s: Subject) -> Run:
    """Arguments to keywords by each target's signature, then operators to torch functions."""
    from torch.fx.experimental.normalize import NormalizeArgs, NormalizeOperators

    normalized = NormalizeOperators(NormalizeArgs(s.graph).transform()).transform()
    return lambda: normalized(*s.inputs)


def fuse(case: TestCase, s: Subject) -> Run:
    """Inference fusions: convolution with batch norm folded, dropout removed."""
    from torch.fx.experimental.optimization import fuse as fuse_modules
    from torch.fx.experimental.optimization import remove_dropout

    fused = remove_dropout(fuse_modules(copy.deepcopy(s.module)))
    return lambda: fused(*s.inputs)


def serialize(case: TestCase, s: Subject) -> Run:
    """A GraphModule pickled and copied: its code is generated anew from the graph each time."""
    restored = copy.deepcopy(pickle.loads(pickle.dumps(s.graph)))
    case.assertEqual(restored.code, s.graph.code)
    return lambda: restored(*s.inputs)


def meta_trace(case: TestCase, s: Subject) -> Run:
    """fx's meta tracer: traced with meta tensors for the inputs' shapes."""
    from torch.fx.experimental import meta_tracer

    names = [node.target for node in call_nodes(s.graph, "placeholder")]
    meta = {name: value.to("meta") for name, value in zip(names, s.inputs) if isinstance(value, torch.Tensor)}
    traced = meta_tracer.symbolic_trace(s.module, meta_args=meta)
    return lambda: traced(*s.inputs)


def merge_matmul(case: TestCase, s: Subject) -> Run:
    from torch.fx.experimental.merge_matmul import merge_matmul as merge

    merged = merge(s.module)
    return lambda: merged(*s.inputs)


def schema_types(case: TestCase, s: Subject) -> Run:
    from torch.fx.experimental.schema_type_annotation import AnnotateTypesWithSchema

    annotated = AnnotateTypesWithSchema(s.graph).transform()
    return lambda: annotated(*s.inputs)


def optimize_for_inference(case: TestCase, s: Subject) -> Run:
    """fx's inference optimizer: fusions, then convolutions and linears moved to MKL-DNN layouts."""
    from torch.fx.experimental.optimization import optimize_for_inference as optimize

    optimized = optimize(copy.deepcopy(s.module))
    return lambda: optimized(*s.inputs)


def accelerator_partition(mode: str) -> Callable[[TestCase, Subject], Run]:
    """fx's accelerator partitioner over two devices in `mode` (a PartitionMode), every node sized
    and given a latency: the partitions become submodules of a graph that must compute the same."""

    def partition(case: TestCase, s: Subject) -> Run:
        from torch.fx.experimental.accelerator_partitioner import Partitioner
        from torch.fx.experimental.partitioner_utils import Device, NodeLatency, PartitionerConfig, PartitionMode
        from torch.fx.passes.graph_manipulation import get_size_of_all_nodes

        if not all(isinstance(value, torch.Tensor) for value in s.inputs):
            case.skipTest(f"the partitioner sizes every input as a tensor: {s.name}'s forward takes others")
        get_size_of_all_nodes(s.graph, list(s.inputs))
        config = PartitionerConfig([Device("first", 1 << 30, 0), Device("second", 1 << 30, 1)], PartitionMode[mode],
                                   transfer_rate_bytes_per_sec=1e9,
                                   node_to_latency_mapping={node: NodeLatency(1.0, 2.0) for node in s.graph.graph.nodes})
        parts = Partitioner().partition_graph(s.graph, s.module, config)
        case.assertTrue(call_nodes(parts.module_with_submodules, "call_module"), "the partitioner made no partition")
        return lambda: parts.module_with_submodules(*s.inputs)

    partition.__name__ = f"partition_{mode}"
    return partition


# --- Passes over the module's ATen graph -----------------------------------------------------------

def aten_graph(case: TestCase, s: Subject) -> Run:
    graph = s.aten()
    return lambda: graph(*s.flat_inputs())


def symbolic_shapes(case: TestCase, s: Subject) -> Run:
    """The ATen graph traced with symbolic sizes (fx's ShapeEnv, as dynamic shapes trace it)."""
    graph = s.aten("symbolic")
    return lambda: graph(*s.flat_inputs())


def cse(case: TestCase, s: Subject) -> Run:
    from torch.fx.passes.dialect.common.cse_pass import CSEPass

    graph = CSEPass()(s.aten()).graph_module
    return lambda: graph(*s.flat_inputs())


def reinplace(case: TestCase, s: Subject) -> Run:
    """The functionalized ATen graph, its out-of-place ops turned back in place where safe."""
    from torch.fx.passes.reinplace import reinplace as reinplace_graph

    graph = reinplace_graph(s.aten(functional=True), *s.flat_inputs())
    return lambda: graph(*s.flat_inputs())


def capability_partition(case: TestCase, s: Subject) -> Run:
    """Every call_function node supported: partitions fused into submodules, as backends delegate."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupport

    class Functions(OperatorSupport):
        def is_node_supported(self, submodules: Any, node: fx.Node) -> bool:
            return node.op == "call_function"

    graph = CapabilityBasedPartitioner(s.aten(), Functions(), allows_single_node_partition=True).partition_and_fuse()
    case.assertTrue(call_nodes(graph, "call_module"), "the partitioner fused no partition")
    return lambda: graph(*s.flat_inputs())


def splitter(case: TestCase, s: Subject) -> Run:
    """fx's accelerator splitter: ops by a fixed rule on an 'accelerator', the rest on the CPU."""
    from torch.fx.passes.operator_support import OperatorSupport
    from torch.fx.passes.splitter_base import _SplitterBase, _SplitterSettingBase

    class EveryOther(OperatorSupport):
        def is_node_supported(self, submodules: Any, node: fx.Node) -> bool:
            return node.op == "call_function" and len(node.name) % 2 == 0

    inputs = s.flat_inputs()
    split = _SplitterBase(s.aten(), tuple(inputs), EveryOther(), _SplitterSettingBase(min_acc_module_size=1))()
    case.assertTrue(call_nodes(split, "call_module"), "the splitter made no submodule")
    return lambda: split(*inputs)


def pass_manager(case: TestCase, s: Subject) -> Run:
    """fx's pass manager running common-subexpression elimination, then dead-code elimination,
    with its graph lint after each."""
    from torch.fx.passes.dialect.common.cse_pass import CSEPass
    from torch.fx.passes.infra.pass_base import PassResult
    from torch.fx.passes.infra.pass_manager import PassManager

    def dead_code(graph: fx.GraphModule) -> PassResult:
        changed = graph.graph.eliminate_dead_code()
        graph.recompile()
        return PassResult(graph, changed)

    graph = PassManager([CSEPass(), dead_code], run_checks_after_each_pass=True)(s.aten()).graph_module
    return lambda: graph(*s.flat_inputs())


def rewrite(case: TestCase, s: Subject) -> Run:
    """The subgraph rewriter, with the graph's first operator call as the pattern and a copy of it
    as the replacement: every match found and rewritten."""
    from torch.fx import subgraph_rewriter

    graph = s.aten()
    first = next(node for node in graph.graph.nodes if node.op == "call_function")
    pattern, inputs = fx.Graph(), {}

    def lifted(value: Any) -> Any:
        if isinstance(value, fx.Node) and value not in inputs:
            inputs[value] = pattern.placeholder(f"input_{len(inputs)}")
        return inputs.get(value, value) if isinstance(value, fx.Node) else value

    pattern.output(pattern.call_function(first.target, fx.node.map_aggregate(first.args, lifted),
                                         fx.node.map_aggregate(first.kwargs, lifted)))
    matched = fx.GraphModule(torch.nn.Module(), pattern)
    case.assertTrue(subgraph_rewriter.replace_pattern(graph, matched, copy.deepcopy(matched)),
                    f"the rewriter found no match of {first.target}")
    return lambda: graph(*s.flat_inputs())


def graph_pickler(case: TestCase, s: Subject) -> Run:
    """fx's graph pickler (how Inductor ships a graph to a compile subprocess), over the fake graph."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx._graph_pickler import GraphPickler

    graph = GraphPickler.loads(GraphPickler.dumps(s.aten("fake")), FakeTensorMode())
    graph.recompile()
    return lambda: graph(*s.flat_inputs())


def make_functional(case: TestCase, s: Subject) -> Run:
    """functorch's functional module: the module's code called with its parameters and buffers; and,
    where it has any, two copies stacked into an ensemble under vmap, each giving the module's output."""
    from torch._functorch.make_functional import combine_state_for_ensemble, make_functional_with_buffers

    function, params, buffers = make_functional_with_buffers(copy.deepcopy(s.module))
    if list(s.module.parameters()) or list(s.module.buffers()):
        stacked, *state = combine_state_for_ensemble([copy.deepcopy(s.module), copy.deepcopy(s.module)])
        batched = torch.vmap(stacked, in_dims=(0, 0, *[None] * len(s.inputs)), randomness="same")
        for copy_index in range(2):
            case.assertEqual(torch.utils._pytree.tree_map(lambda value: value[copy_index], seeded(batched, *state, *s.inputs)),
                             s.expected(), msg=f"ensemble copy {copy_index}")
    return lambda: function(params, buffers, *s.inputs)


def min_cut_partition(case: TestCase, s: Subject) -> Run:
    """AOTAutograd's joint graph split by the min-cut rematerialization partitioner (Inductor's):
    the forward's outputs and the gradients of the parameters and the first input through the
    partitioned backward, against the module's own autograd."""
    from torch._functorch.aot_autograd import aot_module
    from torch._functorch.compilers import min_cut_rematerialization_partition, nop

    def inputs() -> list[Any]:
        first, *rest = s.inputs
        return [first.detach().clone().requires_grad_(first.is_floating_point()), *rest]

    module, twin = copy.deepcopy(s.module), copy.deepcopy(s.module)
    split = aot_module(module, fw_compiler=nop, bw_compiler=nop, partition_fn=min_cut_rematerialization_partition)
    ours, theirs = inputs(), inputs()
    actual, expected = seeded(split, *ours), seeded(twin, *theirs)
    case.assertEqual(input_gradients(actual, [*module.parameters(), ours[0]]),
                     input_gradients(expected, [*twin.parameters(), theirs[0]]))
    return lambda: actual


# The accelerator partitioner's modes that need no model of their own (aot_based reads a given plan).
PARTITION_MODES = ("size_based", "cost_aware", "kl_based", "sparse_nn")


@dataclass(frozen=True)
class FxPass:
    name: str
    level: Level
    apply: Callable[[TestCase, Subject], Run]


PASSES = tuple(FxPass(function.__name__, level, function) for level, functions in (
    (Level.MODULE, (interpreter, transformer, shape_prop, split_module, split_by_tags, const_fold, normalize,
                    fuse, optimize_for_inference, serialize, meta_trace, merge_matmul, schema_types, make_functional,
                    *(accelerator_partition(mode) for mode in PARTITION_MODES))),
    (Level.ATEN, (aten_graph, symbolic_shapes, fake_tensor_prop, cse, reinplace, capability_partition, splitter,
                  pass_manager, rewrite, graph_pickler, min_cut_partition)),
) for function in functions)


def check_pass(case: TestCase, fx_pass: FxPass, module_info: Any, device: str, dtype: torch.dtype) -> None:
    """One pass over one module's graph: the rewritten graph computes what the module computes."""
    if fx_pass.level is Level.ATEN and module_info.name in VALUE_DEPENDENT:
        case.skipTest(f"make_fx cannot trace {module_info.name}: it branches on values or returns a shape that depends on them")
    s = subject(module_info, device, dtype)
    run = fx_pass.apply(case, s)
    case.assertEqual(seeded(run), s.expected(), exact_dtype=True)
