"""Regenerate the two tiny .pt inputs used by template.yaml's `file:` cases.

    python op_manifests/data/make_data.py

Values are fixed (not random) so the committed file is reproducible byte for byte in content.
The dict form shows `file: {path: ..., key: ...}`; the strided view shows that torch.save keeps
a view's strides, which is how to feed exact values to a non-contiguous input.
"""

from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def main() -> None:
    # Attention scores with a -inf mask entry and a large value: the edge cases softmax must handle.
    scores = torch.tensor(
        [[1.0, 2.0, float("-inf"), 0.5], [30.0, -30.0, 0.0, 1.0e-3], [0.25, 0.25, 0.25, 0.25]],
        dtype=torch.float32,
    )
    # A transposed (non-contiguous) view: torch.save keeps the storage and the strides.
    grid = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    torch.save({"scores": scores, "grid_t": grid}, HERE / "attn_inputs.pt")
    # A single tensor, for the plain `file: data/bias.pt` form.
    torch.save(torch.tensor([0.5, -0.5, 1.0], dtype=torch.float32), HERE / "bias.pt")
    print(f"wrote {HERE / 'attn_inputs.pt'} and {HERE / 'bias.pt'}")


if __name__ == "__main__":
    main()
