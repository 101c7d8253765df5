"""Configure: configurations and tiers as data, interpreters, session environments."""
