"""Loader: YAML manifest files -> validated, frozen CaseSpec values (RFC-0186 schema).

The YAML is only *composed* (harness/configure/yamlfile.py: safe loader, no object construction; its
one reader for configurations, tiers and manifests), and the node tree is walked
here so every error names `file:line:col`. A problem in one case makes only that case an error;
a problem in the file's header (`model`, `default`, `cases`) makes the file an error. Nothing
here imports torch: collecting thousands of cases must not pay for torch's import.
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.configure.yamlfile import YamlProblem, compose

from . import registry, safe_eval

# Canonical names are torch attribute names, so inputs.py maps them with getattr(torch, name).
DTYPES: Mapping[str, str] = {
    "fp16": "float16", "float16": "float16", "half": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp32": "float32", "float32": "float32", "float": "float32",
    "fp64": "float64", "float64": "float64", "double": "float64",
    "int8": "int8", "uint8": "uint8", "int16": "int16", "int32": "int32", "int64": "int64",
    "bool": "bool",
}  # fmt: skip
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
ERROR_TYPES = (
    "RuntimeError", "ValueError", "TypeError", "AssertionError", "IndexError",
    "NotImplementedError",
)  # fmt: skip
INITS = ("rand", "randn", "zeros", "ones", "arange", "randint", "uniform", "data")
PRESETS = ("noncontig_slice", "transpose_view", "expand")
COMPARE_MODES = ("values", "metadata")
INPUT_KINDS = ("tensor", "value", "py", "tensor_list", "file", "dtype")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}\Z")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CONTAINER_TAGS = {"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"}
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_SCALAR_TAGS = {
    _STR_TAG,
    _INT_TAG,
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}
_SEED_MAX = 2**63 - 1  # torch.Generator.manual_seed accepts 64-bit seeds




@dataclass(frozen=True)
class Limits:
    """Size limits; each is configurable from the pytest command line."""

    # 2**24 elements = 64 MiB in fp32: above any single activation a scanned model yields at
    # test batch sizes, yet the reference plus the candidate copy stay small on a CI runner.
    max_tensor_elements: int = 2**24
    # Four max-size tensors per case (256 MiB fp32, built twice): enough for attention blocks,
    # small enough that a 2-core / 24 GiB CI machine running xdist workers does not swap.
    max_case_elements: int = 2**26
    # 10,000 generated cases are ~1.5 MB of YAML; 16 MiB stops runaway files before parsing.
    max_manifest_bytes: int = 16 * 2**20
    # A .pt input holds at most max_case_elements fp32 values plus pickle framing.
    max_file_bytes: int = 256 * 2**20 + 2**20


@dataclass(frozen=True)
class Location:
    path: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


@dataclass(frozen=True)
class TensorSpec:
    """A generated tensor. `base_shape` is the contiguous storage built before the layout view."""

    shape: tuple[int, ...]
    dtype: str
    init: str
    init_args: tuple[tuple[str, object], ...]
    preset: str | None
    preset_args: tuple[tuple[str, object], ...]
    stride: tuple[int, ...] | None
    storage_offset: int
    base_shape: tuple[int, ...]
    where: Location

    @property
    def elements(self) -> int:
        """Counted for limits: the larger of storage and logical size, so an expanded view of a
        tiny storage cannot smuggle a huge tensor into the op (whose output would be that big)."""
        return max(math.prod(self.base_shape), math.prod(self.shape))


@dataclass(frozen=True)
class ValueArg:
    """A YAML scalar or list passed as is (lists stay lists, e.g. a size for view)."""

    value: object


@dataclass(frozen=True)
class PyArg:
    """A `py:` literal, already evaluated by safe_eval (tuples, slices, Ellipsis...)."""

    source: str
    value: object


@dataclass(frozen=True)
class TensorListArg:
    items: tuple[TensorSpec, ...]


@dataclass(frozen=True)
class FileArg:
    """A tensor stored in a .pt file inside the manifest's folder (loaded with weights_only)."""

    path: str
    key: str | None
    base_dir: str
    where: Location


@dataclass(frozen=True)
class DtypeArg:
    name: str


Arg = TensorSpec | ValueArg | PyArg | TensorListArg | FileArg | DtypeArg


@dataclass(frozen=True)
class SkipRule:
    condition: safe_eval.Condition
    reason: str
    where: Location


@dataclass(frozen=True)
class ErrorSpec:
    type: str
    match: str


@dataclass(frozen=True)
class CaseSpec:
    model: str
    name: str
    op: str
    args: tuple[Arg, ...]
    kwargs: tuple[tuple[str, Arg], ...]
    dtype: str
    seed: int
    rtol: float | None
    atol: float | None
    compare: str
    expects_error: ErrorSpec | None
    marks: tuple[str, ...]
    skip_if: tuple[SkipRule, ...]
    description: str
    where: Location
    op_where: Location
    signature: str

    @property
    def test_id(self) -> str:
        return f"{self.model}::{self.name}"


@dataclass(frozen=True)
class ManifestError:
    """One rejected case (case set) or file (case None), rendered as one line."""

    where: Location
    message: str
    case: str | None = None

    def __str__(self) -> str:
        return format_error(self.where, self.case, self.message)


@dataclass(frozen=True)
class Manifest:
    path: Path
    model: str
    where: Location  # of the `model:` value (file-level errors: of the error)
    description: str
    cases: tuple[CaseSpec, ...]
    errors: tuple[tuple[int, ManifestError], ...] = ()  # (case index, or -1 for the file, error)
    case_count: int = 0  # cases in the file, valid or not


def format_error(where: Location, case: str | None, message: str) -> str:
    """The one error-line grammar used everywhere: `path:line:col: case 'name': message`."""
    prefix = f"{where}: case '{case}': " if case is not None else f"{where}: "
    return prefix + " ".join(message.split())


class _Invalid(Exception):
    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


def load_dir(directory: Path, limits: Limits, display_root: Path | None = None) -> list[Manifest]:
    """All `*.yaml`/`*.yml` files directly in `directory`, sorted so every process agrees."""
    files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    # Composing allocates hundreds of thousands of acyclic node objects (freed by refcounting);
    # the cyclic GC would rescan them over and over: pausing it cut loading 10,000 cases by ~40%.
    paused = gc.isenabled()
    gc.disable()
    try:
        return [load_manifest(path, limits, display_root) for path in files]
    finally:
        if paused:
            gc.enable()


def load_manifest(path: Path, limits: Limits, display_root: Path | None = None) -> Manifest:
    display = _display(path, display_root)
    try:
        size = path.stat().st_size
        if size > limits.max_manifest_bytes:
            raise YamlProblem(1, 1, f"manifest is {size} bytes (limit {limits.max_manifest_bytes})")
        root = compose(path.read_bytes())
    except YamlProblem as problem:  # too big, not UTF-8, a forbidden character, invalid YAML
        return _file_error(path, Location(display, problem.line, problem.column), problem.message)
    except (OSError, yaml.YAMLError) as exc:
        return _file_error(path, Location(display, 1, 1), f"cannot read manifest: {exc}")
    return _ManifestReader(path, display, limits).read(root)


def _file_error(path: Path, where: Location, message: str) -> Manifest:
    return Manifest(path, path.stem, where, "", (), ((-1, ManifestError(where, message)),))


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()


@dataclass(frozen=True)
class _Defaults:
    dtype: str = "float32"
    seed: int = 0
    rtol: float | None = None
    atol: float | None = None


class _ManifestReader:
    """Walks one composed document. `_seen` rejects an aliased list/mapping on first reuse,
    which keeps the walk linear (an alias bomb is a few nodes reused exponentially often)."""

    def __init__(self, path: Path, display: str, limits: Limits) -> None:
        self.path = path
        self.display = display
        self.limits = limits
        self._seen: set[int] = set()

    def where(self, node: yaml.Node) -> Location:
        return Location(self.display, node.start_mark.line + 1, node.start_mark.column + 1)

    def read(self, root: yaml.Node | None) -> Manifest:
        if root is None:
            return _file_error(self.path, Location(self.display, 1, 1), "empty manifest")
        try:
            top = self.mapping(root, "manifest", ("model", "description", "default", "cases"))
            model_node = self.require(root, top, "model")
            model = self.name(model_node, "model")
            description = self.text(top["description"]) if "description" in top else ""
            defaults = self.defaults(top["default"]) if "default" in top else _Defaults()
            cases_node = self.require(root, top, "cases")
            if not isinstance(cases_node, yaml.SequenceNode):
                raise _Invalid(cases_node, "'cases' must be a list of cases")
        except _Invalid as exc:
            return _file_error(self.path, self.where(exc.node), exc.message)
        cases: list[CaseSpec] = []
        errors: list[tuple[int, ManifestError]] = []
        names: set[str] = set()
        for index, node in enumerate(cases_node.value):
            label = None
            try:
                label = self.case_label(node)
                if label in names:
                    raise _Invalid(node, f"duplicate case name '{label}' in model '{model}'")
                names.add(label)
                cases.append(self.case(node, model, label, defaults))
            except _Invalid as exc:
                label = label if label is not None else f"#{index}"
                errors.append((index, ManifestError(self.where(exc.node), exc.message, label)))
        return Manifest(
            self.path,
            model,
            self.where(model_node),
            description,
            tuple(cases),
            tuple(errors),
            len(cases_node.value),
        )

    # ---- generic node helpers -------------------------------------------------------------

    def visit(self, node: yaml.Node) -> yaml.Node:
        """Called for every list and mapping: a second visit means an alias. (Scalars are not
        tracked: an aliased scalar is one value and cannot multiply the work.)"""
        if isinstance(node, yaml.ScalarNode):
            return node  # callers report "expected a list/mapping"; scalar tags are checked in scalar()
        if id(node) in self._seen:
            raise _Invalid(node, "YAML aliases of lists/mappings are not supported; write the value out")
        self._seen.add(id(node))
        if node.tag not in _CONTAINER_TAGS:
            raise _Invalid(node, f"YAML tag '{node.tag}' is not allowed (plain lists and mappings only)")
        return node

    def mapping(self, node: yaml.Node, what: str, allowed: tuple[str, ...]) -> dict[str, yaml.Node]:
        self.visit(node)
        if not isinstance(node, yaml.MappingNode):
            raise _Invalid(node, f"{what} must be a mapping")
        result: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or key_node.tag != "tag:yaml.org,2002:str":
                raise _Invalid(key_node, f"{what} keys must be plain strings")
            if key not in allowed:
                raise _Invalid(key_node, f"unknown key '{key}' in {what} (allowed: {', '.join(allowed)})")
            if key in result:
                raise _Invalid(key_node, f"duplicate key '{key}' in {what}")
            result[key] = value_node
        return result

    def require(self, parent: yaml.Node, mapping: dict[str, yaml.Node], key: str) -> yaml.Node:
        if key not in mapping:
            raise _Invalid(parent, f"missing required key '{key}'")
        return mapping[key]

    def scalar(self, node: yaml.Node) -> object:
        if not isinstance(node, yaml.ScalarNode):
            self.visit(node)
            raise _Invalid(node, "expected a scalar")
        tag = node.tag
        if tag == _STR_TAG:  # the common cases, kept cheap: collection parses every scalar
            return node.value
        if tag == _INT_TAG and node.value.isdigit() and (node.value[0] != "0" or node.value == "0"):
            return int(node.value)  # plain decimal (YAML 1.1 reads a leading 0 as octal)
        if tag not in _SCALAR_TAGS:
            raise _Invalid(node, f"YAML tag '{tag}' is not allowed (plain scalars only)")
        # Call the tag's constructor directly: construct_object() would cache every node forever.
        return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, node)

    def plain(self, node: yaml.Node, depth: int = 0) -> object:
        """Scalars and (nested) lists; mappings are not values."""
        if depth > safe_eval.MAX_DEPTH:
            raise _Invalid(node, f"value nests deeper than {safe_eval.MAX_DEPTH} levels")
        if isinstance(node, yaml.SequenceNode):
            self.visit(node)
            return [self.plain(item, depth + 1) for item in node.value]
        if isinstance(node, yaml.MappingNode):
            raise _Invalid(node, "expected a scalar or a list, got a mapping")
        return self.scalar(node)

    def text(self, node: yaml.Node) -> str:
        value = self.scalar(node)
        if not isinstance(value, str):
            raise _Invalid(node, f"expected text, got {_type_name(value)}")
        return value

    def name(self, node: yaml.Node, what: str) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or not _NAME.match(value):
            raise _Invalid(
                node, f"{what} must be 1-100 chars of letters, digits, '_', '.', '-', got {value!r}"
            )
        return value

    def integer(self, node: yaml.Node, what: str, low: int = 0, high: int | None = None) -> int:
        value = self.scalar(node)
        if not _is_int(value) or value < low or (high is not None and value > high):
            bound = f" in [{low}, {high}]" if high is not None else f" >= {low}"
            raise _Invalid(node, f"{what} must be an integer{bound}, got {_show(value)}")
        return value  # type: ignore[return-value]

    def number(self, node: yaml.Node, what: str) -> float:
        value = self.scalar(node)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            hint = " (YAML reads 1e-3 as text; write 1.0e-3)" if isinstance(value, str) else ""
            raise _Invalid(node, f"{what} must be a number, got {_show(value)}{hint}")
        return float(value)

    def tolerance(self, node: yaml.Node, what: str) -> float:
        value = self.number(node, what)
        if not (math.isfinite(value) and value >= 0):
            raise _Invalid(node, f"{what} must be a finite number >= 0, got {value}")
        return value

    def dtype(self, node: yaml.Node) -> str:
        value = self.scalar(node)
        if not isinstance(value, str) or value not in DTYPES:
            raise _Invalid(node, f"unknown dtype {_show(value)} (known: {', '.join(DTYPES)})")
        return DTYPES[value]

    def choice(self, node: yaml.Node, what: str, options: tuple[str, ...]) -> str:
        value = self.scalar(node)
        if value not in options:
            raise _Invalid(node, f"unknown {what} {_show(value)} (known: {', '.join(options)})")
        return value  # type: ignore[return-value]

    def int_list(self, node: yaml.Node, what: str) -> tuple[int, ...]:
        self.visit(node)
        if not isinstance(node, yaml.SequenceNode):
            raise _Invalid(node, f"{what} must be a list of integers >= 0")
        return tuple(self.integer(item, f"{what} entries") for item in node.value)

    # ---- schema ---------------------------------------------------------------------------

    def defaults(self, node: yaml.Node) -> _Defaults:
        keys = self.mapping(node, "default", ("dtype", "seed", "rtol", "atol"))
        return _Defaults(
            dtype=self.dtype(keys["dtype"]) if "dtype" in keys else "float32",
            seed=self.integer(keys["seed"], "seed", 0, _SEED_MAX) if "seed" in keys else 0,
            rtol=self.tolerance(keys["rtol"], "rtol") if "rtol" in keys else None,
            atol=self.tolerance(keys["atol"], "atol") if "atol" in keys else None,
        )

    def case_label(self, node: yaml.Node) -> str:
        if not isinstance(node, yaml.MappingNode):
            raise _Invalid(node, "each case must be a mapping")
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == "name":
                return self.name(value_node, "case name")
        raise _Invalid(node, "missing required key 'name'")

    def case(self, node: yaml.Node, model: str, name: str, defaults: _Defaults) -> CaseSpec:
        keys = self.mapping(node, "case", _CASE_KEYS)
        op_node = self.require(node, keys, "op")
        if not isinstance(op_node, yaml.ScalarNode):
            raise _Invalid(op_node, "op must be a name like 'torch.add'")
        op = self.scalar(op_node)
        try:
            registry.parse(op)  # type: ignore[arg-type]
        except registry.UnknownOp as exc:
            raise _Invalid(op_node, str(exc)) from None
        dtype = self.dtype(keys["dtype"]) if "dtype" in keys else defaults.dtype
        rtol = self.tolerance(keys["rtol"], "rtol") if "rtol" in keys else defaults.rtol
        atol = self.tolerance(keys["atol"], "atol") if "atol" in keys else defaults.atol
        if (rtol is None) != (atol is None):
            raise _Invalid(node, "rtol and atol must be set together (or both left to torch's defaults)")
        args = self.inputs(keys["inputs"], dtype) if "inputs" in keys else ()
        kwargs = self.attrs(keys["attrs"], dtype) if "attrs" in keys else ()
        self.check_case_size(node, args + tuple(arg for _, arg in kwargs))
        return CaseSpec(
            model=model,
            name=name,
            op=op,  # type: ignore[arg-type]
            args=args,
            kwargs=kwargs,
            dtype=dtype,
            seed=self.integer(keys["seed"], "seed", 0, _SEED_MAX) if "seed" in keys else defaults.seed,
            rtol=rtol,
            atol=atol,
            compare=self.choice(keys["compare"], "compare mode", COMPARE_MODES)
            if "compare" in keys
            else "values",
            expects_error=self.expects_error(keys["expects_error"]) if "expects_error" in keys else None,
            marks=self.marks(keys["mark"]) if "mark" in keys else (),
            skip_if=self.skip_rules(keys["skip_if"]) if "skip_if" in keys else (),
            description=self.text(keys["description"]) if "description" in keys else "",
            where=self.where(node),
            op_where=self.where(op_node),
            signature=_signature(op, dtype, args, kwargs),  # type: ignore[arg-type]
        )

    def inputs(self, node: yaml.Node, dtype: str) -> tuple[Arg, ...]:
        self.visit(node)
        if not isinstance(node, yaml.SequenceNode):
            raise _Invalid(node, "inputs must be a list of {tensor|value|py|tensor_list|file|dtype: ...}")
        return tuple(self.argument(item, dtype) for item in node.value)

    def attrs(self, node: yaml.Node, dtype: str) -> tuple[tuple[str, Arg], ...]:
        self.visit(node)
        if not isinstance(node, yaml.MappingNode):
            raise _Invalid(node, "attrs must be a mapping of keyword arguments")
        result: list[tuple[str, Arg]] = []
        for key_node, value_node in node.value:
            key = self.scalar(key_node)
            if not isinstance(key, str) or not _IDENTIFIER.match(key) or key.startswith("__"):
                raise _Invalid(key_node, f"attrs keys must be keyword names, got {_show(key)}")
            if any(key == existing for existing, _ in result):
                raise _Invalid(key_node, f"duplicate key '{key}' in attrs")
            if isinstance(value_node, yaml.MappingNode):
                result.append((key, self.argument(value_node, dtype)))
            else:
                result.append((key, ValueArg(self.plain(value_node))))
        return tuple(result)

    def argument(self, node: yaml.Node, dtype: str) -> Arg:
        if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
            raise _Invalid(node, f"each input must be a mapping with one key: {', '.join(INPUT_KINDS)}")
        kind = self.mapping(node, "input", INPUT_KINDS)
        ((key, value),) = kind.items()
        if key == "tensor":
            return self.tensor(value, dtype)
        if key == "value":
            return ValueArg(self.plain(value))
        if key == "py":
            source = self.scalar(value)
            try:
                return PyArg(str(source), safe_eval.literal(source))  # type: ignore[arg-type]
            except safe_eval.UnsafeExpression as exc:
                raise _Invalid(value, f"py: {exc}") from None
        if key == "tensor_list":
            self.visit(value)
            if not isinstance(value, yaml.SequenceNode):
                raise _Invalid(value, "tensor_list must be a list of tensor descriptions")
            return TensorListArg(tuple(self.tensor(item, dtype) for item in value.value))
        if key == "file":
            return self.file(value)
        return DtypeArg(self.dtype(value))

    def tensor(self, node: yaml.Node, case_dtype: str) -> TensorSpec:
        keys = self.mapping(node, "tensor", _TENSOR_KEYS)
        dtype = self.dtype(keys["dtype"]) if "dtype" in keys else case_dtype
        init = self.choice(keys["init"], "init", INITS) if "init" in keys else _default_init(dtype)
        if "init" not in keys and "init_args" in keys:
            raise _Invalid(keys["init_args"], "init_args given without an init")
        data = None
        if init == "data":
            data_node = keys.get("init_args")
            if data_node is None:
                raise _Invalid(node, "init: data needs init_args: {values: [...]}")
            data = self.data(data_node)
        if "shape" in keys:
            shape = self.int_list(keys["shape"], "shape")
        elif data is not None:
            shape = data[1]
        else:
            raise _Invalid(node, "missing required key 'shape'")
        if data is not None and data[1] != shape:
            raise _Invalid(
                keys["shape"], f"shape {list(shape)} does not match init_args values {list(data[1])}"
            )
        if data is not None:
            init_args = data[0]
        elif "init" not in keys and init == "randint":
            init_args = (("high", 2 if dtype == "bool" else 10), ("low", 0))
        else:
            init_args = self.init_args(keys.get("init_args"), init, node)
        preset = self.choice(keys["preset"], "preset", PRESETS) if "preset" in keys else None
        if preset is None and "preset_args" in keys:
            raise _Invalid(keys["preset_args"], "preset_args given without a preset")
        stride = self.int_list(keys["stride"], "stride") if "stride" in keys else None
        offset = self.integer(keys["storage_offset"], "storage_offset") if "storage_offset" in keys else 0
        if (stride is not None or offset) and preset is not None:
            raise _Invalid(node, "use either a preset or stride/storage_offset, not both")
        if (stride is not None or offset or preset) and init == "data":
            raise _Invalid(
                node, "init: data describes a contiguous tensor; use a file: input for strided values"
            )
        if "storage_offset" in keys and stride is None:
            raise _Invalid(keys["storage_offset"], "storage_offset needs an explicit stride")
        preset_args: tuple[tuple[str, object], ...] = ()
        if preset is not None:
            preset_args = self.preset_args(keys.get("preset_args"), preset, shape, node)
        if stride is not None and len(stride) != len(shape):
            raise _Invalid(keys["stride"], f"stride has {len(stride)} entries but shape has {len(shape)}")
        base_shape = _base_shape(shape, preset, dict(preset_args), stride, offset)
        spec = TensorSpec(
            shape, dtype, init, init_args, preset, preset_args, stride, offset, base_shape, self.where(node)
        )
        if spec.elements > self.limits.max_tensor_elements:
            raise _Invalid(
                node,
                f"tensor needs {spec.elements} elements (limit {self.limits.max_tensor_elements}; "
                "raise it with --manifest-max-tensor-elements)",
            )
        return spec

    def data(self, node: yaml.Node) -> tuple[tuple[tuple[str, object], ...], tuple[int, ...]]:
        keys = self.mapping(node, "init_args", ("values",))
        values_node = self.require(node, keys, "values")
        values = self.plain(values_node)
        shape = _data_shape(values)
        if shape is None:
            raise _Invalid(values_node, "values must be a number or a rectangular nested list of numbers")
        if math.prod(shape) > self.limits.max_tensor_elements:
            raise _Invalid(values_node, f"values hold more than {self.limits.max_tensor_elements} elements")
        return (("values", _freeze(values)),), shape

    def init_args(
        self, node: yaml.Node | None, init: str, parent: yaml.Node
    ) -> tuple[tuple[str, object], ...]:
        allowed = {"randint": ("low", "high"), "uniform": ("low", "high")}.get(init, ())
        if node is None:
            if init == "randint":
                raise _Invalid(parent, "init: randint needs init_args: {high: N} (low defaults to 0)")
            return ()
        if not allowed:
            raise _Invalid(node, f"init '{init}' takes no init_args")
        keys = self.mapping(node, "init_args", allowed)
        if init == "randint":
            low = self.scalar(keys["low"]) if "low" in keys else 0
            high = self.scalar(self.require(node, keys, "high"))
            if not (_is_int(low) and _is_int(high) and low < high):  # type: ignore[operator]
                raise _Invalid(
                    node, f"randint needs integers low < high, got low={_show(low)} high={_show(high)}"
                )
        else:
            low = self.number(keys["low"], "low") if "low" in keys else 0.0
            high = self.number(keys["high"], "high") if "high" in keys else 1.0
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise _Invalid(node, f"uniform needs finite low <= high, got low={low} high={high}")
        return (("high", high), ("low", low))

    def preset_args(
        self, node: yaml.Node | None, preset: str, shape: tuple[int, ...], parent: yaml.Node
    ) -> tuple[tuple[str, object], ...]:
        """Fill defaults and normalize dims to non-negative, so equal layouts dedupe equal."""
        if not shape:
            raise _Invalid(parent, f"preset '{preset}' needs a tensor with at least one dimension")
        allowed = {
            "noncontig_slice": ("dim", "step"),
            "transpose_view": ("dim0", "dim1"),
            "expand": ("dims",),
        }[preset]
        keys = self.mapping(node, "preset_args", allowed) if node is not None else {}
        args: dict[str, object] = {}
        if preset == "noncontig_slice":
            args["dim"] = self.dim(keys.get("dim"), 0, shape, parent)
            args["step"] = self.integer(keys["step"], "step", 1) if "step" in keys else 2
        elif preset == "transpose_view":
            args["dim0"] = self.dim(keys.get("dim0"), -2 if len(shape) > 1 else 0, shape, parent)
            args["dim1"] = self.dim(keys.get("dim1"), -1, shape, parent)
            if args["dim0"] == args["dim1"]:
                raise _Invalid(node or parent, "transpose_view needs two different dims")
        else:
            dims_node = keys.get("dims")
            dims = self.plain(dims_node) if dims_node is not None else [0]
            if not isinstance(dims, list) or not all(_is_int(d) for d in dims):
                raise _Invalid(dims_node or parent, "dims must be a list of integers")
            args["dims"] = tuple(sorted({self.dim_value(d, shape, dims_node or parent) for d in dims}))
        return tuple(sorted(args.items()))

    def dim(self, node: yaml.Node | None, default: int, shape: tuple[int, ...], parent: yaml.Node) -> int:
        if node is None:
            return self.dim_value(default, shape, parent)
        return self.dim_value(self.scalar(node), shape, node)

    def dim_value(self, value: object, shape: tuple[int, ...], node: yaml.Node) -> int:
        if not _is_int(value) or not -len(shape) <= value < len(shape):  # type: ignore[operator]
            raise _Invalid(node, f"dim {_show(value)} is out of range for shape {list(shape)}")
        return value % len(shape)  # type: ignore[operator]

    def file(self, node: yaml.Node) -> FileArg:
        if isinstance(node, yaml.MappingNode):
            keys = self.mapping(node, "file", ("path", "key"))
            path_node = self.require(node, keys, "path")
            key = self.text(keys["key"]) if "key" in keys else None
        else:
            path_node, key = node, None
        relative = self.text(path_node)
        base_dir = self.path.parent
        try:
            resolved = confined_path(base_dir, relative)
            size = resolved.stat().st_size
        except (ValueError, OSError) as exc:
            raise _Invalid(path_node, f"file {relative!r}: {exc}") from None
        if size > self.limits.max_file_bytes:
            raise _Invalid(
                path_node, f"file {relative!r} is {size} bytes (limit {self.limits.max_file_bytes})"
            )
        return FileArg(relative, key, str(base_dir), self.where(path_node))

    def expects_error(self, node: yaml.Node) -> ErrorSpec:
        keys = self.mapping(node, "expects_error", ("type", "match"))
        kind = self.choice(self.require(node, keys, "type"), "error type", ERROR_TYPES)
        return ErrorSpec(kind, self.text(keys["match"]) if "match" in keys else "")

    def marks(self, node: yaml.Node) -> tuple[str, ...]:
        names = self.plain(node)
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not all(isinstance(n, str) and _IDENTIFIER.match(n) for n in names):
            raise _Invalid(node, "mark must be a marker name or a list of marker names")
        return tuple(names)

    def skip_rules(self, node: yaml.Node) -> tuple[SkipRule, ...]:
        if isinstance(node, yaml.SequenceNode):
            self.visit(node)
            items = node.value
        else:
            items = [node]
        rules = []
        for item in items:
            keys = self.mapping(item, "skip_if", ("expr", "reason"))
            expr_node = self.require(item, keys, "expr")
            try:
                cond = safe_eval.condition(self.text(expr_node))
            except safe_eval.UnsafeExpression as exc:
                raise _Invalid(expr_node, f"skip_if: {exc}") from None
            reason = self.text(self.require(item, keys, "reason"))
            rules.append(SkipRule(cond, reason, self.where(expr_node)))
        return tuple(rules)

    def check_case_size(self, node: yaml.Node, args: tuple[Arg, ...]) -> None:
        total = sum(spec.elements for spec in _tensor_specs(args))
        if total > self.limits.max_case_elements:
            raise _Invalid(
                node,
                f"case needs {total} tensor elements (limit {self.limits.max_case_elements}; "
                "raise it with --manifest-max-case-elements)",
            )


_CASE_KEYS = (
    "name", "op", "inputs", "attrs", "description", "expects_error", "mark", "skip_if",
    "dtype", "seed", "rtol", "atol", "compare",
)  # fmt: skip
_TENSOR_KEYS = ("shape", "init", "init_args", "dtype", "preset", "preset_args", "stride", "storage_offset")
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def confined_path(base_dir: Path | str, relative: str) -> Path:
    """Resolve `relative` inside `base_dir`, following symlinks; refuse anything that leaves it."""
    if os.path.isabs(relative) or relative.startswith("~"):
        raise ValueError("absolute paths are not allowed; give a path relative to the manifest")
    if ".." in Path(relative).parts:
        raise ValueError("'..' is not allowed in file paths")
    base = Path(base_dir).resolve()
    resolved = (base / relative).resolve()
    if resolved != base and base not in resolved.parents:
        raise ValueError("resolves outside the manifest's folder (symlink?)")
    if not resolved.is_file():
        raise ValueError("no such file next to the manifest")
    return resolved


def _tensor_specs(args: tuple[Arg, ...]) -> Iterator[TensorSpec]:
    for arg in args:
        if isinstance(arg, TensorSpec):
            yield arg
        elif isinstance(arg, TensorListArg):
            yield from arg.items


def _base_shape(
    shape: tuple[int, ...],
    preset: str | None,
    args: dict[str, object],
    stride: tuple[int, ...] | None,
    offset: int,
) -> tuple[int, ...]:
    """Shape of the contiguous storage that inputs.py allocates before taking the view."""
    if stride is not None:
        if 0 in shape:
            return (offset,)
        return (offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride)),)
    base = list(shape)
    if preset == "noncontig_slice":
        base[args["dim"]] *= args["step"]  # type: ignore[index,operator]
    elif preset == "transpose_view":
        d0, d1 = args["dim0"], args["dim1"]
        base[d0], base[d1] = base[d1], base[d0]  # type: ignore[index]
    elif preset == "expand":
        for dim in args["dims"]:  # type: ignore[attr-defined]
            base[dim] = 1
    return tuple(base)


def _data_shape(values: object) -> tuple[int, ...] | None:
    if isinstance(values, (int, float)):
        return ()
    if not isinstance(values, list):
        return None
    inner = [_data_shape(v) for v in values]
    if any(s is None for s in inner) or len(set(inner)) > 1:
        return None
    return (len(values),) + (inner[0] if inner else ())  # type: ignore[operator]


def _freeze(value: object) -> object:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def _default_init(dtype: str) -> str:
    """randn for floats; integer tensors default to randint in [0, 10), bool to 50% True."""
    return "randn" if dtype in FLOAT_DTYPES else "randint"


def _signature(op: str, dtype: str, args: tuple[Arg, ...], kwargs: tuple[tuple[str, Arg], ...]) -> str:
    """Dedupe key: op + normalized inputs + attrs + dtype (seeds, names and models left out)."""
    kwargs_normalized = sorted(((k, _normalize(a)) for k, a in kwargs), key=lambda item: item[0])
    canonical = repr((str(registry.parse(op)), dtype, [_normalize(a) for a in args], kwargs_normalized))
    return hashlib.sha1(canonical.encode()).hexdigest()[:16]


def _normalize(arg: Arg) -> object:
    if isinstance(arg, TensorSpec):
        return (
            "tensor",
            arg.shape,
            arg.dtype,
            arg.init,
            arg.init_args,
            arg.preset,
            arg.preset_args,
            arg.stride,
            arg.storage_offset,
        )
    if isinstance(arg, TensorListArg):
        return ("tensor_list", tuple(_normalize(item) for item in arg.items))
    if isinstance(arg, FileArg):
        return ("file", os.path.normpath(os.path.join(arg.base_dir, arg.path)), arg.key)
    if isinstance(arg, PyArg):
        return ("value", repr(arg.value))
    if isinstance(arg, ValueArg):
        return ("value", repr(arg.value))
    return ("dtype", arg.name)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
