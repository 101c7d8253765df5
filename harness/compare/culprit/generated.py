"""Culprits in code torch.compile generated: what made it, and how a user gets to see it.

Under torch.compile, CinderX also compiles code that PyTorch wrote at run time. A culprit search
names it the way CinderX's JIT list can (harness/compare/culprit/cinderx.py); these words say what
the name stands for. Measured with torch 2.14.1 on CinderX 2026.11.2.0:

- dynamo's captured graph is an fx GraphModule whose `forward` has no module name and the file
  `<eval_with_key>.N` (N counts the GraphModules the process made before: the same in every rerun
  of the same tests, not across different commands);
- a graph AOTAutograd traces (`aot_eager`, `inductor`) has the file `<eval_with_key>.N from
  <path>:<line> in <function>`, and AOTAutograd's runtime wrapper `<path of
  _aot_autograd/codegen.py>:codegen(<artifact>)`: the JIT list sees only the part after the last
  `/`, so one line names every such function of the process;
- Inductor's output code is a module of its own, `torch._inductor.runtime.compile_tasks.<hash>`,
  loaded from `<hash>.py` in Inductor's cache folder: the hash is of the code, the same in every
  process that generates the same code;
- a resume function (the code after a graph break) is `torch_dynamo_resume_in_<function>_at_<line>`
  in the module of the function it resumes.
"""

from __future__ import annotations

import re

from harness.compare.culprit.cinderx import named_by_code

INDUCTOR_MODULE = "torch._inductor.runtime.compile_tasks."
_AOT_TRACED = re.compile(r"^<eval_with_key>\.\d+ from (?P<file>.+):(?P<line>\d+) in (?P<function>\S+)$")
_AOT_CODEGEN = re.compile(r"_aot_autograd/codegen\.py:codegen\((?P<artifact>[^)]*)\)$")
_RESUME = "torch_dynamo_resume_in_"


def origin(name: str, file: str) -> str:
    """What generated the function this JIT list line names, and how to see its code ("" when it is
    a function of a source file). `file` is its code's whole file name ("" when unknown)."""
    if traced := _AOT_TRACED.match(file):
        return (f"forward of an fx GraphModule that AOTAutograd traced from {traced['function']} "
                f"({traced['file']}:{traced['line']}) under torch.compile; TORCH_LOGS=aot_graphs prints its code; "
                "this JIT list line names every such forward of the process")
    if file.startswith("<eval_with_key>"):
        return (f"forward of the fx GraphModule dynamo captured under torch.compile (source in linecache as {file}); "
                "TORCH_LOGS=graph_code prints its code; the number counts the GraphModules made before it, "
                "the same whenever this reproducer runs")
    if codegen := _AOT_CODEGEN.search(file):
        return (f"AOTAutograd's generated {codegen['artifact']} under torch.compile; TORCH_LOGS=+aot prints its "
                "code; this JIT list line names every such function of the process")
    module = name.partition(":")[0]
    if module.startswith(INDUCTOR_MODULE):
        code = module.removeprefix(INDUCTOR_MODULE)
        return (f"Inductor's output code under torch.compile: {code}.py in Inductor's cache folder "
                f"($TORCHINDUCTOR_CACHE_DIR, by default /tmp/torchinductor_$USER, then {code[1:3]}/); "
                "TORCH_LOGS=output_code prints it, TORCH_COMPILE_DEBUG=1 keeps it under torch_compile_debug/; "
                "the name is a hash of the code, the same wherever the same code is generated")
    if _RESUME in name:
        return ("a resume function dynamo generated under torch.compile for the code after a graph break; "
                "TORCH_LOGS=bytecode prints its bytecode")
    if named_by_code(name):
        return f"code generated at run time without a module name (file {file or 'unknown'})"
    return ""
