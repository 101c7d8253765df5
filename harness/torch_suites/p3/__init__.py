"""P3 without a checkout: torch.compile over the databases inside torch (docs/torch_suites.md).

`compilesuites` assembles the tier's test classes from the compiled/ and export/ groups; the
thin `test_*.py` files beside it name what each runs."""
