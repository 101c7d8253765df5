"""Catalog: the built-in models, as data (no torch or transformers import, so the CLI starts fast).

Each entry is a transformers architecture at test size: its configuration and model class names and
the configuration values that make it small (hidden 32, 2 layers, 4 heads, 4 experts, vocab 256,
32x32 images, 32 audio frames), so a scan takes seconds and its manifest runs in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class CatalogModel:
    """A transformers architecture: class names and the config values that make it small."""

    name: str
    config_class: str
    model_class: str
    config: tuple[tuple[str, object], ...]
    inputs: str  # key of INPUT_MAKERS
    summary: str


_SMALL_LM = (("vocab_size", 256), ("hidden_size", 32), ("intermediate_size", 32), ("num_attention_heads", 4),
             ("num_key_value_heads", 2), ("num_hidden_layers", 2), ("num_local_experts", 4),
             ("num_experts_per_tok", 2), ("max_position_embeddings", 64))
CATALOG: Mapping[str, CatalogModel] = {model.name: model for model in (
    CatalogModel(
        "gpt_oss", "GptOssConfig", "GptOssForCausalLM",
        _SMALL_LM + (("head_dim", 8), ("sliding_window", 4), ("rope_parameters", (
            ("rope_type", "yarn"), ("rope_theta", 150000.0), ("factor", 4.0), ("beta_fast", 32.0),
            ("beta_slow", 1.0), ("truncate", False), ("original_max_position_embeddings", 16)))),
        "tokens", "GPT-OSS: sliding/full attention with sinks, YaRN rotary embeddings, top-2 of 4 experts"),
    CatalogModel(
        "granite_moe_hybrid", "GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM",
        _SMALL_LM + (("shared_intermediate_size", 32), ("layer_types", ("linear_attention", "full_attention")),
                     ("mamba_n_heads", 4), ("mamba_d_state", 8), ("mamba_d_head", 16), ("mamba_chunk_size", 4)),
        "tokens", "Granite 4 hybrid: a Mamba-2 layer and an attention layer, each with top-2 of 4 experts "
                  "and a shared MLP"),
    CatalogModel(
        "vit", "ViTConfig", "ViTForImageClassification",
        (("hidden_size", 32), ("num_hidden_layers", 2), ("num_attention_heads", 4), ("intermediate_size", 64),
         ("image_size", 32), ("patch_size", 8), ("num_labels", 10)),
        "image", "Vision Transformer: 8x8 patches of a 32x32 image, classification head"),
    CatalogModel(
        "whisper", "WhisperConfig", "WhisperForConditionalGeneration",
        (("vocab_size", 256), ("num_mel_bins", 16), ("d_model", 32), ("encoder_layers", 2), ("decoder_layers", 2),
         ("encoder_attention_heads", 4), ("decoder_attention_heads", 4), ("encoder_ffn_dim", 64),
         ("decoder_ffn_dim", 64), ("max_source_positions", 16), ("max_target_positions", 32),
         ("pad_token_id", 0), ("bos_token_id", 1), ("eos_token_id", 2), ("decoder_start_token_id", 3)),
        "speech", "Whisper: convolutional audio encoder over 32 log-mel frames, text decoder over 4 tokens"),
)}  # fmt: skip
