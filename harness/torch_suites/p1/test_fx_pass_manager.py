"""The plain unittest file that ships inside torch, `torch/fx/passes/tests/test_pass_manager.py`,
collected here.

Its classes derive from `unittest.TestCase`; torch's `run_tests()` refuses a script whose test
classes do not derive from PyTorch's `TestCase`, so each is collected as a subclass of both, with
its own name (`TestPassManager`): the tests are the file's own, unchanged. (No name in this
module may hold a shipped class itself: pytest and run_tests() collect every unittest class.)
"""

import unittest

from torch.fx.passes.tests import test_pass_manager as shipped
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.shared.entries import Entries

ENTRIES = Entries(tuple(value for value in vars(shipped).values()
                        if isinstance(value, type) and issubclass(value, unittest.TestCase)),
                  full_name=lambda cls: cls.__name__)

globals().update({cls.__name__: type(cls.__name__, (cls, TestCase), {}) for cls in ENTRIES.chosen()})

if __name__ == "__main__":
    run_tests()
