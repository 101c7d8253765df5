"""The restricted evaluator: the RFC's literals work, everything else is refused before running."""

from __future__ import annotations

import math
import re

import pytest

from op_manifests import safe_eval

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("(Ellipsis, None, slice(None, None, None))", (..., None, slice(None, None, None))),
        ("(..., slice(1, -1, 2), [0, 3])", (..., slice(1, -1, 2), [0, 3])),
        ("[-inf, inf, 1.5, -2]", [-math.inf, math.inf, 1.5, -2]),
        ("'text'", "text"),
        ("(True, False, None)", (True, False, None)),
    ],
)
def test_literals_of_the_rfc_evaluate(source: str, value: object) -> None:
    assert safe_eval.literal(source) == value


def test_nan_literal_is_nan() -> None:
    assert math.isnan(safe_eval.literal("nan"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("__import__('os').system('true')", "function call"),
        ("().__class__.__bases__", "attribute access ('.__bases__')"),
        ("open", "the name 'open'"),
        ("9 ** 9 ** 9", "BinOp"),
        ("slice(1, 'a')", "slice() bounds must be integers"),
        ("slice(x=1)", "function call"),
        ("[*range(3)]", "starred"),
        ("{1: 2}", "Dict"),
        ("-'a'", "numbers only"),
        ("[" * 40 + "1" + "]" * 40, "deeper than 32 levels"),
        ("1" * 2000, "limit 1000"),
    ],
)
def test_anything_else_in_a_literal_is_refused(source: str, reason: str) -> None:
    with pytest.raises(safe_eval.UnsafeExpression, match=re.escape(reason)):
        safe_eval.literal(source)


VARIABLES = {
    "backend": "inductor",
    "device": "cpu",
    "dtype": "float16",
    "model": "m",
    "op": "torch.add",
    "torch_version": (2, 13, 0),
    "python_version": (3, 14, 0),
    "cuda_available": False,
    "platform": "linux",
}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("device == 'spyre' and dtype == 'float16'", False),
        ("backend in ('inductor', 'aot_eager')", True),
        ("torch_version < (2, 14) or not cuda_available", True),
        ("1 < 2 < 3 and python_version >= (3, 14)", True),
        ("op != 'torch.add'", False),
    ],
)
def test_conditions_read_only_the_given_variables(source: str, expected: bool) -> None:
    assert safe_eval.condition(source).evaluate(VARIABLES) is expected


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("backend.__class__", "attribute access"),
        ("cfg.test_device.type == 'spyre'", "attribute access"),
        ("secret == 1", "unknown name 'secret'"),
        ("(lambda: True)()", "function call"),
        ("backend if True else device", "IfExp"),
        ("backend is None", "comparison Is"),
    ],
)
def test_conditions_outside_the_grammar_are_refused_at_load(source: str, reason: str) -> None:
    with pytest.raises(safe_eval.UnsafeExpression, match=re.escape(reason)):
        safe_eval.condition(source)


def test_condition_must_give_a_boolean_and_type_errors_are_reported() -> None:
    with pytest.raises(safe_eval.UnsafeExpression, match="must be a comparison or boolean"):
        safe_eval.condition("backend").evaluate(VARIABLES)
    with pytest.raises(safe_eval.UnsafeExpression, match="cannot evaluate"):
        safe_eval.condition("torch_version < 'x'").evaluate(VARIABLES)
