"""What an `optim_db` entry's optimizer accepts, asked of the optimizer itself, for the checks that
build its parameters (P1's optimizer checks, P3's compiled steps)."""

from typing import Any

import torch


def takes_vectors(optim_info: Any) -> bool:
    """Whether the optimizer accepts a 1-D parameter (Muon takes only matrices), so a check can give
    it a bias vector beside the weight matrix."""
    try:
        optim_info.optim_cls([torch.nn.Parameter(torch.zeros(2))])
    except ValueError:
        return False
    return True
