"""Reproducer (docs/aarch64.md, findings): CinderX's JIT switched on in a forked child, then torch.compile.

Under emulated aarch64 (qemu-user 7.2, CinderX 2026.10.26.0, torch 2.14.1) the forked child died with
SIGILL; run in one process, or with torch._dynamo imported before the JIT is switched on, it passes;
natively on x86_64 every mode passes. Run it with a JIT configuration's session interpreter:

    QEMU_LD_PREFIX=~/.cache/torch-runtime-harness/cpython-3.14-aarch64/root \\
        .nox/cinderx-jit-aarch64-p0/bin/python -X faulthandler tools/fork_jit_repro.py fork
    ... tools/fork_jit_repro.py one-process
    ... tools/fork_jit_repro.py fork-dynamo-first

It prints what became of the child (its exit status: -4 is SIGILL) or of the one process.
"""

from __future__ import annotations

import argparse
import importlib
import os
import time

import cinderx.jit as jit
import torch

THRESHOLD = 1000  # the configurations' default threshold


def work(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 2 + 1


def compile_under_the_jit(dynamo_first: bool) -> str:
    """Switch the JIT on, then torch.compile `work` and call it past the threshold."""
    began = time.monotonic()
    if dynamo_first:
        importlib.import_module("torch._dynamo")  # imported with the JIT still off
    jit.enable()
    jit.compile_after_n_calls(THRESHOLD)
    compiled = torch.compile(work, backend="eager", fullgraph=True)
    x = torch.linspace(-1.0, 1.0, 8)
    for _ in range(THRESHOLD + 2):
        torch.testing.assert_close(compiled(x), work(x))
    return f"ok in {time.monotonic() - began:.1f} s, {len(jit.get_compiled_functions())} functions compiled"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["fork", "one-process", "fork-dynamo-first"])
    mode = parser.parse_args().mode
    if mode == "one-process":
        print(f"one process: {compile_under_the_jit(dynamo_first=False)}", flush=True)
        return
    pid = os.fork()
    if pid == 0:
        print(f"forked child: {compile_under_the_jit(dynamo_first=mode == 'fork-dynamo-first')}", flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print(f"{mode}: the forked child ended with exit status {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    main()
