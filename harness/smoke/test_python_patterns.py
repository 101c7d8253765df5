"""The Python patterns that broke the CinderX JIT (docs/background.md §3), exercised inside torch workloads.

Each pattern is made hot, so under a JIT configuration it runs as compiled code (and the test
proves it), then its result is checked against values computed independently of the pattern.
"""

import inspect
import sys
import traceback

import torch

from harness.smoke.jitcheck import make_hot, require_compiled


def test_closure_captures_tensor_and_scalar():
    scale = torch.tensor(3.0)
    offset = 2

    def affine(x):
        return x * scale + offset

    x = torch.arange(4.0)
    result = make_hot(affine, x)
    require_compiled(affine)
    assert result.tolist() == [2.0, 5.0, 8.0, 11.0]


def test_nested_closures_three_levels():
    def outer(weight):
        def middle(bias):
            def inner(x):
                return torch.relu(x * weight + bias)
            return inner
        return middle

    inner = outer(torch.tensor(-1.0))(torch.tensor(1.0))
    x = torch.tensor([0.0, 0.5, 2.0])
    result = make_hot(inner, x)
    require_compiled(inner)
    assert result.tolist() == [1.0, 0.5, 0.0]


def test_mutable_closure_with_nonlocal_accumulates():
    def make_accumulator():
        total = torch.zeros(2)
        calls = 0

        def add(x):
            nonlocal total, calls
            total = total + x
            calls += 1
            return calls

        return add, lambda: total

    add, read = make_accumulator()
    calls = make_hot(add, torch.ones(2))
    require_compiled(add)
    assert read().tolist() == [float(calls), float(calls)]


def test_lambda_inside_map_over_tensors():
    square_plus = lambda t: t * t + 1  # noqa: E731 - a lambda is the pattern under test
    result = make_hot(lambda: [square_plus(torch.tensor(float(i))) for i in range(3)])
    require_compiled(square_plus)
    assert [r.item() for r in result] == [1.0, 2.0, 5.0]


def test_generator_yields_batches_and_send():
    def batches(data, size):
        start = 0
        while start < len(data):
            received = yield data[start:start + size]
            start += size
            if received is not None:
                size = received

    def consume():
        gen = batches(torch.arange(10), 3)
        first = next(gen)
        second = gen.send(4)
        rest = list(gen)
        return [first.tolist(), second.tolist()] + [b.tolist() for b in rest]

    result = make_hot(consume)
    require_compiled(batches, consume)
    assert result == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]


def raise_on_negative(x):
    total = x.sum()
    if total < 0:
        raise ValueError(f"negative total {total.item()}")  # the line the traceback must name
    return total


RAISE_LINE = next(i for i, line in enumerate(inspect.getsourcelines(raise_on_negative)[0])
                  if "raise ValueError" in line) + raise_on_negative.__code__.co_firstlineno


def test_exception_traceback_names_the_raising_line():
    def call_and_catch(x):
        try:
            raise_on_negative(x)
        except ValueError as error:
            return error
        return None

    make_hot(call_and_catch, -torch.ones(3))
    require_compiled(call_and_catch, raise_on_negative)
    error = call_and_catch(-torch.ones(3))
    frames = traceback.extract_tb(error.__traceback__)
    assert frames[-1].name == "raise_on_negative"
    assert frames[-1].lineno == RAISE_LINE, f"traceback line {frames[-1].lineno}, source line {RAISE_LINE}"
    assert "raise ValueError" in frames[-1].line
    assert str(error) == "negative total -3.0"


def test_exception_chaining_keeps_cause_and_context():
    def convert(x):
        try:
            return int(x.sum().item() / 0)
        except ZeroDivisionError as error:
            raise RuntimeError("conversion failed") from error

    def guarded(x):
        try:
            convert(x)
        except RuntimeError as error:
            return error

    error = make_hot(guarded, torch.ones(2))
    require_compiled(guarded, convert)
    assert isinstance(error.__cause__, ZeroDivisionError)
    assert error.__suppress_context__


def test_sys_getframe_reports_function_line_and_caller():
    def where(x):
        frame = sys._getframe()
        line = frame.f_lineno
        return frame.f_code.co_name, line, frame.f_back.f_code.co_name, x.sum()

    def caller(x):
        return where(x)

    name, line, back, total = make_hot(caller, torch.ones(3))
    require_compiled(where, caller)
    assert (name, back, total.item()) == ("where", "caller", 3.0)
    assert line == where.__code__.co_firstlineno + 2


def _very_large_frame_function(local_count: int):
    """A function with `local_count` tensor locals: the InvalidImmediate crash (docs/background.md §3)
    needed > 4 KiB frames."""
    body = [f"    v{i} = x + {i}" for i in range(local_count)]
    total = " + ".join(f"v{i}" for i in range(local_count))
    source = "def wide(x):\n" + "\n".join(body) + f"\n    return {total}\n"
    namespace: dict = {}
    exec(compile(source, "<very large frame>", "exec"), namespace)
    return namespace["wide"]


def test_function_with_very_large_frame():
    wide = _very_large_frame_function(700)
    result = make_hot(wide, torch.zeros(2))
    require_compiled(wide)
    assert result.tolist() == [sum(range(700))] * 2


def test_bool_and_char_operations():
    def encode(t, flag):
        positive = bool((t > 0).all())
        letters = "".join(chr(ord("a") + int(v) % 26) for v in t.tolist())
        mixed = (positive and not flag) or (letters == "" and flag)
        return positive, letters, mixed, letters.upper() < "Z", "c" in letters

    result = make_hot(encode, torch.tensor([0, 2, 27]), False)
    require_compiled(encode)
    assert result == (False, "acb", False, True, True)
