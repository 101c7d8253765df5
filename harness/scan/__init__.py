"""Model scanner: op manifests (RFC-0186) from real model architectures.

`python -m harness scan-model` builds a small, randomly initialised model (models), runs it under a
TorchDispatchMode that records every aten call with its inputs and the model source line that issued it
(capture), turns the calls into deduplicated manifest cases with valid synthetic inputs (ops, normalize),
runs every case once through the manifest runner to confirm it is green (verify) and writes the YAML
deterministically (emit). See docs/scanner.md.
"""
