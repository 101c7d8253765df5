"""Start-up hook of every Python process that a test process starts once its JIT is engaged.

The harness plugin puts this folder first on PYTHONPATH when it engages the JIT, so each process
started from then on (multiprocessing spawn and forkserver workers, `python` subprocesses) applies
the same JIT request at its start and reports what its JIT really did when it ends (see
harness/run/descendant.py): a JIT claim must hold one level down too. The sitecustomize this one
shadows (a distribution's own) still runs, after it.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _run_shadowed() -> None:
    """Run the next `sitecustomize` on sys.path after this folder, as Python would have."""
    here = os.path.dirname(os.path.abspath(__file__))
    later = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", later)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[__name__] = module
    spec.loader.exec_module(module)


from harness.run import descendant  # noqa: E402  (the harness root is on PYTHONPATH)

descendant.engage()
_run_shadowed()
