"""P3 without a checkout: torch.compile over the databases inside torch (docs/torch_suites.md)."""
