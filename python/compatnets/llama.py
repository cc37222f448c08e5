"""A small decoder-only language model with the Llama architecture, stored as Hugging Face
stores LlamaForCausalLM.

The model follows transformers' src/transformers/models/llama/modeling_llama.py (commit
5dd4a635) and the layout its save_pretrained writes (modeling_utils.py, commit 040ba146;
huggingface_hub's split_torch_state_dict_into_shards, commit ee0a4510): RMSNorm (in float32, eps inside the
square root, then times the weight), rotary position embeddings on queries and keys
(inv_freq = θ^(-2i/d), the two halves of a head rotated: rotate_half), causal attention
scaled by 1/√head_dim, a SwiGLU MLP down_proj(silu(gate_proj(x)) · up_proj(x)), pre-norm
residual blocks (input_layernorm, post_attention_layernorm), a final norm and `lm_head`
(tied to the embeddings when `tie_word_embeddings`). No biases. The tokenizer is bytes:
token t is the byte t, vocab_size 256.

A checkpoint is a folder as `save_pretrained` writes it: `config.json`, and the tensors
under Hugging Face's names (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight,
…, model.layers.N.mlp.gate_proj.weight, …, model.norm.weight, lm_head.weight; no lm_head
when tied) in `model.safetensors`, or sharded as `model-0000i-of-0000n.safetensors` with
`model.safetensors.index.json` ({"metadata": {"total_size"}, "weight_map"}) once the
tensors pass `shard_bytes`: tensors in order, a new shard when the next would pass the size.

    cfg = Config(hidden_size=192, num_hidden_layers=6, ...)
    model = Llama(cfg)
    save(folder, model, shard_bytes=4 << 20)
    model = load(folder)           # refuses a missing shard, a missing tensor, a bad config
"""
import json
import math
import os
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .safetensors import INDEX_NAME, SafetensorsError, load as load_file, save as save_file

VOCAB = 256  # bytes


@dataclass
class Config:
    """The fields of Hugging Face's LlamaConfig that shape the model (config.json)."""
    hidden_size: int = 192
    intermediate_size: int = 512
    num_hidden_layers: int = 6
    num_attention_heads: int = 4
    max_position_embeddings: int = 128
    vocab_size: int = VOCAB
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False

    # What must agree between two checkpoints of one family (a base and its specialists).
    SHAPE_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                  "vocab_size", "tie_word_embeddings")

    def to_json(self):
        """config.json as transformers writes a LlamaConfig (its other fields at defaults)."""
        out = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
               "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
               "bos_token_id": None, "eos_token_id": None, "hidden_act": "silu",
               "initializer_range": 0.02, "num_key_value_heads": self.num_attention_heads,
               "pretraining_tp": 1, "rope_scaling": None, "torch_dtype": "float32",
               "use_cache": True,
               "head_dim": self.hidden_size // self.num_attention_heads}
        out.update(asdict(self))
        return dict(sorted(out.items()))

    @classmethod
    def read(cls, folder):
        """The config of a checkpoint folder; refuses, naming the key, what this model cannot
        run (another architecture or activation, biases, grouped-query attention, RoPE
        scaling, heads that do not divide the width)."""
        path = os.path.join(folder, "config.json")
        try:
            with open(path) as f:
                raw = json.load(f)
        except (OSError, ValueError) as e:
            raise SafetensorsError(f"{path}: cannot read the model's config ({e})") from None
        if not isinstance(raw, dict):
            raise SafetensorsError(f"{path}: not a JSON object")
        unsupported = {"model_type": "llama", "hidden_act": "silu", "attention_bias": False,
                       "mlp_bias": False, "rope_scaling": None,
                       "num_key_value_heads": raw.get("num_attention_heads")}
        for key, want in unsupported.items():
            if raw.get(key, want) != want:
                raise SafetensorsError(f"{path}: {key} {raw[key]!r} is not supported here (want {want!r})")
        fields = {}
        for key, default in asdict(cls()).items():
            value = raw.get(key, default)
            if type(value) is not type(default) and not (type(default) is float and type(value) is int):
                raise SafetensorsError(f"{path}: {key} {value!r} is not a {type(default).__name__}")
            fields[key] = type(default)(value)
        cfg = cls(**fields)
        if cfg.num_attention_heads < 1 or cfg.hidden_size % (2 * cfg.num_attention_heads):
            raise SafetensorsError(f"{path}: hidden_size {cfg.hidden_size} is not num_attention_heads "
                                   f"{cfg.num_attention_heads} heads of an even width")
        if raw.get("head_dim") not in (None, cfg.hidden_size // cfg.num_attention_heads):
            raise SafetensorsError(f"{path}: head_dim {raw['head_dim']} is not hidden_size / "
                                   "num_attention_heads (not supported here)")
        return cfg

    def check_same(self, other, path, other_path):
        """Raises naming the first shape field where `other` (at other_path) differs."""
        for k in self.SHAPE_KEYS:
            if getattr(self, k) != getattr(other, k):
                raise SafetensorsError(f"{path}/config.json: {k} {getattr(self, k)} but "
                                       f"{other_path}/config.json has {getattr(other, k)}")


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg.hidden_size
        self.heads, self.head_dim = cfg.num_attention_heads, h // cfg.num_attention_heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (
            nn.Linear(h, h, bias=False) for _ in range(4))

    def forward(self, x, cos, sin, mask, past=None):
        b, t, h = x.shape
        q, k, v = (p(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if past is not None:  # the keys and values of the positions before, kept for the next call
            if past:
                k, v = torch.cat((past["k"], k), 2), torch.cat((past["v"], v), 2)
            past["k"], past["v"] = k, v
        w = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask
        return self.o_proj((w.softmax(-1) @ v).transpose(1, 2).reshape(b, t, h))


class Mlp(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, i = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj, self.up_proj = nn.Linear(h, i, bias=False), nn.Linear(h, i, bias=False)
        self.down_proj = nn.Linear(i, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn, self.mlp = Attention(cfg), Mlp(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x, cos, sin, mask, past=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, past)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    """LlamaModel: the embeddings, the layers and the final norm."""

    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        d = cfg.hidden_size // cfg.num_attention_heads
        inv_freq = 1.0 / cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
        freqs = torch.outer(torch.arange(cfg.max_position_embeddings, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, ids, past=None):
        """`past`: a cache (a list, empty at first) of each layer's keys and values; the
        ids then continue the positions it holds (greedy decoding one token at a time)."""
        t = ids.shape[1]
        s = past[0]["k"].shape[2] if past else 0
        if past is not None and not past:
            past.extend({} for _ in self.layers)
        mask = torch.full((t, s + t), float("-inf")).triu(s + 1)
        x = self.embed_tokens(ids)
        for i, layer in enumerate(self.layers):
            x = layer(x, self.cos[s:s + t], self.sin[s:s + t], mask, None if past is None else past[i])
        return self.norm(x)


class Llama(nn.Module):
    """LlamaForCausalLM: hidden states (`hidden`) and next-token logits (`forward`)."""

    def __init__(self, cfg):
        super().__init__()
        self.config = cfg
        self.model = Body(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        for m in self.modules():  # transformers' _init_weights: N(0, 0.02), norms at 1
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def hidden(self, ids, past=None):
        t = ids.shape[1] + (past[0]["k"].shape[2] if past else 0)
        if t > self.config.max_position_embeddings:
            raise ValueError(f"{t} tokens, past max_position_embeddings "
                             f"{self.config.max_position_embeddings}")
        return self.model(ids, past)

    def forward(self, ids, past=None):
        return self.lm_head(self.hidden(ids, past))

    def tensors(self):
        """{Hugging Face name: float32 array} in module order (lm_head left out when tied)."""
        out = {k: v.detach().numpy().astype(np.float32) for k, v in self.state_dict().items()}
        if self.config.tie_word_embeddings:
            out.pop("lm_head.weight")
        return out


def save(folder, model, shard_bytes=4 << 30, metadata=None):
    """Writes config.json and the tensors (sharded past shard_bytes) into `folder`, after
    removing the tensor files and index of an earlier save (as save_pretrained does)."""
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        if old == INDEX_NAME or (old.startswith("model") and old.endswith(".safetensors")):
            os.remove(os.path.join(folder, old))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(model.config.to_json(), f, indent=2)
        f.write("\n")
    shards, size = [[]], 0
    tensors = model.tensors()
    for name, array in tensors.items():
        if shards[-1] and size + array.nbytes > shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += array.nbytes
    meta = dict(metadata or {}, format="pt")
    if len(shards) == 1:
        save_file(os.path.join(folder, "model.safetensors"), tensors, metadata=meta)
        return
    weight_map = {}
    for i, names in enumerate(shards, 1):
        file = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(os.path.join(folder, file), {n: tensors[n] for n in names}, metadata=meta)
        weight_map.update({n: file for n in names})
    index = {"metadata": {"total_size": sum(a.nbytes for a in tensors.values())},
             "weight_map": weight_map}
    with open(os.path.join(folder, INDEX_NAME), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
        f.write("\n")


def read_tensors(folder):
    """{name: array} of a checkpoint folder: model.safetensors, or the shards its index
    names (a missing shard, or a tensor absent from the shard named, is refused by name)."""
    if not os.path.exists(os.path.join(folder, INDEX_NAME)) and \
            not os.path.exists(os.path.join(folder, "model.safetensors")):
        raise SafetensorsError(f"{folder}: neither model.safetensors nor {INDEX_NAME}")
    return load_file(folder)


def load(folder, like=None, tensors_from=None):
    """The model of a checkpoint folder. `like`: a checkpoint folder whose config.json must
    agree (a base and its specialists). `tensors_from`: read the tensors from this folder
    instead (a merged checkpoint that holds tensors only), with `folder`'s config."""
    cfg = Config.read(folder)
    if like is not None:
        Config.read(like).check_same(cfg, like, folder)
    model = Llama(cfg)
    source = tensors_from or folder
    tensors = read_tensors(source)
    extra = sorted(set(tensors) - set(model.state_dict()))
    if extra:
        raise SafetensorsError(f"{source}: tensor '{extra[0]}' is not part of a Llama of {folder}/config.json")
    for name, param in model.state_dict().items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        if name not in tensors:
            raise SafetensorsError(f"{source}: no tensor '{name}' (a Llama of {folder}/config.json has it)")
        if tuple(tensors[name].shape) != tuple(param.shape):
            raise SafetensorsError(f"{source}: tensor '{name}' has shape {list(tensors[name].shape)}, "
                                   f"the config wants {list(param.shape)}")
        param.copy_(torch.from_numpy(np.asarray(tensors[name], np.float32)))
    return model
