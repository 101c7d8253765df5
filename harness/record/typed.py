"""Records read back from JSON are checked against their dataclass's types before anything uses them.

A `run.json` is a file anyone can edit, truncate or replace: a list where an object belongs, a
string where a count belongs. Checked here, such a file is one `ValueError` naming the field
(`files[2].counts.passed: expected int, not str 'x'`), which the record reader turns into a
one-line error naming the file, instead of a traceback deep in a comparison, or worse, a verdict.

The dataclass's own annotations are the schema, so a field added to a record is checked with no
change here. Unknown keys are ignored (a newer harness's record stays readable); a key that is
missing takes the field's default, and a missing required key is an error.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


def from_json(cls: type[T], data: object, where: str = "") -> T:
    """An instance of dataclass `cls` from parsed JSON, every field checked; ValueError otherwise."""
    if not isinstance(data, dict):
        raise ValueError(f"{where or 'top level'}: expected a JSON object, not {_shown(data)}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for item in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not item.init:
            continue
        inner = f"{where}.{item.name}" if where else item.name
        if item.name in data:
            values[item.name] = _conform(data[item.name], hints[item.name], inner)
        elif item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            raise ValueError(f"{inner}: missing")
    return cls(**values)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass's resolved annotations: resolving them (string annotations, evaluated) costs more
    than checking a record's values, and a run record holds one FileRecord per test file."""
    return typing.get_type_hints(cls)


def _conform(value: object, kind: Any, where: str) -> Any:
    """`value` as the annotated type `kind` (JSON lists become tuples where a tuple is annotated)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _conform(value, option, where)
            except ValueError:
                continue
        raise ValueError(f"{where}: expected {_named(kind)}, not {_shown(value)}")
    if dataclasses.is_dataclass(kind):
        return from_json(kind, value, where)  # type: ignore[arg-type]
    if origin is dict and isinstance(value, dict):
        return {_conform(key, args[0], where): _conform(item, args[1], f"{where}.{key}") for key, item in value.items()}
    if origin in (tuple, list) and isinstance(value, list):
        items = [_conform(item, args[0], f"{where}[{index}]") for index, item in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if kind is type(None) and value is None:
        return None
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if kind in (str, int, bool) and isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    raise ValueError(f"{where}: expected {_named(kind)}, not {_shown(value)}")


def _named(kind: Any) -> str:
    if kind is type(None):
        return "null"
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_named(option) for option in typing.get_args(kind))
    if origin in (tuple, list):
        return "a list"
    if origin is dict or dataclasses.is_dataclass(kind):
        return "an object"
    return getattr(kind, "__name__", str(kind))


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"
