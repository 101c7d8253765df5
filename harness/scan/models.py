"""Models: the model to scan and its inputs, small and randomly initialised, so nothing is downloaded.

Built-in models come from `transformers` configuration classes with tiny dimensions (never
`from_pretrained`; HF_HUB_OFFLINE=1 is set before transformers is imported). Any `torch.nn.Module`
can be scanned as `module:attribute`. Weights and inputs come from fixed seeds, so two scans of the
same model record the same calls with the same values.
"""

from __future__ import annotations

import importlib
import os
import platform
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from harness.errors import HarnessError
from harness.scan.catalog import CATALOG

BATCH, SEQUENCE = 2, 8  # token inputs: two sequences of eight tokens, the second left-padded by two


@dataclass(frozen=True, eq=False)
class BuiltModel:
    name: str  # the manifest's model name
    description: str  # what was built and run, for the manifest's description
    module: torch.nn.Module
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    code_root: Path  # frames in this folder (or file) are the model's own code
    versions: tuple[tuple[str, str], ...]  # (package, version) the scan depends on


def _token_inputs(config: Any, generator: torch.Generator) -> dict[str, Any]:
    input_ids = torch.randint(0, config.vocab_size, (BATCH, SEQUENCE), generator=generator)
    attention_mask = torch.ones(BATCH, SEQUENCE, dtype=torch.int64)
    attention_mask[1, :2] = 0  # left padding, as in batched generation: exercises the mask paths
    return {"input_ids": input_ids, "attention_mask": attention_mask, "use_cache": False}


def _image_inputs(config: Any, generator: torch.Generator) -> dict[str, Any]:
    size = config.image_size
    return {"pixel_values": torch.randn(BATCH, config.num_channels, size, size, generator=generator)}


def _speech_inputs(config: Any, generator: torch.Generator) -> dict[str, Any]:
    frames = 2 * config.max_source_positions  # the encoder's two convolutions halve the frames once
    return {
        "input_features": torch.randn(1, config.num_mel_bins, frames, generator=generator),
        "decoder_input_ids": torch.randint(4, config.vocab_size, (1, 4), generator=generator),
        "use_cache": False,
    }


INPUT_MAKERS: Mapping[str, Callable[[Any, torch.Generator], dict[str, Any]]] = {
    "tokens": _token_inputs, "image": _image_inputs, "speech": _speech_inputs,
}
_INPUT_TEXT = {
    "tokens": f"input_ids and attention_mask of {BATCH}x{SEQUENCE} tokens (second row left-padded by 2)",
    "image": f"pixel_values of {BATCH} images",
    "speech": "input_features of one clip and 4 decoder tokens",
}


def build_catalog_model(name: str, seed: int) -> BuiltModel:
    if name not in CATALOG:
        raise HarnessError(f"unknown model {name!r} (known: {', '.join(CATALOG)}); or scan any nn.Module with "
                           "--module MODULE:ATTRIBUTE")
    entry = CATALOG[name]
    transformers = _import_transformers()
    config = getattr(transformers, entry.config_class)(**{key: _thaw(value) for key, value in entry.config})
    torch.manual_seed(seed)
    module = getattr(transformers, entry.model_class)(config).eval()
    inputs = INPUT_MAKERS[entry.inputs](config, torch.Generator().manual_seed(seed))
    settings = ", ".join(f"{key}={_thaw(value)!r}" for key, value in entry.config)
    description = (f"{entry.summary}. {entry.model_class} built from {entry.config_class}({settings}) with random "
                   f"weights (seed {seed}); run on {_INPUT_TEXT[entry.inputs]}.")
    return BuiltModel(name, description, module, (), inputs, Path(str(transformers.__file__)).parent,
                      _versions(("transformers", transformers.__version__)))


def _thaw(value: object) -> object:
    """Catalog values are frozen (tuples of pairs for dicts, tuples for lists); configs want dicts and lists."""
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)
                                                  for v in value):
        return {key: _thaw(item) for key, item in value}
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


def _import_transformers() -> ModuleType:
    # Set before the import: transformers reads them once. Nothing may be fetched from the hub.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        transformers = importlib.import_module("transformers")
    except ImportError as exc:
        raise HarnessError(f"scanning built-in models needs transformers ({exc}); "
                           "install it with: pip install -e '.[scan]'") from None
    transformers.logging.set_verbosity_error()  # fallback-kernel notices are not the scan's output
    return transformers


def build_module_model(spec: str, input_shapes: Sequence[Sequence[int]], input_dtypes: Sequence[str],
                       input_high: int, seed: int, name: str | None = None, train: bool = False) -> BuiltModel:
    """`module:attribute` naming an nn.Module, an nn.Module class (built without arguments) or a factory."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise HarnessError(f"--module {spec!r}: expected MODULE:ATTRIBUTE, e.g. mypkg.models:TinyNet")
    if not input_shapes:
        raise HarnessError("--module needs at least one --input-shape, e.g. --input-shape 2,16")
    try:
        python_module = importlib.import_module(module_name)
    except ImportError as exc:
        raise HarnessError(f"--module {spec!r}: cannot import {module_name!r}: {exc}") from None
    target: Any = python_module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise HarnessError(f"--module {spec!r}: {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    torch.manual_seed(seed)
    module = target if isinstance(target, torch.nn.Module) else target()
    if not isinstance(module, torch.nn.Module):
        raise HarnessError(f"--module {spec!r} gave a {type(module).__name__}, not a torch.nn.Module")
    module.train(train)
    args = make_inputs(input_shapes, input_dtypes, input_high, seed)
    shown = ", ".join(f"{list(shape)} {dtype}" for shape, dtype in zip(input_shapes, _dtypes(input_dtypes, len(args))))
    description = (f"{spec} ({'train' if train else 'eval'} mode) with random weights (seed {seed}); "
                   f"run on inputs {shown}.")
    return BuiltModel(name or snake_case(attribute.rsplit(".", 1)[-1]), description, module, args, {},
                      code_root(python_module), _versions())


def make_inputs(shapes: Sequence[Sequence[int]], dtypes: Sequence[str], high: int,
                seed: int) -> tuple[torch.Tensor, ...]:
    """Floats from randn, integers from [0, high), bools at 50%; one seeded generator for all."""
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for shape, dtype_name in zip(shapes, _dtypes(dtypes, len(shapes))):
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype):
            raise HarnessError(f"--input-dtype {dtype_name!r} is not a torch dtype")
        if dtype.is_floating_point:
            tensors.append(torch.randn(tuple(shape), generator=generator).to(dtype))
        else:
            bound = 2 if dtype == torch.bool else high
            tensors.append(torch.randint(0, bound, tuple(shape), generator=generator).to(dtype))
    return tuple(tensors)


def _dtypes(dtypes: Sequence[str], count: int) -> list[str]:
    if len(dtypes) > count:
        raise HarnessError(f"{len(dtypes)} --input-dtype values for {count} --input-shape values")
    return [*dtypes, *["float32"] * (count - len(dtypes))]


def code_root(module: ModuleType) -> Path:
    """The model's own code: its top-level package's folder, or the file of a top-level module."""
    top = sys.modules[module.__name__.partition(".")[0]]
    locations = list(getattr(top, "__path__", []))
    if locations:
        return Path(locations[0]).resolve()
    if getattr(top, "__file__", None) is None:
        raise HarnessError(f"module {module.__name__!r} has no source file to attribute ops to")
    return Path(top.__file__).resolve()  # type: ignore[arg-type]


def snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _versions(*extra: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    python = ".".join(platform.python_version_tuple()[:2])
    return (("python", python), ("torch", torch.__version__), *extra)
