"""YAML-driven torch op tests (RFC-0186): `pytest op_manifests [--model NAME] [--list-cases]`.

One job per module, frozen dataclasses between them:
    loader.py    YAML -> validated CaseSpec values, errors as `file:line:col: case 'x': ...`
    safe_eval.py restricted evaluator for `py:` literals and `skip_if` expressions
    registry.py  op name -> callable by lookup (never eval)
    plan.py      model selection, skip_if, dedupe and test ids, decided at collection
    inputs.py    tensors and values for one call (presets, strides, .pt files)
    runner.py    run under the compile backend, compare with the CPU eager reference
    report.py    pass rates, coverage, dedupe efficiency, runtimes (JSON + Markdown)
    conftest.py  pytest options and test generation; test_model_ops.py is the test itself
Collection never imports torch (only inputs/runner do, when a test runs).
"""
