"""torch.fx's passes over `module_db`, for P3's `fx` stage (p3/test_fx_passes.py).

Every torch.compile goes through torch.fx: dynamo and AOTAutograd build fx graphs, Inductor and
torch.export rewrite them with fx's passes, and each rewrite generates Python source for the graph
and `exec`s it. That code is pure Python over graphs (node lists, name tables, generated source),
the kind a Python JIT compiles hot, and the compile stages reach only the passes their pipeline
happens to call. Here each pass runs on purpose, on two graphs of every module fx can trace: the
module's own graph (`symbolic_trace`), and its ATen graph (`make_fx` over the module with its
parameters as inputs, as AOTAutograd traces it). A pass must leave the graph computing what the
module computes: the check runs the rewritten graph and compares with the module run eagerly, and
where a pass promises a shape (partitions, metadata, types, guards, a culprit) the check asserts
that too, so a pass that silently did nothing, or took a shortcut, cannot pass. Some passes are
for some modules only (FxPass.applies): the sparse_nn partitioner for embedding tables, the
gradual type checkers for the layers they have rules for.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import operator
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import torch
import torch.fx as fx
from torch.testing._internal.common_utils import TestCase

from harness.torch_suites.compiled.compilechecks import first_module, input_gradients
from harness.torch_suites.shared.determinism import filling_uninitialized_memory, seeded

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
        return self.aten_of(self.flat_inputs(), tracing_mode, functional)

    def aten_of(self, flat: list[Any], tracing_mode: str, functional: bool = False) -> fx.GraphModule:
        """The ATen graph traced with `flat` (real, fake or symbolic values) for flat_inputs()."""
        from torch.fx.experimental.proxy_tensor import make_fx
        from torch.func import functional_call, functionalize

        names, graph = list(self.state()), self.graph

        def call(*flat: Any) -> Any:
            return functional_call(graph, dict(zip(names, flat[:len(names)])), tuple(flat[len(names):]))

        return make_fx(functionalize(call) if functional else call, tracing_mode=tracing_mode)(*flat)


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


def sparse_network(s: Subject, tables: int, rows: int) -> fx.GraphModule:
    """A sparse network (DLRM's shape) from an embedding module: copies of its table grown to `rows`
    rows (the added ones never looked up, so that, as in such networks, a table outweighs its
    lookups), each looked up with the module's input, then a dense part that averages the lookups:
    the network computes what the module computes."""
    root, graph = torch.nn.Module(), fx.Graph()
    inputs = tuple(graph.placeholder(node.target) for node in call_nodes(s.graph, "placeholder"))
    lookups = []
    for index in range(tables):
        table = copy.deepcopy(s.module)
        weight = table.weight.detach()
        table.weight = torch.nn.Parameter(torch.cat([weight, weight.new_zeros(rows - len(weight), weight.shape[1])]))
        root.add_module(f"table_{index}", table)
        lookups.append(graph.call_module(f"table_{index}", inputs))
    total = lookups[0]
    for lookup in lookups[1:]:
        total = graph.call_function(operator.add, (total, lookup))
    graph.output(graph.call_function(operator.truediv, (total, tables)))
    return fx.GraphModule(root, graph)


def sparse_nn_partition(case: TestCase, s: Subject) -> Run:
    """fx's partitioner in sparse_nn mode over a sparse network of two tables, on devices that can
    each hold one table with the dense part but not both tables: each table in a partition of its
    own on a device of its own, the dense part apart from them."""
    from torch.fx.experimental.accelerator_partitioner import Partitioner
    from torch.fx.experimental.partitioner_utils import Device, PartitionerConfig, PartitionMode, get_extra_size_of
    from torch.fx.passes.graph_manipulation import get_size_of_all_nodes

    graph = sparse_network(s, tables=2, rows=1024)
    get_size_of_all_nodes(graph, list(s.inputs))
    tables, dense = call_nodes(graph, "call_module"), call_nodes(graph, "call_function")
    capacity = max(get_extra_size_of(table, set()) for table in tables) + sum(get_extra_size_of(n, set()) for n in dense)
    partitioner = Partitioner()
    config = PartitionerConfig([Device(f"device_{i}", capacity, i) for i in range(len(tables))], PartitionMode.sparse_nn)
    parts = partitioner.partition_graph(graph, graph, config).module_with_submodules
    placed = [next(p for p in partitioner.partitions if table in p.nodes) for table in tables]
    case.assertEqual(len({p.partition_id for p in placed}), len(tables), "two tables share a partition")
    case.assertEqual(len({tuple(p.logical_device_ids) for p in placed}), len(tables), "two tables share a device")
    case.assertFalse(any(p.nodes & set(dense) for p in placed), "a table shares a partition with the dense part")
    return lambda: parts(*s.inputs)


def typed_layer(module_info: Any) -> bool:
    """Whether fx's gradual type checker has a rule, and a refinement rule, for the module's class."""
    from torch.fx.experimental.graph_gradual_typechecker import _INFERENCE_RULES, _REFINEMENT_RULES

    return module_info.module_cls in _INFERENCE_RULES.keys() & _REFINEMENT_RULES.keys()


def constrained_layer(module_info: Any) -> bool:
    """Whether fx's constraint generator (migrate_gradual_types) has a rule for the module's class."""
    from torch.fx.experimental.migrate_gradual_types.constraint_generator import _INFERENCE_RULES

    return module_info.module_cls in _INFERENCE_RULES


def typed_network(s: Subject, dims: tuple[Any, ...]) -> fx.GraphModule:
    """The module as a layer of a network (a call_module node: the checker's rules are written for
    layers), its input annotated with `dims`, type-checked."""
    from torch.fx.experimental.graph_gradual_typechecker import GraphTypeChecker
    from torch.fx.tensor_type import TensorType

    graph = fx.symbolic_trace(torch.nn.Sequential(s.module))
    call_nodes(graph, "placeholder")[0].type = TensorType(dims)
    GraphTypeChecker({}, graph).type_check()
    return graph


def gradual_types(case: TestCase, s: Subject) -> Run:
    """fx's gradual type checker: with the input's shape given, every node's inferred type is the
    shape it computes. With the first dimension unknown (Dyn), refinement and unification
    (unify_refinements) must tie the layer's first output dimension to the input's (one symbol)
    and keep the rest the shapes computed."""
    import sympy

    from torch.fx.experimental.graph_gradual_typechecker import _REFINEMENT_RULES
    from torch.fx.experimental.unify_refinements import infer_symbolic_types
    from torch.fx.tensor_type import Dyn, TensorType

    shape = tuple(s.inputs[0].shape)
    static = typed_network(s, shape)
    output, values = run_keeping_values(static, *s.inputs)
    for node, value in values.items():
        case.assertEqual(node.type, TensorType(tuple(value.shape)), msg=f"node {node.name}")
    if _REFINEMENT_RULES[type(s.module)].__name__ == "first_two_eq" and len(shape) < 4:
        case.skipTest(f"torch's refinement rule for 2-d pooling ties the first two dimensions (N, C) of input "
                      f"and output, so {s.name}'s unbatched input {shape} ties H to the pooled H: unification fails")
    if shape:
        gradual = typed_network(s, (Dyn, *shape[1:]))
        infer_symbolic_types(gradual)
        given, layer = call_nodes(gradual, "placeholder")[0], call_nodes(gradual, "call_module")[0]
        batch, *rest = layer.type.dims
        case.assertIsInstance(batch, sympy.Symbol)
        computed = values[call_nodes(static, "call_module")[0]].shape
        case.assertEqual((batch, tuple(rest)), (given.type.dims[0], tuple(computed[1:])))
    return lambda: output


Bindings = dict[tuple[str, int], Any]  # ("T", n): a tensor variable's type; ("D", n): a dimension variable's size


def resolved(term: Any, bindings: Bindings) -> Any:
    """A term of fx's gradual-type constraints with its bound variables replaced (follows chains);
    an arithmetic expression evaluated, or None while one of its variables is free."""
    from torch.fx.experimental.migrate_gradual_types.constraint import BinConstraintD, DVar, TVar
    from torch.fx.experimental.migrate_gradual_types.operation import op_add, op_div, op_mod, op_mul, op_sub

    while isinstance(term, (TVar, DVar)) and variable(term) in bindings:
        term = bindings[variable(term)]
    if isinstance(term, BinConstraintD) and term.op in (op_add, op_sub, op_mul, op_div, op_mod):
        lhs, rhs = resolved(term.lhs, bindings), resolved(term.rhs, bindings)
        if not (isinstance(lhs, int) and isinstance(rhs, int)):
            return None
        arithmetic = {op_add: operator.add, op_sub: operator.sub, op_mul: operator.mul,
                      op_div: operator.floordiv, op_mod: operator.mod}
        return arithmetic[term.op](lhs, rhs)
    return term


def variable(term: Any) -> tuple[str, int]:
    from torch.fx.experimental.migrate_gradual_types.constraint import TVar

    return ("T", term.tvar) if isinstance(term, TVar) else ("D", term.c)


def unified(lhs: Any, rhs: Any, bindings: Bindings) -> Bindings | None:
    """`bindings` extended so that the two terms are equal, or None where they cannot be."""
    from torch.fx.experimental.migrate_gradual_types.constraint import DVar, TVar
    from torch.fx.tensor_type import TensorType

    lhs, rhs = resolved(lhs, bindings), resolved(rhs, bindings)
    if lhs is None or rhs is None:
        return bindings  # an expression over free variables: left to the solver fx would call (z3)
    if isinstance(lhs, (TVar, DVar)):
        return bindings if lhs == rhs else {**bindings, variable(lhs): rhs}
    if isinstance(rhs, (TVar, DVar)):
        return {**bindings, variable(rhs): lhs}
    if isinstance(lhs, TensorType) and isinstance(rhs, TensorType):
        if len(lhs.dims) != len(rhs.dims):
            return None
        for left, right in zip(lhs.dims, rhs.dims):
            if (bindings := unified(left, right, bindings)) is None:
                return None
        return bindings
    return bindings if type(lhs) is type(rhs) and lhs == rhs else None


def satisfiable(goals: list[Any], bindings: Bindings) -> bool:
    """Whether lowered constraints (conjunctions, disjunctions, equalities and comparisons of types
    and dimensions) hold for some values of their free variables: a depth-first search that binds
    variables by equalities and backtracks over disjunctions; a comparison with a free side holds
    (our search is weaker than z3, the solver fx would use, only in accepting such comparisons)."""
    from torch.fx.experimental.migrate_gradual_types.constraint import F, T, BinaryConstraint, Conj, Disj
    from torch.fx.experimental.migrate_gradual_types.operation import op_eq, op_gt, op_leq, op_lt, op_neq

    if not goals:
        return True
    goal, rest = goals[0], goals[1:]
    if isinstance(goal, T):
        return satisfiable(rest, bindings)
    if isinstance(goal, Conj):
        return satisfiable([*goal.conjucts, *rest], bindings)
    if isinstance(goal, Disj):
        return any(satisfiable([choice, *rest], bindings) for choice in goal.disjuncts)
    if isinstance(goal, F) or not isinstance(goal, BinaryConstraint):
        raise ValueError(f"not lowered: {goal}")
    if goal.op == op_eq:
        return (extended := unified(goal.lhs, goal.rhs, bindings)) is not None and satisfiable(rest, extended)
    comparisons = {op_neq: operator.ne, op_leq: operator.le, op_lt: operator.lt, op_gt: operator.gt}
    if goal.op not in comparisons:
        raise ValueError(f"not lowered: {goal}")
    lhs, rhs = resolved(goal.lhs, bindings), resolved(goal.rhs, bindings)
    if goal.op != op_neq and not (isinstance(lhs, int) and isinstance(rhs, int)):
        return satisfiable(rest, bindings)  # a size compared with a free or dynamic one
    return comparisons[goal.op](lhs, rhs) and satisfiable(rest, bindings)


def lowered_constraints(graph: fx.GraphModule) -> tuple[Any, dict[fx.Node, Any]]:
    """fx's constraints for the types of a graph (migrate_gradual_types, generated from its
    annotations and rules), lowered by its transformation rules to their fixed point: what fx
    would hand z3. With each node's type variable."""
    from torch.fx.experimental.migrate_gradual_types.constraint_generator import ConstraintGenerator
    from torch.fx.experimental.migrate_gradual_types.constraint_transformation import transform_constraint

    generator = ConstraintGenerator(graph)
    constraints, counter = generator.generate_constraints(0)
    while (step := transform_constraint(constraints, counter))[0] != constraints:
        constraints, counter = step
    return constraints, generator.symbol_dict


def constrained_graphs(s: Subject) -> list[fx.GraphModule]:
    """The module as a layer of a network, and its own graph where fx has a rule for each operator."""
    from torch.fx.experimental.migrate_gradual_types.constraint_generator import _INFERENCE_RULES

    own = [node.target in _INFERENCE_RULES for node in s.graph.graph.nodes if node.op in ("call_function", "call_method")]
    return [fx.symbolic_trace(torch.nn.Sequential(s.module)), *([copy.deepcopy(s.graph)] if all(own) else [])]


def gradual_constraints(case: TestCase, s: Subject) -> Run:
    """fx's constraint-based gradual typing (migrate_gradual_types) over the module as a layer of
    a network and over its own graph (where fx has a rule for each operator), the inputs' types
    given: the lowered constraints must hold with every node typed as what it computes, and must
    not with the output given one more dimension, or one more in its last. (fx solves them with
    z3; without it, our search decides these: every node's type is given.)"""
    from torch.fx.experimental.migrate_gradual_types.constraint import BinConstraintT, Conj
    from torch.fx.experimental.migrate_gradual_types.operation import op_eq
    from torch.fx.tensor_type import TensorType

    shape = tuple(s.inputs[0].shape)
    if not shape:
        case.skipTest(f"fx's constraints give every tensor a rank from 1 to 4, so {s.name}'s 0-d input, "
                      "which torch runs, is refuted")
    if isinstance(s.module, torch.nn.AdaptiveAvgPool2d) and isinstance(s.module.output_size, int):
        case.skipTest("torch's constraint rule for AdaptiveAvgPool2d indexes output_size, so an int one "
                      "(AdaptiveAvgPool2d(3)) raises TypeError")
    if isinstance(s.module, torch.nn.MaxPool2d) and len(shape) != 4:
        case.skipTest(f"torch's constraint rule for MaxPool2d admits only (N, C, H, W) inputs, so {s.name}'s "
                      f"unbatched input {shape}, which torch runs, is refuted")
    for graph in constrained_graphs(s):
        for node, value in zip(call_nodes(graph, "placeholder"), s.inputs):
            node.type = TensorType(tuple(value.shape))
        constraints, types = lowered_constraints(graph)
        output, values = run_keeping_values(graph, *s.inputs)
        computed = {node: tuple(value.shape) for node, value in values.items() if node in types}
        last = call_nodes(graph, "output")[0].args[0]
        out = computed[last]
        wrong = [(*out, 1), *([(*out[:-1], out[-1] + 1)] if out else [])]
        for shapes, holds in ((computed, True), *(({**computed, last: shape}, False) for shape in wrong)):
            typed = Conj([constraints, *(BinConstraintT(types[node], TensorType(shape), op_eq)
                                         for node, shape in shapes.items())])
            case.assertEqual(satisfiable([typed], {}), holds, msg=f"{graph.code}\nthe constraints with the types {shapes}")
    return lambda: output


# --- Passes over the module's ATen graph -----------------------------------------------------------

def aten_graph(case: TestCase, s: Subject) -> Run:
    graph = s.aten()
    return lambda: graph(*s.flat_inputs())


def symbolic_shapes(case: TestCase, s: Subject) -> Run:
    """The ATen graph traced with symbolic sizes (fx's ShapeEnv, as dynamic shapes trace it)."""
    graph = s.aten("symbolic")
    return lambda: graph(*s.flat_inputs())


def shape_guards(case: TestCase, s: Subject) -> Run:
    """The ATen graph traced with every dimension of every input symbolic (no two sizes assumed
    equal), by a ShapeEnv that records its events: the guards it produced hold for the inputs
    traced, each output size's expression evaluates to the size computed, and the recorded
    events replay into an equal ShapeEnv (how PyTorch checks a ShapeEnv for divergence)."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.recording import replay_shape_env_events
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    env = ShapeEnv(should_record_events=True)
    mode, inputs = FakeTensorMode(shape_env=env), s.flat_inputs()
    fakes = [mode.from_tensor(value, symbolic_context=StatelessSymbolicContext([DimDynamic.DYNAMIC] * value.dim()))
             if isinstance(value, torch.Tensor) else value for value in inputs]
    with mode, enable_python_dispatcher():  # as symbolic tracing does: composite ops decompose in Python
        graph = s.aten_of(fakes, tracing_mode="fake")
    case.assertTrue(env.evaluate_guards_for_args([f for f in fakes if isinstance(f, torch.Tensor)],
                                                 [v for v in inputs if isinstance(v, torch.Tensor)]),
                    "the guards do not hold for the inputs traced")
    output = seeded(graph, *inputs)
    symbolic = [node.meta["val"] for node in torch.utils._pytree.tree_leaves(call_nodes(graph, "output")[0].args)]
    for fake, value in zip(symbolic, torch.utils._pytree.tree_leaves(output), strict=True):
        if isinstance(value, torch.Tensor):
            sizes = [env.size_hint(size.node.expr) if isinstance(size, torch.SymInt) else size for size in fake.shape]
            case.assertEqual(sizes, list(value.shape), msg="an output's symbolic sizes")
    env.check_equal(replay_shape_env_events(env.events))
    return lambda: output


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


def common_subexpressions(graph: fx.GraphModule) -> fx.GraphModule:
    from torch.fx.passes.dialect.common.cse_pass import CSEPass

    return CSEPass()(graph).graph_module


def dead_code(graph: fx.GraphModule) -> fx.GraphModule:
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return graph


def planted(case: TestCase, s: Subject) -> tuple[fx.GraphModule, int]:
    """The ATen graph with work for CSE and for dead-code elimination, each of which the other cannot
    do: a used copy of its first operator call, and an unused clone of that call's output. With the
    number of nodes it had before."""
    graph = s.aten()
    first = next((node for node in call_nodes(graph, "call_function") if node.users), None)
    if first is None:
        case.skipTest(f"{s.name}'s ATen graph calls no operator")
    size = len(graph.graph.nodes)
    with graph.graph.inserting_after(first):
        duplicate = graph.graph.node_copy(first)
    list(first.users)[-1].replace_input_with(first, duplicate)
    with graph.graph.inserting_after(duplicate):
        graph.graph.call_function(torch.ops.aten.clone.default, (first,))
    graph.recompile()
    return graph, size


def assert_cleaned(case: TestCase, graph: fx.GraphModule, size: int) -> None:
    """What CSE then dead-code elimination promise: the planted copy and clone gone, and run again,
    neither finds anything to remove."""
    from torch.fx.passes.dialect.common.cse_pass import CSEPass

    case.assertLessEqual(len(graph.graph.nodes), size, "the planted common subexpression or dead clone is left")
    case.assertFalse(CSEPass()(graph).modified, "a second CSE found a common subexpression left")
    case.assertFalse(graph.graph.eliminate_dead_code(), "dead code left after dead-code elimination")


def pass_manager(case: TestCase, s: Subject) -> Run:
    """fx's pass manager given dead-code elimination before CSE and the constraint that CSE comes
    first, over the ATen graph with work planted for each: it must reorder them, run them with its
    graph lint and our check after each, and leave a graph where neither finds anything to do."""
    from torch.fx.passes.infra.pass_manager import PassManager, pass_result_wrapper, this_before_that_pass_constraint

    ran: list[str] = []

    def recorded(function: Callable[[fx.GraphModule], fx.GraphModule]) -> Callable[[fx.GraphModule], Any]:
        def run(graph: fx.GraphModule) -> fx.GraphModule:
            ran.append(function.__name__)
            return function(graph)

        run.__name__ = function.__name__
        return pass_result_wrapper(run)

    cse, dce = recorded(common_subexpressions), recorded(dead_code)
    manager = PassManager([dce, cse], [this_before_that_pass_constraint(cse, dce)], run_checks_after_each_pass=True)
    manager.add_checks(lambda graph: graph.graph.lint())
    graph, size = planted(case, s)
    graph = manager(graph).graph_module
    case.assertEqual(ran, ["common_subexpressions", "dead_code"])
    assert_cleaned(case, graph, size)
    return lambda: graph(*s.flat_inputs())


def legacy_pass_manager(case: TestCase, s: Subject) -> Run:
    """fx's first pass manager (torch.fx.passes.pass_manager), which validates a schedule instead
    of solving it: dead-code elimination (logged, looped, in place) scheduled before CSE is refused
    under the constraint that CSE comes first, accepted once moved behind it; over the ATen graph
    with work planted for each, it must leave a graph where neither finds anything to do."""
    from torch.fx.passes.pass_manager import (PassManager, inplace_wrapper, log_hook, loop_pass,
                                              this_before_that_pass_constraint)

    dce = loop_pass(inplace_wrapper(log_hook(dead_code)), n_iter=2)
    manager = PassManager.build_from_passlist([dce])
    manager.add_pass(common_subexpressions)
    manager.add_constraint(this_before_that_pass_constraint(common_subexpressions, dce))
    with case.assertRaisesRegex(RuntimeError, "pass schedule constraint"):
        manager.validate()
    manager.remove_pass([dce.__name__])
    manager.add_pass(dce)
    graph, size = planted(case, s)
    graph = manager(graph)
    assert_cleaned(case, graph, size)
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


OPERATOR_OPS = frozenset({"call_module", "call_method", "call_function"})


@dataclass(frozen=True)
class Devices:
    """Equal devices for fx's accelerator partitioner, each smaller than the graph: two per operator,
    room for any plan and for a replica of each partition (the host saturated)."""

    capacity: int
    operators: int

    def config(self, mode: Any, graph: fx.GraphModule) -> Any:
        from torch.fx.experimental.partitioner_utils import Device, NodeLatency, PartitionerConfig

        latency = {node: NodeLatency(1.0, 2.0) for node in graph.graph.nodes}
        return PartitionerConfig([Device(f"device_{i}", self.capacity, i) for i in range(2 * self.operators)], mode,
                                 transfer_rate_bytes_per_sec=1e6, node_to_latency_mapping=latency, saturate_host=True)


def sized_graph(case: TestCase, s: Subject) -> tuple[fx.GraphModule, Devices]:
    """The ATen graph with every node sized (fx's size propagation), and devices that cannot hold
    all of it but can each hold its biggest operator with its inputs; skips a graph no split fits."""
    from torch.fx.experimental.partitioner_utils import get_extra_size_of
    from torch.fx.passes.graph_manipulation import get_size_of_all_nodes
    from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

    graph = s.aten()
    ShapeProp(graph).propagate(*s.flat_inputs())
    operators = [node for node in graph.graph.nodes if node.op in OPERATOR_OPS]
    if not all(isinstance(node.meta.get("tensor_meta"), TensorMetadata) for node in operators):
        case.skipTest(f"the partitioner sizes each output as one tensor: {s.name}'s ATen graph has an operator with several")
    get_size_of_all_nodes(graph)
    total = sum(node.size_bytes.total_size for node in graph.graph.nodes if node.op != "output")
    # + 1: the partitioner's device mapping wants strictly more room than a partition needs
    capacity = max(total // 2, *(get_extra_size_of(node, set()) for node in operators)) + 1
    if capacity >= total:
        case.skipTest(f"one operator of {s.name}'s ATen graph needs all of its {total} bytes: nothing to split")
    return graph, Devices(capacity, len(operators))


@dataclass(frozen=True)
class Partitioned:
    """What fx's accelerator partitioner made of a graph: its plan and the graph of submodules."""

    partitioner: Any  # its partitions and devices
    config: Any  # the PartitionerConfig it ran with
    graph: fx.GraphModule

    def latency(self) -> float:
        """The critical path through the partitions, transfers between them included."""
        from torch.fx.experimental.partitioner_utils import (get_latency_of_partitioned_graph,
                                                             get_partition_to_latency_mapping)

        partitions = self.partitioner.partitions
        latencies = get_partition_to_latency_mapping(partitions, self.config.node_to_latency_mapping)
        return get_latency_of_partitioned_graph(partitions, latencies, self.config.transfer_rate_bytes_per_sec)


def partitioned(case: TestCase, s: Subject, mode: str) -> Partitioned:
    """The ATen graph through the partitioner in `mode`, the host saturated with replicas."""
    from torch.fx.experimental.accelerator_partitioner import Partitioner
    from torch.fx.experimental.partitioner_utils import PartitionMode

    graph, devices = sized_graph(case, s)
    partitioner, config = Partitioner(), devices.config(PartitionMode[mode], graph)
    parts = partitioner.partition_graph(graph, torch.nn.Module(), config).module_with_submodules
    return Partitioned(partitioner, config, parts)


def assert_partitioned(case: TestCase, partitioner: Any, replicas: int) -> None:
    """More than one partition, each on at least `replicas` devices, none bigger than a device."""
    case.assertGreater(len(partitioner.partitions), 1, "the partitioner fit a graph bigger than a device into one partition")
    capacity = partitioner.devices[0].available_mem_bytes
    for partition in partitioner.partitions:
        name = f"partition {partition.partition_id}"
        case.assertGreaterEqual(len(partition.logical_device_ids), replicas, msg=f"{name}'s devices")
        case.assertLessEqual(partition.used_mem_bytes, capacity, msg=f"{name}'s size")


def accelerator_partition(mode: str) -> Callable[[TestCase, Subject], Run]:
    """fx's accelerator partitioner in `mode` (a PartitionMode) over the ATen graph, on devices too
    small for all of it and twice as many as needed (the host saturated: each partition replicated
    on a second device; cost_aware may put two partitions on one device, whose memory
    saturate_host counts twice where the device mapping counted their shared inputs once, so its
    replicas are not asserted): the partitions become submodules of a graph that must compute the same.
    kl_based swaps nodes between partitions only where that shortens the critical path, so it ends
    no slower than the size_based plan it starts from."""

    def partition(case: TestCase, s: Subject) -> Run:
        result = partitioned(case, s, mode)
        assert_partitioned(case, result.partitioner, replicas=1 if mode == "cost_aware" else 2)
        if mode == "kl_based":
            case.assertLessEqual(result.latency(), partitioned(case, s, "size_based").latency())
        return lambda: result.graph(*s.flat_inputs())

    partition.__name__ = f"partition_{mode}"
    return partition


class Planted(fx.Interpreter):
    """A backend that is off by one at the node named `culprit` (none: an honest one)."""

    def __init__(self, graph: fx.GraphModule, culprit: str | None) -> None:
        super().__init__(graph)
        self.culprit = culprit

    def run_node(self, node: fx.Node) -> Any:
        value = super().run_node(node)
        return value + 1 if node.name == self.culprit else value


def same(a: Any, b: Any) -> bool:
    pairs = zip(torch.utils._pytree.tree_leaves(a), torch.utils._pytree.tree_leaves(b), strict=True)
    return all(torch.allclose(x.double(), y.double(), equal_nan=True) if isinstance(x, torch.Tensor) else x == y
               for x, y in pairs)


def planted_minimizer(s: Subject, graph: fx.GraphModule, culprit: str | None, method: str) -> Any:
    """fx's net minimizer comparing the graph run as is (backend a) with Planted (backend b), both
    from one RNG state."""
    from torch.fx.passes.net_min_base import _MinimizerBase, _MinimizerSettingBase

    class Minimizer(_MinimizerBase):
        def run_a(self, mod: fx.GraphModule, inputs: Any, report_idx: int = -1) -> Any:
            return seeded(mod, *inputs)

        def run_b(self, mod: fx.GraphModule, inputs: Any, report_idx: int = -1) -> Any:
            return seeded(Planted(mod, culprit).run, *inputs)

    def compare(a: Any, b: Any, names: Any) -> tuple[float, bool]:
        return 0.0, same(a, b)

    return Minimizer(graph, s.flat_inputs(), compare, _MinimizerSettingBase(traverse_method=method))


def net_minimizer(case: TestCase, s: Subject) -> Run:
    """fx's net minimizer, which searches a graph for the nodes where two backends disagree: against
    a backend that is off by one at an operator that changes the graph's output, the sequential
    search (node by node) and the accumulating one (growing prefixes) must each name exactly that
    node, and against an honest backend, none. (Its binary search compares only the last node of
    each half, so on a graph that branches it can miss the node or blame another: not asserted.)"""
    graph, inputs = s.aten(), s.flat_inputs()
    output, values = run_keeping_values(graph, *inputs)
    floating = [node.name for node, value in values.items()
                if node.op == "call_function" and isinstance(value, torch.Tensor) and value.is_floating_point()]
    culprit = next((name for name in floating if not same(seeded(Planted(graph, name).run, *inputs), output)), None)
    if culprit is None:
        case.skipTest(f"no operator of {s.name}'s ATen graph changes its output when off by one")
    for method in ("sequential", "accumulate"):
        for planted, expected in ((culprit, {culprit}), (None, set())):
            # the minimizer prints each subgraph it tries; empty-like ops' memory filled, the same for a and b
            with contextlib.redirect_stdout(io.StringIO()), filling_uninitialized_memory():
                found = planted_minimizer(s, graph, planted, method).minimize()
            case.assertEqual({node.name for node in found}, expected, msg=f"{method} search, discrepancy at {planted}")
    return lambda: graph(*inputs)


# The accelerator partitioner's modes for any graph (sparse_nn wants embedding tables; aot_based
# reads a plan given to it).
PARTITION_MODES = ("size_based", "cost_aware", "kl_based")


def any_module(module_info: Any) -> bool:
    return True


def embedding(module_info: Any) -> bool:
    """Whether the module is an embedding table (what the partitioner's sparse_nn mode places)."""
    return issubclass(module_info.module_cls, (torch.nn.Embedding, torch.nn.EmbeddingBag))


@dataclass(frozen=True)
class FxPass:
    name: str
    level: Level
    apply: Callable[[TestCase, Subject], Run]
    applies: Callable[[Any], bool] = any_module  # to which ModuleInfos


PASSES = (*(FxPass(function.__name__, level, function) for level, functions in (
    (Level.MODULE, (interpreter, transformer, shape_prop, split_module, split_by_tags, const_fold, normalize,
                    fuse, optimize_for_inference, serialize, meta_trace, merge_matmul, schema_types, make_functional)),
    (Level.ATEN, (aten_graph, symbolic_shapes, shape_guards, fake_tensor_prop, cse, reinplace, capability_partition,
                  splitter, pass_manager, legacy_pass_manager, rewrite, graph_pickler, min_cut_partition, net_minimizer,
                  *(accelerator_partition(mode) for mode in PARTITION_MODES))),
) for function in functions),
    FxPass("partition_sparse_nn", Level.MODULE, sparse_nn_partition, embedding),
    FxPass("gradual_types", Level.MODULE, gradual_types, typed_layer),
    FxPass("gradual_constraints", Level.MODULE, gradual_constraints, constrained_layer))


def check_pass(case: TestCase, fx_pass: FxPass, module_info: Any, device: str, dtype: torch.dtype) -> None:
    """One pass over one module's graph: the rewritten graph computes what the module computes."""
    if fx_pass.level is Level.ATEN and module_info.name in VALUE_DEPENDENT:
        case.skipTest(f"make_fx cannot trace {module_info.name}: it branches on values or returns a shape that depends on them")
    s = subject(module_info, device, dtype)
    run = fx_pass.apply(case, s)
    case.assertEqual(seeded(run), s.expected(), exact_dtype=True)
