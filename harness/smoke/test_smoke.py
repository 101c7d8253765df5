"""The P0 smoke check (docs/background.md §1): nn.Linear forward and backward, checked against hand-computed values."""

import torch

from harness.smoke.jitcheck import hot_calls, make_hot, require_compiled

TRAINING_STEPS = 300  # enough for a 10x loss drop on this problem, whatever the JIT threshold


def linear_step(x: torch.Tensor, layer: torch.nn.Linear) -> torch.Tensor:
    layer.zero_grad()
    loss = layer(x).sum()
    loss.backward()
    return loss


def test_linear_forward_backward_matches_hand_computation():
    torch.manual_seed(0)
    x = torch.randn(10, 5)
    layer = torch.nn.Linear(5, 3)
    loss = make_hot(linear_step, x, layer)
    require_compiled(linear_step)
    expected = (x @ layer.weight.T + layer.bias).sum()
    torch.testing.assert_close(loss, expected)
    # d(sum(xW^T + b))/dW = column sums of x for every output row; d/db = batch size.
    torch.testing.assert_close(layer.weight.grad, x.sum(0).expand(3, 5))
    torch.testing.assert_close(layer.bias.grad, torch.full((3,), 10.0))


def test_small_training_loop_reduces_loss():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 4)
    y = x.sum(1, keepdim=True)

    def step() -> float:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    first = step()
    for _ in range(max(TRAINING_STEPS, hot_calls())):
        last = step()
    require_compiled(step)
    assert last < first / 10, f"loss went from {first} to {last}"
