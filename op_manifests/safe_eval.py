"""Restricted evaluation of the two kinds of manifest expressions: `py:` literals and `skip_if`.

Manifests come from scanners and from people; they are data, never code. So the text is parsed
with `ast.parse` and walked here node by node against an allow-list. Nothing reaches `eval`,
`exec` or `compile`, no object named by the manifest is ever called, and there is no attribute
access at all, so `().__class__.__bases__` or `__import__('os')` have nothing to stand on.
The only facts about the world a condition can read are the plain variables in CONDITION_NAMES.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# Expressions are one-liners in YAML (the longest realistic one, an index tuple for getitem,
# is ~100 chars). 1000 chars leaves room while keeping the parser's work trivially bounded.
MAX_SOURCE_CHARS = 1000
# Nesting beyond 32 levels has no use in an index tuple or a condition; capping it keeps our
# own recursive walk far from Python's recursion limit.
MAX_DEPTH = 32

# The variables a `skip_if` expression may read, with what they hold. Values are supplied by
# the planner at collection time; they are plain str/bool/tuple values, never objects.
CONDITION_NAMES: Mapping[str, str] = {
    "backend": "compile backend under test: 'eager', 'aot_eager' or 'inductor'",
    "device": "device the candidate runs on ('cpu' on this project's machines)",
    "dtype": "the case's dtype, canonical torch name, e.g. 'float16'",
    "model": "the manifest's model name",
    "op": "the case's op name as written",
    "torch_version": "installed torch version as a tuple of ints, e.g. (2, 13, 0)",
    "python_version": "running Python version as a tuple of ints, e.g. (3, 11, 7)",
    "cuda_available": "whether torch.cuda.is_available() (imports torch only if used)",
    "platform": "sys.platform, e.g. 'linux'",
}

_LITERAL_NAMES: Mapping[str, object] = {"inf": math.inf, "nan": math.nan, "Ellipsis": ...}
_CONSTANT_TYPES = (int, float, str, bool, type(None), type(...))
_COMPARISONS: Mapping[type[ast.cmpop], Callable[[object, object], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}

Evaluator = Callable[[Mapping[str, object]], object]


class UnsafeExpression(ValueError):
    """The text is not in the allowed grammar (or cannot be evaluated); the message says why."""


def literal(source: str) -> object:
    """Value of a `py:` literal: numbers, strings, None, Ellipsis, inf, nan, tuples, lists, slice()."""
    return _literal(_parse(source), 0)


@dataclass(frozen=True)
class Condition:
    """A validated `skip_if` expression; evaluate() reads only the variables it is given."""

    source: str
    _evaluate: Evaluator

    def evaluate(self, variables: Mapping[str, object]) -> bool:
        try:
            result = self._evaluate(variables)
        except TypeError as exc:
            raise UnsafeExpression(f"cannot evaluate {self.source!r}: {exc}") from None
        if not isinstance(result, bool):
            raise UnsafeExpression(
                f"{self.source!r} must be a comparison or boolean, got {type(result).__name__}"
            )
        return result


def condition(source: str) -> Condition:
    """Validate a `skip_if` expression now so errors surface at collection with a location."""
    if not isinstance(source, str):
        raise UnsafeExpression(f"expression must be a string, got {type(source).__name__}")
    return _compiled_condition(source)


@functools.lru_cache(maxsize=1024)  # generated manifests repeat the same few conditions per case
def _compiled_condition(source: str) -> Condition:
    return Condition(source, _condition(_parse(source), 0))


def _parse(source: str) -> ast.expr:
    if not isinstance(source, str):
        raise UnsafeExpression(f"expression must be a string, got {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        raise UnsafeExpression(f"expression is {len(source)} chars (limit {MAX_SOURCE_CHARS})")
    try:
        return ast.parse(source.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UnsafeExpression(f"not a valid expression: {source!r} ({type(exc).__name__})") from None


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"attribute access ('.{node.attr}')"
    if isinstance(node, ast.Call):
        return "a function call"
    if isinstance(node, ast.Name):
        return f"the name {node.id!r}"
    return f"{type(node).__name__} syntax"


def _check_depth(node: ast.AST, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise UnsafeExpression(f"expression nests deeper than {MAX_DEPTH} levels")
    if isinstance(node, ast.Starred):
        raise UnsafeExpression("starred expressions are not allowed")


def _literal(node: ast.expr, depth: int) -> object:
    _check_depth(node, depth)
    if isinstance(node, ast.Constant) and isinstance(node.value, _CONSTANT_TYPES):
        return node.value
    if isinstance(node, ast.Name) and node.id in _LITERAL_NAMES:
        return _LITERAL_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand, depth + 1)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UnsafeExpression("unary +/- applies to numbers only")
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_literal(item, depth + 1) for item in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if _is_slice_call(node):
        bounds = [_literal(arg, depth + 1) for arg in node.args]
        if not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds):
            raise UnsafeExpression("slice() bounds must be integers or None")
        # Built by us from validated ints: the manifest never chooses what gets called.
        return slice(*bounds)
    raise UnsafeExpression(f"{_describe(node)} is not allowed in a py: literal")


def _is_slice_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "slice"
        and not node.keywords
        and 1 <= len(node.args) <= 3
    )


def _condition(node: ast.expr, depth: int) -> Evaluator:
    """Compile a node into a closure; every node type not handled here is rejected."""
    _check_depth(node, depth)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
        value = node.value
        return lambda _: value
    if isinstance(node, ast.Name):
        return _variable(node.id)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_condition(item, depth + 1) for item in node.elts]
        return lambda v: tuple(item(v) for item in items)
    if isinstance(node, ast.BoolOp):
        parts = [_condition(value, depth + 1) for value in node.values]
        if isinstance(node.op, ast.And):
            return lambda v: all(bool(p(v)) for p in parts)
        return lambda v: any(bool(p(v)) for p in parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = _condition(node.operand, depth + 1)
        return lambda v: not operand(v)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        number = _literal(node, depth)
        return lambda _: number
    if isinstance(node, ast.Compare):
        return _comparison(node, depth)
    raise UnsafeExpression(f"{_describe(node)} is not allowed in skip_if")


def _variable(name: str) -> Evaluator:
    if name not in CONDITION_NAMES:
        known = ", ".join(sorted(CONDITION_NAMES))
        raise UnsafeExpression(f"unknown name {name!r} in skip_if (known: {known})")
    return lambda v: v[name]


def _comparison(node: ast.Compare, depth: int) -> Evaluator:
    for op in node.ops:
        if type(op) not in _COMPARISONS:
            raise UnsafeExpression(f"comparison {type(op).__name__} is not allowed in skip_if")
    left = _condition(node.left, depth + 1)
    rights = [_condition(c, depth + 1) for c in node.comparators]
    checks = [_COMPARISONS[type(op)] for op in node.ops]

    def evaluate(variables: Mapping[str, object]) -> bool:
        current = left(variables)
        for check, right in zip(checks, rights):
            following = right(variables)
            if not check(current, following):
                return False
            current = following
        return True

    return evaluate
