"""Normalize: recorded calls -> deduplicated manifest cases with inputs the runner can build.

A case stands for every call with the same op and the same signature (shapes, dtypes, strides, scalar
and list arguments); the first such call provides the value facts its inputs are synthesized from, and
the description lists where the calls came from. Inputs are chosen to stay valid for the op:

- integer and bool tensors up to `capture.EXACT_MAX_ELEMENTS` elements keep their exact values
  (offsets, router indices and masks are only valid with their structure); larger ones are drawn
  from [observed min, observed max + 1), so an index stays inside the dim it indexes;
- float tensors are drawn uniformly from the observed finite range rounded outwards to two
  significant digits, so inputs that were positive (variances for rsqrt, probabilities for log)
  stay positive; constant tensors stay constant.

Calls the schema cannot express (non-aten ops, private ops without a public entry point, dtypes the
loader does not know, tensor lists with None entries) are not emitted but counted in `Scan.omitted`,
which the manifest's header lists, so nothing is dropped silently.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

from op_manifests.loader import DTYPES, FLOAT_DTYPES
from harness.scan import ops
from harness.scan.capture import Call, DtypeObs, EnumObs, Observed, OpaqueObs, Param, TensorObs, ValueFacts

KNOWN_DTYPES = frozenset(DTYPES.values())  # the op-manifest loader's canonical dtype names
DEFAULT_DTYPE = "float32"
# Largest magnitude of a synthesized float: the runner draws uniform values in float32 as
# `rand * (high - low) + low`, so |high - low| must stay finite; fp16 has a far smaller range.
_FLOAT_LIMIT = {"float16": 3.0e4, "bfloat16": 1.0e38, "float32": 1.0e38, "float64": 1.0e38}
# Below this magnitude a recorded range is rounding noise of the capturing machine's kernels (tiny
# gradients of a randomly initialized model: 3.0e-08 on one CPU, 4.5e-08 on another), not structure:
# such a range is drawn from [-NOISE_FLOOR, NOISE_FLOOR], keeping only its sign, so the manifest is the
# same wherever it is regenerated.
NOISE_FLOOR = 1.0e-6
# Enum values equal to the argument's default (None): dropping them changes nothing.
_DEFAULT_ENUMS = frozenset({("layout", "strided"), ("memory_format", "preserve_format")})
MAX_SITES_SHOWN = 3


@dataclass(frozen=True)
class TensorInput:
    shape: tuple[int, ...]
    dtype: str
    init: str | None  # None: the loader's default (randn for floats)
    init_args: tuple[tuple[str, object], ...] = ()
    stride: tuple[int, ...] | None = None
    storage_offset: int = 0


@dataclass(frozen=True)
class ValueInput:
    value: object  # YAML scalar or nested tuples of scalars


@dataclass(frozen=True)
class DtypeInput:
    name: str


@dataclass(frozen=True)
class TensorListInput:
    items: tuple[TensorInput, ...]


Input = TensorInput | ValueInput | DtypeInput | TensorListInput


@dataclass(frozen=True)
class Case:
    name: str
    op: str
    inputs: tuple[Input, ...]
    attrs: tuple[tuple[str, Input], ...]
    description: str
    compare: str = "values"  # "values" | "metadata"
    skip_reason: str | None = None
    layout: bool = False  # has an explicitly strided input (marked op_layout)


@dataclass(frozen=True)
class Omission:
    op: str
    reason: str
    calls: int


@dataclass(frozen=True)
class Scan:
    cases: tuple[Case, ...]
    omitted: tuple[Omission, ...]
    calls: int  # aten calls recorded
    capped: int  # distinct signatures left out by the case limit

    @property
    def distinct_ops(self) -> int:
        return len({case.op for case in self.cases})


class Unexpressible(Exception):
    """The manifest schema cannot describe this call; the message is the reason."""


@dataclass(frozen=True)
class _Draft:
    """One call made into a case (not yet named): the first call of its signature provides it."""

    key: str
    recorded: str  # aten.NAME.OVERLOAD as recorded
    op: str
    inputs: tuple[Input, ...]
    attrs: tuple[tuple[str, Input], ...]
    notes: tuple[str, ...]
    metadata_reason: str | None
    layout: bool


@dataclass
class _Group:
    draft: _Draft
    sites: list[str] = field(default_factory=list)
    calls: int = 0


def normalize(calls: Sequence[Call], max_cases: int) -> Scan:
    groups: dict[str, _Group] = {}
    omitted: Counter[tuple[str, str]] = Counter()
    for call in calls:
        try:
            draft = draft_case(call)
        except Unexpressible as exc:
            omitted[(call.qualified, str(exc))] += 1
            continue
        group = groups.setdefault(draft.key, _Group(draft))
        group.calls += 1
        site = site_text(call)
        if site not in group.sites:
            group.sites.append(site)
    kept = _cap(list(groups.values()), max_cases)
    cases = _name_cases(kept)
    omissions = tuple(Omission(op, reason, count) for (op, reason), count in sorted(omitted.items()))
    return Scan(cases, omissions, len(calls), len(groups) - len(kept))


def site_text(call: Call) -> str:
    where = str(call.site) if call.site is not None else "(no source line in the model's code)"
    return f"backward ({call.backward_of}) of {where}" if call.backward_of else where


def draft_case(call: Call) -> _Draft:
    if call.namespace != "aten":
        raise Unexpressible(f"not an aten op (namespace {call.namespace!r})")
    raw = {param.name: param.value for param in call.params}
    metadata_reason = ops.metadata_only_reason(call.name, raw)
    params, op, notes = _public_call(call)
    garbage = [p.name for p in call.params if any(t.values.uninitialized for t in _observed_tensors(p.value))]
    if garbage:
        notes.append(f"{', '.join(garbage)}: uninitialized memory (from empty*) when called; zeros stand in")
    inputs: list[Input] = []
    attrs: list[tuple[str, Input]] = []
    for param in params:
        converted = _argument(param, notes)
        if converted is None:
            continue
        if param.keyword:
            attrs.append((param.name, converted))
        elif attrs:
            raise Unexpressible(f"positional argument {param.name!r} after keyword arguments")
        else:
            inputs.append(converted)
    layout = any(isinstance(item, TensorInput) and item.stride is not None for item in _flat(inputs, attrs))
    return _Draft(_signature(call), call.qualified, op, tuple(inputs), tuple(attrs), tuple(notes), metadata_reason,
                  layout)


def _public_call(call: Call) -> tuple[tuple[Param, ...], str, list[str]]:
    """The params and op name to emit; private ops go through their public entry point."""
    if not call.name.startswith("_"):
        return call.params, ops.public_name(call.name, call.overload), []
    if call.name in ops.NOT_EMITTED:
        raise Unexpressible(ops.NOT_EMITTED[call.name])
    entry = ops.PUBLIC_ENTRIES.get(f"{call.name}.{call.overload}")
    if entry is None:
        raise Unexpressible("private aten op the op registry cannot name (no public entry in harness/scan/ops.py)")
    by_name = {param.name: param for param in call.params}
    why_not = entry.when({name: param.value for name, param in by_name.items()})
    if why_not:
        raise Unexpressible(why_not)
    unknown = set(by_name) - set(entry.positional) - set(entry.keyword) - {"half_to_float"}
    if unknown:
        raise Unexpressible(f"argument(s) {', '.join(sorted(unknown))} have no place in {entry.op}")
    params = [Param(name, False, by_name[name].value) for name in entry.positional if name in by_name]
    params += [Param(name, True, by_name[name].value) for name in entry.keyword if name in by_name]
    params += [Param(name, True, value) for name, value in entry.extra]  # type: ignore[arg-type]
    return tuple(params), entry.op, [f"recorded as {call.qualified}, run through its public entry point {entry.op}"]


def _argument(param: Param, notes: list[str]) -> Input | None:
    """The manifest input for one argument; None when the argument is dropped (see notes)."""
    value = param.value
    if isinstance(value, EnumObs):
        if not param.keyword:
            raise Unexpressible(f"positional {value.kind} argument {param.name!r}")
        if (value.kind, value.name) not in _DEFAULT_ENUMS:
            notes.append(f"{param.name}=torch.{value.name} dropped: the schema cannot spell it (only output "
                         "strides can differ)")
        return None
    try:
        return convert(value)
    except Unexpressible as exc:
        raise Unexpressible(f"argument {param.name!r}: {exc}") from None


def convert(value: Observed) -> Input:
    if isinstance(value, TensorObs):
        return tensor_input(value)
    if isinstance(value, DtypeObs):
        if value.name not in KNOWN_DTYPES:
            raise Unexpressible(f"dtype {value.name} is not one the manifest loader knows")
        return DtypeInput(value.name)
    if isinstance(value, (OpaqueObs, EnumObs)):
        raise Unexpressible(f"{getattr(value, 'text', None) or value} cannot be written in a manifest")
    if isinstance(value, tuple):
        if any(isinstance(item, TensorObs) for item in value):
            if not all(isinstance(item, TensorObs) for item in value):
                raise Unexpressible("a tensor list with None or non-tensor entries (tensor_list holds tensors only)")
            return TensorListInput(tuple(tensor_input(item) for item in value))  # type: ignore[arg-type]
        return ValueInput(_plain(value))
    return ValueInput(value)


def _plain(value: Observed) -> object:
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise Unexpressible(f"a list holding {type(value).__name__}")


def tensor_input(obs: TensorObs) -> TensorInput:
    if obs.dtype not in KNOWN_DTYPES:
        raise Unexpressible(f"tensor dtype {obs.dtype} is not one the manifest loader knows")
    strided = not obs.contiguous or obs.storage_offset != 0
    stride = obs.stride if strided else None
    init, init_args = choose_init(obs.dtype, obs.values, exact_allowed=not strided, empty=0 in obs.shape)
    return TensorInput(obs.shape, obs.dtype, init, init_args, stride, obs.storage_offset)


def choose_init(dtype: str, facts: ValueFacts, exact_allowed: bool, empty: bool) -> tuple[str | None, tuple]:
    """An init that reproduces what matters about the observed values (see the module docstring)."""
    if empty or facts.uninitialized:  # garbage values are never reproduced: zeros stand in, every run alike
        return "zeros", ()
    if dtype in FLOAT_DTYPES:
        return _float_init(dtype, facts)
    if facts.exact is not None and exact_allowed:
        return "data", (("values", facts.exact),)
    low, high = int(facts.low or 0), int(facts.high or 0)
    if low == high and low in (0, 1):
        return ("zeros" if low == 0 else "ones"), ()
    return "randint", (("high", high + 1), ("low", low))


def _float_init(dtype: str, facts: ValueFacts) -> tuple[str | None, tuple]:
    if facts.low is None or facts.high is None:
        return None, ()
    limit = _FLOAT_LIMIT[dtype]
    if facts.low == facts.high:
        if facts.low in (0.0, 1.0):
            return ("zeros" if facts.low == 0.0 else "ones"), ()
        value = max(-limit, min(limit, round_nearest(float(facts.low))))
        return "uniform", (("high", value), ("low", value))
    if max(abs(facts.low), abs(facts.high)) < NOISE_FLOOR:
        return "uniform", (("high", 0.0 if facts.high <= 0 else NOISE_FLOOR),
                           ("low", 0.0 if facts.low >= 0 else -NOISE_FLOOR))
    low = max(-limit, round_outward(float(facts.low), up=False))
    high = min(limit, round_outward(float(facts.high), up=True))
    return "uniform", (("high", high), ("low", low))


def round_outward(value: float, up: bool) -> float:
    """`value` rounded to two significant digits, towards +inf (`up`) or -inf: coarse enough that
    last-bit differences between runs do not change it, and it never crosses zero."""
    if value == 0.0 or not math.isfinite(value):
        return value
    exact = Decimal(repr(value))
    quantum = Decimal(1).scaleb(exact.adjusted() - 1)
    return float(exact.quantize(quantum, rounding=ROUND_CEILING if up else ROUND_FLOOR))


def round_nearest(value: float, digits: int = 4) -> float:
    """A constant rounded to `digits` significant digits: it stays constant (a scale, a fill value), and
    computed constants (a loss) do not change the file when their last bits differ between machines."""
    if value == 0.0 or not math.isfinite(value):
        return value
    exact = Decimal(repr(value))
    return float(exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=ROUND_HALF_EVEN))


def _signature(call: Call) -> str:
    """Dedupe key: the op and every argument, with tensors reduced to shape, dtype and layout."""
    return repr((call.qualified, [(p.name, p.keyword, _shape_key(p.value)) for p in call.params]))


def _shape_key(value: Observed) -> object:
    if isinstance(value, TensorObs):
        layout = None if value.contiguous and value.storage_offset == 0 else (value.stride, value.storage_offset)
        return ("tensor", value.shape, value.dtype, layout)
    if isinstance(value, tuple):
        return tuple(_shape_key(item) for item in value)
    return repr(value)  # repr: NaN equals NaN, 1 differs from 1.0 and True


def _observed_tensors(value: Observed) -> Iterable[TensorObs]:
    if isinstance(value, TensorObs):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _observed_tensors(item)


def _flat(inputs: Iterable[Input], attrs: Iterable[tuple[str, Input]]) -> Iterable[Input]:
    for item in [*inputs, *(value for _, value in attrs)]:
        if isinstance(item, TensorListInput):
            yield from item.items
        else:
            yield item


def _cap(groups: list[_Group], max_cases: int) -> list[_Group]:
    """At most `max_cases`, in call order: the first signature of every op first, then the rest in order."""
    if len(groups) <= max_cases:
        return groups
    first_of_op: dict[str, int] = {}
    for index, group in enumerate(groups):
        first_of_op.setdefault(group.draft.recorded, index)
    chosen = set(sorted(first_of_op.values())[:max_cases])
    for index in range(len(groups)):
        if len(chosen) >= max_cases:
            break
        chosen.add(index)
    return [group for index, group in enumerate(groups) if index in chosen]


_NON_NAME = re.compile(r"[^A-Za-z0-9_]")


def _name_cases(groups: Sequence[_Group]) -> tuple[Case, ...]:
    counters: Counter[str] = Counter()
    cases = []
    for group in groups:
        draft = group.draft
        # index_put_.default -> index_put__default: in-place and out-of-place ops keep distinct names
        stem = _NON_NAME.sub("_", draft.op.removeprefix("torch.ops.aten.").removeprefix("torch."))
        name = f"{stem}_{counters[stem]}"
        counters[stem] += 1
        cases.append(Case(
            name=name,
            op=draft.op,
            inputs=draft.inputs,
            attrs=draft.attrs,
            description=_description(group),
            compare="metadata" if draft.metadata_reason else "values",
            layout=draft.layout,
        ))
    return tuple(cases)


def _description(group: _Group) -> str:
    lines = group.sites[:MAX_SITES_SHOWN]
    hidden = len(group.sites) - len(lines)
    if hidden:
        lines.append(f"... and {hidden} more call site{'s' if hidden > 1 else ''}")
    if group.calls > 1:
        lines.append(f"{group.calls} calls with this signature")
    lines.extend(group.draft.notes)
    if group.draft.metadata_reason:
        lines.append(f"compare: metadata because {group.draft.metadata_reason}")
    return "\n".join(lines)
