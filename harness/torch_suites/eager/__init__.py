"""Eager checks over op_db and module_db: PyTorch's generic op checks (consistency, gradients, references, `out=`, math bits, fake tensors, tags) and module checks, without torch.compile."""
