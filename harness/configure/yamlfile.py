"""Read user-edited YAML data with the line of every key, so errors name file, line and key.

We compose nodes with PyYAML's safe loader (no tags, no objects; libyaml's when PyYAML has it, 10x
faster on big op manifests) and read values through a `Section`, which knows where it came from
and which keys it allows. One top-level scalar of a big file is read by parsing up to it only.
The op-manifest loader composes its files with the same `compose` (its own walk of the nodes
collects one error per case instead of stopping at the first).

Strict where YAML is lenient: a key written twice in one mapping (YAML loaders keep one of them,
silently), a byte that is not UTF-8 and a control character are errors naming the line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
import re
from pathlib import Path
from typing import TypeVar

import yaml

from harness.errors import HarnessError

T = TypeVar("T")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}\Z")  # configuration and tier names: no '/', no '..'
_RESOLVER = yaml.resolver.Resolver()  # the safe loaders' implicit tags (int, bool, null, ...) of plain scalars


@functools.lru_cache(maxsize=2**16)
def _resolve_tag(kind: type[yaml.Node], value: str | None, implicit: object) -> str:
    """PyYAML's implicit tag resolution, memoized. It is a pure function of its arguments (no path
    resolvers are registered) and runs a regex per node: uncached it was a third of the time to
    collect 10,000 op-manifest cases, whose keys and numbers repeat thousands of times."""
    return yaml.resolver.Resolver.resolve(_RESOLVER, kind, value, implicit)  # type: ignore[arg-type]


class SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's when available) with memoized tag resolution."""

    def resolve(self, kind: type[yaml.Node], value: str | None, implicit: object) -> str:
        return _resolve_tag(kind, value, implicit)


class YamlProblem(Exception):
    """Why a YAML text could not be read, and where (1-based line and column)."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line, self.column, self.message = line, column, message


def compose(data: bytes) -> yaml.Node | None:
    """The node tree of a YAML document (None: empty), or a YamlProblem: a byte that is not UTF-8,
    a character YAML forbids (control characters), invalid YAML."""
    text = _decoded(data)
    with _problems(text):
        return yaml.compose(text, Loader=SafeLoader)


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise YamlProblem(*_position(data, error.start), f"not UTF-8 text (byte 0x{data[error.start]:02x})") from None


def _position(text: str | bytes, index: int) -> tuple[int, int]:
    newline = "\n" if isinstance(text, str) else b"\n"
    line_start = text.rfind(newline, 0, index) + 1  # type: ignore[arg-type]
    return text.count(newline, 0, index) + 1, index - line_start + 1  # type: ignore[arg-type]


@contextmanager
def _problems(text: str) -> Iterator[None]:
    """PyYAML's errors while reading `text`, as YamlProblems."""
    try:
        yield
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlProblem(line, column, f"invalid YAML: {error.problem or error.context}") from None
    except yaml.reader.ReaderError as error:  # a character YAML forbids (control characters)
        raise YamlProblem(*_position(text, error.position), f"invalid YAML: character "
                          f"{ord(text[error.position]):#04x} is not allowed ({error.reason})") from None


def load_section(path: Path, context: str) -> Section:
    """The top-level mapping of a YAML file, or a one-line error naming the file and line."""
    with _located_errors(path):
        node = compose(_read_bytes(path))
    return _top_section(path, node, context)


def load_scalar_entry(path: Path, key: str, context: str) -> Section:
    """The top-level mapping of a YAML file with only `key`'s entry, kept if its value is a scalar
    written there (not an alias).

    The file is parsed only up to that value, never composed: a big file's header costs what the
    header costs. Errors are load_section's, for the part read.
    """
    with _located_errors(path):
        text = _decoded(_read_bytes(path))
        with _problems(text):  # parsing is lazy: errors arise while the events are read
            node = _scalar_entry_mapping(yaml.parse(text, Loader=SafeLoader), key)
    return _top_section(path, node, context)


def _scalar_entry_mapping(events: Iterator[yaml.Event], key: str) -> yaml.Node | None:
    root = next((event for event in events if isinstance(event, yaml.NodeEvent)), None)
    if root is None:
        return None
    if isinstance(root, yaml.MappingStartEvent):
        return yaml.MappingNode("tag:yaml.org,2002:map", _scalar_entry(events, key), root.start_mark, root.end_mark)
    return yaml.Node(None, None, root.start_mark, root.end_mark)  # its position: Section says it is not a mapping


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise HarnessError(f"{path}: cannot read: {error.strerror}") from None


@contextmanager
def _located_errors(path: Path) -> Iterator[None]:
    """A YamlProblem as a one-line error naming the file and line."""
    try:
        yield
    except YamlProblem as problem:
        raise HarnessError(f"{path}:{problem.line}: {problem.message}") from None


def _top_section(path: Path, node: yaml.Node | None, context: str) -> Section:
    if node is None:
        raise HarnessError(f"{path}: empty file, expected a mapping")
    return Section(path, node, context)


def _scalar_entry(events: Iterator[yaml.Event], key: str) -> list[tuple[yaml.ScalarNode, yaml.ScalarNode]]:
    """The first `key: scalar` entry of the mapping being parsed, as composed nodes; reads no further."""
    children = _children(events)
    for name, value in zip(children, children):  # a mapping's children alternate: key, value
        if isinstance(name, yaml.ScalarEvent) and name.value == key:
            return [(_scalar_node(name), _scalar_node(value))] if isinstance(value, yaml.ScalarEvent) else []
    return []


def _children(events: Iterator[yaml.Event]) -> Iterator[yaml.Event]:
    """The first event of each child of the collection being parsed, up to its end; the rest of
    a nested child is skipped when the next child is asked for."""
    depth = 0
    for event in events:
        if isinstance(event, yaml.CollectionEndEvent):
            if depth == 0:
                return
            depth -= 1
        elif depth == 0:
            yield event
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1


def _scalar_node(event: yaml.ScalarEvent) -> yaml.ScalarNode:
    """The node composing would make of this scalar: an untagged one gets the tag its text implies."""
    tag = event.tag
    if tag in (None, "!"):
        tag = _resolve_tag(yaml.ScalarNode, event.value, event.implicit)
    return yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)


@dataclass(frozen=True)
class Section:
    """A YAML mapping node with its file, for typed reads with located errors."""

    path: Path
    node: yaml.Node
    context: str

    def __post_init__(self) -> None:
        if not isinstance(self.node, yaml.MappingNode):
            self.fail(self.node, f"{self.context}: expected a mapping")
        first: dict[str, yaml.Node] = {}
        for key, _ in self.node.value:
            if not isinstance(key, yaml.ScalarNode):
                self.fail(key, f"{self.context}: keys must be plain names, not lists or mappings")
            earlier = first.setdefault(key.value, key)
            if earlier is not key:
                self.fail(key, f"{self.context}: duplicate key '{key.value}' (first at line {earlier.start_mark.line + 1})")

    def fail(self, node: yaml.Node, message: str) -> None:
        raise HarnessError(f"{self.path}:{node.start_mark.line + 1}: {message}")

    def items(self) -> list[tuple[str, yaml.Node]]:
        return [(key.value, value) for key, value in self.node.value]

    def named_items(self, what: str) -> list[tuple[str, yaml.Node]]:
        """Entries whose keys name things that become session names and run-directory names."""
        for key, _ in self.node.value:
            if not NAME.match(key.value):
                self.fail(key, f"{what} name {key.value!r} must be 1-100 letters, digits, '_', '.', '-' "
                               "(starting with a letter or digit)")
        return self.items()

    def check_keys(self, allowed: set[str]) -> None:
        for key, value in self.node.value:
            if key.value not in allowed:
                known = ", ".join(sorted(allowed))
                self.fail(key, f"{self.context}: unknown key '{key.value}' (known keys: {known})")

    def node_of(self, key: str) -> yaml.Node | None:
        return next((value for k, value in self.node.value if k.value == key), None)

    def has(self, key: str) -> bool:
        return self.node_of(key) is not None

    def require(self, key: str) -> yaml.Node:
        node = self.node_of(key)
        if node is None:
            self.fail(self.node, f"{self.context}: missing key '{key}'")
        return node  # type: ignore[return-value]

    def child(self, key: str, name: str | None = None) -> Section:
        return Section(self.path, self.require(key), name or key)

    def section_of(self, node: yaml.Node, name: str) -> Section:
        return Section(self.path, node, name)

    def scalar(self, key: str, kind: type[T], default: T) -> T:
        node = self.node_of(key)
        if node is None:
            return default
        return self._typed(node, key, kind)

    def choice(self, key: str, allowed: dict[str, str], default: str) -> str:
        """A scalar from a fixed vocabulary; YAML 1.1 booleans (on/off) read as their words."""
        node = self.node_of(key)
        if node is None:
            return default
        value = self._constructed(node)
        word = {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value
        if word not in allowed:
            self.fail(node, f"{self.context}: '{key}' must be one of {', '.join(allowed)}, not {value!r}")
        return allowed[word]

    def strings(self, key: str) -> tuple[str, ...]:
        return self._list(key, str, "strings")

    def integers(self, key: str) -> tuple[int, ...]:
        return self._list(key, int, "whole numbers")

    def _list(self, key: str, kind: type[T], what: str) -> tuple[T, ...]:
        node = self.node_of(key)
        if node is None:
            return ()
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, f"{self.context}: '{key}' must be a list of {what}")
        return tuple(self._typed(item, key, kind) for item in node.value)

    def string_map(self, key: str) -> dict[str, str]:
        node = self.node_of(key)
        if node is None:
            return {}
        section = Section(self.path, node, f"{self.context}: '{key}'")
        return {name: self._typed(value, f"{key}.{name}", str, coerce=_env_string) for name, value in section.items()}

    def _constructed(self, node: yaml.Node) -> object:
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, f"{self.context}: expected a single value")
        return yaml.SafeLoader("").construct_object(node, deep=True)

    def _typed(self, node: yaml.Node, key: str, kind: type[T],
               coerce: Callable[[object], object] | None = None) -> T:
        value = self._constructed(node)
        if coerce is not None:
            value = coerce(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(node, f"{self.context}: '{key}' must be {kind.__name__}, not {type(value).__name__} {value!r}")
        return value  # type: ignore[return-value]


def _env_string(value: object) -> object:
    """Environment values are strings; accept YAML numbers and booleans as the user wrote them."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value) if isinstance(value, (int, float)) else value
