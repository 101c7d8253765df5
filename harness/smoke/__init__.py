"""Tier P0: the harness's own offline smoke checks, run under every configuration."""
