"""Run: execute test files, one process each, with the harness plugin loaded."""
