"""Tiny Llama-named checkpoints for the mergekit configuration tests.

    write_models(folder) -> {name: path}

writes six folders, each a checkpoint as Hugging Face writes one (`model.safetensors`,
`config.json`, `generation_config.json`, `tokenizer.json`, `tokenizer_config.json`,
`special_tokens_map.json`): a LlamaForCausalLM with 40 layers, hidden size 8, MLP size 16,
vocabulary 32, 2 attention heads, untied embeddings.

  base                       seeded weights (seed 0): matrices ~ N(0, 0.1), norms 1 + N(0, 0.1)
  model_a, model_b, model_c  base + seeded noise of scale 0.02, 0.04, 0.06 (norms: a tenth of
                             it), so the task vectors differ and disagree in sign
  model_a_f16                model_a stored as F16
  model_b_bf16               model_b stored as BF16

Everything is F32 except model_a_f16 and model_b_bf16; the values are the same on every run. Every model's
JSON files carry its name, so a merge's copied files show which model they came from.

    PYTHONPATH=python /usr/bin/python3 tests/mergekit/make_models.py FOLDER
"""
import json
import os
import sys

import numpy as np

from compatnets.safetensors import save

NUM_LAYERS, HIDDEN, INTERMEDIATE, VOCAB, HEADS = 40, 8, 16, 32, 2
# (suffix, shape) of every layer's tensors, in mergekit's llama.json order.
LAYER_TENSORS = [
    ("input_layernorm.weight", (HIDDEN,)),
    ("self_attn.q_proj.weight", (HIDDEN, HIDDEN)),
    ("self_attn.k_proj.weight", (HIDDEN, HIDDEN)),
    ("self_attn.v_proj.weight", (HIDDEN, HIDDEN)),
    ("self_attn.o_proj.weight", (HIDDEN, HIDDEN)),
    ("post_attention_layernorm.weight", (HIDDEN,)),
    ("mlp.up_proj.weight", (INTERMEDIATE, HIDDEN)),
    ("mlp.gate_proj.weight", (INTERMEDIATE, HIDDEN)),
    ("mlp.down_proj.weight", (HIDDEN, INTERMEDIATE)),
]
# name: (noise seed, noise scale); the base has none.
FINE_TUNES = {"model_a": (1, 0.02), "model_b": (2, 0.04), "model_c": (3, 0.06)}
MODEL_NAMES = ["base", "model_a", "model_b", "model_c", "model_a_f16", "model_b_bf16"]


def tensor_shapes(num_layers=NUM_LAYERS):
    """{name: shape} of a checkpoint, in the order it is written."""
    shapes = {"model.embed_tokens.weight": (VOCAB, HIDDEN)}
    for i in range(num_layers):
        for suffix, shape in LAYER_TENSORS:
            shapes[f"model.layers.{i}.{suffix}"] = shape
    shapes["model.norm.weight"] = (HIDDEN,)
    shapes["lm_head.weight"] = (VOCAB, HIDDEN)
    return shapes


def is_norm(name):
    return name.endswith("norm.weight")


def base_tensors():
    rng = np.random.default_rng(0)
    out = {}
    for name, shape in tensor_shapes().items():
        x = rng.normal(0.0, 0.1, size=shape)
        out[name] = (1.0 + x if is_norm(name) else x).astype(np.float32)
    return out


def fine_tune(base, seed, scale):
    """base + seeded noise; norms (close to 1) get a tenth of the scale, as fine-tuning
    moves them little (and SLERP takes its linear branch on them)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, x in base.items():
        s = scale / 10 if is_norm(name) else scale
        out[name] = (x.astype(np.float64) + rng.normal(0.0, s, size=x.shape)).astype(np.float32)
    return out


def llama_config(name, torch_dtype):
    """config.json as transformers writes a LlamaConfig."""
    return {
        "_name_or_path": f"compatbench/{name}",
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "head_dim": HIDDEN // HEADS,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "intermediate_size": INTERMEDIATE,
        "max_position_embeddings": 128,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": HEADS,
        "num_hidden_layers": NUM_LAYERS,
        "num_key_value_heads": HEADS,
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": torch_dtype,
        "transformers_version": "4.46.3",
        "use_cache": True,
        "vocab_size": VOCAB,
    }


def tokenizer_files(name, index):
    """Small valid tokenizer files (a word-level tokenizer.json over 32 tokens)."""
    specials = ["<unk>", "<s>", "</s>"]
    vocab = {tok: i for i, tok in enumerate(specials + [f"w{i}" for i in range(VOCAB - 3)])}
    added = [{"id": i, "content": tok, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, tok in enumerate(specials)]
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
                 "normalizer": None, "pre_tokenizer": {"type": "Whitespace"},
                 "post_processor": None, "decoder": None,
                 "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}
    tokenizer_config = {
        "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"}
                                 for a in added},
        "bos_token": "<s>", "clean_up_tokenization_spaces": False, "eos_token": "</s>",
        "model_max_length": 128, "name_or_path": f"compatbench/{name}",
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>"}
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
               "pad_token": "</s>" if index % 2 else "<unk>"}
    generation = {"_from_model_config": True, "bos_token_id": 1, "eos_token_id": 2,
                  "max_length": 64 + index, "transformers_version": "4.46.3"}
    return {"tokenizer.json": tokenizer, "tokenizer_config.json": tokenizer_config,
            "special_tokens_map.json": special, "generation_config.json": generation}


def write_checkpoint(folder, name, index, tensors, dtype):
    os.makedirs(folder, exist_ok=True)
    save(os.path.join(folder, "model.safetensors"), tensors, metadata={"format": "pt"},
         dtypes=dtype)
    torch_dtype = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]
    files = {"config.json": llama_config(name, torch_dtype), **tokenizer_files(name, index)}
    for file_name, content in files.items():
        with open(os.path.join(folder, file_name), "w", encoding="utf-8") as f:
            json.dump(content, f, indent=2, sort_keys=True)
            f.write("\n")


def model_tensors():
    """{model name: ({tensor: float32 array}, safetensors dtype)} of every model."""
    base = base_tensors()
    out = {"base": (base, "F32")}
    for name, (seed, scale) in FINE_TUNES.items():
        out[name] = (fine_tune(base, seed, scale), "F32")
    out["model_a_f16"] = (out["model_a"][0], "F16")
    out["model_b_bf16"] = (out["model_b"][0], "BF16")
    return out


def write_models(folder):
    """Writes every model under `folder`; returns {name: absolute folder path}."""
    paths = {}
    for index, (name, (tensors, dtype)) in enumerate(model_tensors().items()):
        path = os.path.abspath(os.path.join(folder, name))
        write_checkpoint(path, name, index, tensors, dtype)
        paths[name] = path
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py FOLDER")
    for model, path in write_models(sys.argv[1]).items():
        print(f"{model}: {path}")
