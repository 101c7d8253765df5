"""torch.export and torch.func's transforms (vjp, jvp, vmap, compiled grad and vmap) over op_db and module_db."""
