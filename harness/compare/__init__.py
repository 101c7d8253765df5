"""Compare: baseline against candidate, with the validity checks that back a verdict."""
