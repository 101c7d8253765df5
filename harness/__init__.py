"""Differential test harness for PyTorch under alternative Python runtimes and JITs.

Data flows one way: configure -> run -> record -> compare -> report, one subpackage each.
This module stays import-light: test processes of any interpreter import the plugin under it.
"""

__version__ = "0.1.0"
