"""torch.compile over PyTorch's databases: each check proves dynamo captured a graph (a counting backend) before comparing with eager; every later compiled group builds on it."""
