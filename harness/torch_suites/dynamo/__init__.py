"""Dynamo's Python paths: user-style Python, model code, graph breaks and dynamo's own tools and debugging backends, each through torch.compile with proof of capture."""
