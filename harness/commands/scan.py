"""`python -m harness scan-model`: arguments, and the scan from model to manifest file.

torch and transformers are imported only when a scan runs: every other harness command starts without them.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from harness.commands.arguments import path_argument, positive
from harness.errors import HarnessError
from harness.exits import ExitStatus
from harness.scan.catalog import CATALOG

if TYPE_CHECKING:
    from harness.scan.models import BuiltModel

DEFAULT_MAX_CASES = 400  # keeps a manifest reviewable and its eager run well under a minute
DEFAULT_INPUT_HIGH = 10
MANIFEST_FOLDER = "op_manifests"  # where committed manifests live, relative to the repository root
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}\Z")  # op_manifests/loader.py's model-name grammar


def add_commands(commands: argparse._SubParsersAction) -> None:
    scan = commands.add_parser(
        "scan-model", help="write an op manifest (RFC-0186) from a model's forward (and backward) pass",
        description="Build a small, randomly initialised model, record every aten op it calls with its inputs and "
                    "the source line that issued it, and write a deduplicated op manifest. See docs/scanner.md.")
    source = scan.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help=f"a built-in transformers model: {', '.join(CATALOG)}")
    source.add_argument("--module", metavar="MODULE:ATTRIBUTE",
                        help="any torch.nn.Module (instance, class built without arguments, or factory)")
    source.add_argument("--list-models", action="store_true", help="print the built-in models and exit")
    scan.add_argument("--input-shape", type=_shape, action="append", default=[], metavar="D0,D1,...",
                      help="with --module: one input tensor of this shape; repeat for several inputs")
    scan.add_argument("--input-dtype", action="append", default=[], metavar="DTYPE",
                      help="with --module: dtype of the matching --input-shape (default float32)")
    scan.add_argument("--input-high", type=int, default=DEFAULT_INPUT_HIGH, metavar="N",
                      help=f"with --module: integer inputs are drawn from [0, N) (default {DEFAULT_INPUT_HIGH})")
    scan.add_argument("--name", help="the manifest's model name (default: the built-in name, or the attribute "
                                     "in snake_case)")
    scan.add_argument("--train", action="store_true", help="run in train mode (dropout active)")
    scan.add_argument("--backward", action="store_true", help="also record the backward pass of the loss")
    scan.add_argument("--seed", type=int, default=0, help="seed for weights and inputs (default 0)")
    scan.add_argument("--max-cases", type=positive, default=DEFAULT_MAX_CASES, metavar="N",
                      help=f"at most N cases, every distinct op first (default {DEFAULT_MAX_CASES})")
    scan.add_argument("--output", type=path_argument, metavar="FILE",
                      help=f"where to write the manifest (default {MANIFEST_FOLDER}/NAME.yaml)")
    scan.add_argument("--no-verify", action="store_true",
                      help="do not run each case once through the op-manifest runner before writing")
    scan.set_defaults(handler=_scan)


def _shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of sizes, e.g. 2,16") from None
    if any(size < 0 for size in shape):
        raise argparse.ArgumentTypeError(f"{text!r} has a negative size")
    return shape


def _scan(args: argparse.Namespace) -> int:
    if args.list_models:
        for entry in CATALOG.values():
            print(f"{entry.name}: {entry.model_class} ({entry.summary})")
        return ExitStatus.OK
    if args.model and (args.input_shape or args.input_dtype):
        raise HarnessError("--input-shape and --input-dtype go with --module; built-in models bring their inputs")
    from harness.record.writing import make_folder, write_atomically
    from harness.scan.capture import capture, deterministic_torch
    from harness.scan.emit import Provenance, render, summary_lines
    from harness.scan.normalize import Scan, normalize
    from harness.scan.verify import verify

    built = _build(args)
    if not _MODEL_NAME.match(built.name):
        raise HarnessError(f"model name {built.name!r} is not 1-100 letters, digits, '_', '.', '-'; pass --name")
    output = args.output or Path(MANIFEST_FOLDER) / f"{built.name}.yaml"
    provenance = Provenance(regenerate_command(args, built, output), built.versions)

    passes = "forward and backward pass (backward of the model's loss, else of the sum of its first output)" \
        if args.backward else "forward pass"
    description = f"{built.description} Recorded: {passes}."

    def text_of(scan: Scan) -> str:
        return render(built.name, description, scan, provenance)

    with deterministic_torch():
        try:
            calls = capture(built.module, built.args, built.kwargs, built.code_root, backward=args.backward)
        except Exception as exc:  # noqa: BLE001 - any failure of the user's model is reported in one line
            raise HarnessError(f"running {built.name} failed: {type(exc).__name__}: {exc}") from None
        scan = normalize(calls, args.max_cases)
        if not args.no_verify:
            scan, _ = verify(scan, text_of)
    make_folder(output.parent)
    write_atomically(output, text_of(scan))
    for line in summary_lines(scan):
        print(line)
    print(f"wrote {output}")
    return ExitStatus.OK


def _build(args: argparse.Namespace) -> BuiltModel:
    from harness.scan.models import BuiltModel, build_catalog_model, build_module_model

    if args.model:
        built = build_catalog_model(args.model, args.seed)
        if args.train:
            built.module.train()
    else:
        built = build_module_model(args.module, args.input_shape, args.input_dtype, args.input_high, args.seed,
                                   train=args.train)
    if args.name:
        built = BuiltModel(args.name, built.description, built.module, built.args, built.kwargs, built.code_root,
                           built.versions)
    return built


def regenerate_command(args: argparse.Namespace, built: BuiltModel, output: Path) -> str:
    """The command that rewrites the committed file: every option that changes its content, and the
    output in the manifest folder (never the path this run wrote to, so a copy scanned elsewhere, as
    the determinism test does, is byte-for-byte the committed file)."""
    parts = ["python", "-m", "harness", "scan-model"]
    if args.model:
        parts += ["--model", args.model]
    else:
        parts += ["--module", args.module]
        for shape in args.input_shape:
            parts += ["--input-shape", ",".join(map(str, shape))]
        for dtype in args.input_dtype:
            parts += ["--input-dtype", dtype]
        if args.input_high != DEFAULT_INPUT_HIGH:
            parts += ["--input-high", str(args.input_high)]
    if args.name:
        parts += ["--name", args.name]
    parts += [flag for flag, on in (("--train", args.train), ("--backward", args.backward),
                                    ("--no-verify", args.no_verify)) if on]
    if args.seed != 0:
        parts += ["--seed", str(args.seed)]
    if args.max_cases != DEFAULT_MAX_CASES:
        parts += ["--max-cases", str(args.max_cases)]
    parts += ["--output", f"{MANIFEST_FOLDER}/{output.name}"]
    return shlex.join(parts)
