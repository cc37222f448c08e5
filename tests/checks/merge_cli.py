"""Checks of tests/e2e/merge_cli.sh, run as: python3 -m checks merge_cli FUNCTION ARGS..."""


def sharded_equals_single_file(*args):
    import glob, json, os, numpy as np
    from compatnets.safetensors import load as load_file, read
    def load(path):
        return {n: t.astype(np.float64) for n, t in load_file(path).items()}
    base = load("base.safetensors"); fts = [load("ft0.safetensors"), load("ft1"), load("ft2.safetensors")]
    def bf16(x):
        u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    def close(got, want, name):
        assert np.array_equal(got, bf16(want)) or np.allclose(got, want, rtol=1e-2, atol=1e-6), name
    out = {m: load(f"out_{m}") for m in ("ta", "ties", "dare", "slerp", "stock", "prism", "hard", "norm")}
    for m, w in out.items():
        assert set(w) == set(base), (m, sorted(set(base) ^ set(w)))
        meta = read(f"out_{m}/model.safetensors").metadata
        assert meta["format"] == "pt" and meta["merge_method"] in ("task_arithmetic", "ties", "dare", "slerp", "model_stock", "prism", "prism_hard", "norm_matched")
        assert read(f"out_{m}/model.safetensors").dtypes["lm_head.weight"] == "BF16"
    # Task arithmetic: θ0 + 0.7 · mean τ, rounded to BF16.
    for n in base:
        close(out["ta"][n], base[n] + 0.7 * np.mean([f[n] - base[n] for f in fts], axis=0), n)
    # PRISM: out-of-scope tensors are the base; in scope the soft threshold of numpy's λ.
    taus = {n: np.stack([f[n] - base[n] for f in fts]) for n in base}
    scope = [n for n in base if any(k in n for k in ("gate_proj", "up_proj", "down_proj"))]
    I = sum(taus[n].var(0).sum() for n in scope); C = sum((np.abs(taus[n]).mean(0) ** 2 - taus[n].mean(0) ** 2).sum() for n in scope)
    assert C / I >= 0.1, C / I   # above the gate: thresholds apply
    changed = 0
    for n in base:
        if n not in scope:
            assert np.array_equal(out["prism"][n], base[n]), n
            continue
        m = taus[n].mean(0); lam = np.sqrt(taus[n].var(0).mean()) * np.sqrt(2 * np.log(m.size))
        soft = np.sign(m) * np.maximum(np.abs(m) - lam, 0)
        if (np.abs(m) > lam).sum() >= np.ceil(0.001 * m.size):   # the floor does not act here
            close(out["prism"][n], base[n] + soft, n)
            close(out["hard"][n], base[n] + m * (np.abs(m) > lam), n)
        changed += (out["prism"][n] != base[n]).sum()
    assert changed > 0
    # Sharded, float32.
    files = sorted(glob.glob("out_sharded/model-*-of-*.safetensors"))
    index = json.load(open("out_sharded/model.safetensors.index.json"))
    assert len(files) > 1 and set(index["weight_map"]) == set(base)
    assert set(read(files[0]).dtypes.values()) == {"F32"}
    sh = load("out_sharded")
    for n in base:
        assert np.allclose(sh[n], base[n] + 0.7 * np.mean([f[n] - base[n] for f in fts], axis=0), atol=1e-6), n
    print("merge: 8 methods written; TA and PRISM equal numpy; sharded float32 output indexed")


def _matrix_operator_equals_numpy(out, name, update):
    """OUT (a merge of ft0, ft1, ft2 over base at c = 0.8) equals θ0 + 0.8 · update(taus) on
    every 2-D tensor not named text_projection, θ0 + 0.8 · τ̄ elsewhere, within one BF16
    rounding of each tensor's largest value; returns how many tensors took `update`."""
    import numpy as np
    from compatnets.safetensors import load as load_file
    def load(path):
        return {n: t.astype(np.float64) for n, t in load_file(path).items()}
    base = load("base.safetensors"); fts = [load("ft0.safetensors"), load("ft1"), load("ft2.safetensors")]
    got = load(out)
    matrices = 0
    for n, b in base.items():
        taus = [f[n] - b for f in fts]
        if b.ndim == 2 and "text_projection" not in n:
            delta, matrices = update(taus), matrices + 1
        else:
            delta = sum(taus) / len(taus)
        want = b + 0.8 * delta
        err = np.abs(got[n] - want).max() / max(np.abs(want).max(), 1e-12)
        assert err <= 2 ** -8, (n, err)
        assert not np.array_equal(got[n], b), n
    assert matrices > 0
    print(f"{name}: {len(base)} tensors equal numpy ({matrices} matrices)")


def iso_c_equals_numpy(*args):
    """Iso-C as its authors' code computes it (src/utils/iso.py iso_c, danielm1405/iso-merging
    at d34010af), slowly in numpy: each 2-D tensor's task vectors summed and its singular
    values replaced by their mean; every other tensor the mean task vector; θ0 + 0.8 · that."""
    import numpy as np
    def flattened(taus):
        u, s, vt = np.linalg.svd(sum(taus), full_matrices=False)
        return u @ np.diag(np.full_like(s, s.mean())) @ vt
    _matrix_operator_equals_numpy("out_iso", "iso_c", flattened)


def tsv_equals_numpy(*args):
    """TSV-Merge as its authors' code computes it (src/utils/TSVM_utils.py
    compute_and_sum_svd_mem_reduction, AntoAndGar/task_singular_vectors at a6c97188), in numpy
    step for step (sum_u, sum_s, sum_v padded with zeros to min(rows, cols), then
    multi_dot(u_u, v_u, diag(sum_s), u_v, v_v)); every other tensor the mean task vector;
    θ0 + 0.8 · that."""
    import numpy as np
    def decorrelated(taus):
        sv_reduction = 1 / len(taus)
        for i, vec in enumerate(taus):
            u, s, v = np.linalg.svd(vec, full_matrices=False)
            if i == 0:
                sum_u, sum_s, sum_v = np.zeros_like(u), np.zeros_like(s), np.zeros_like(v)
            k = int(s.shape[0] * sv_reduction)
            sum_u[:, i * k:(i + 1) * k] = u[:, :k]
            sum_s[i * k:(i + 1) * k] = s[:k]
            sum_v[i * k:(i + 1) * k, :] = v[:k, :]
        u_u, _, v_u = np.linalg.svd(sum_u, full_matrices=False)
        u_v, _, v_v = np.linalg.svd(sum_v, full_matrices=False)
        return np.linalg.multi_dot((u_u, v_u, np.diag(sum_s), u_v, v_v))
    _matrix_operator_equals_numpy("out_tsv", "tsv", decorrelated)


def screen_outputs_agree(*args):
    import json
    a, b = json.load(open("screen_yaml.json")), json.load(open("screen_cli.json"))
    for k in ("k", "coef", "interference", "rho", "score", "tensors"):
        assert a[k] == b[k], k
    print("screen of the merge YAML equals screen --base --models --coef")


def same_tensors(*args):
    """Two merge outputs hold the same tensors, bit for bit (their metadata record their own
    parameters): python3 -m checks merge_cli same_tensors A B."""
    import numpy as np
    from compatnets.safetensors import load
    a, b = load(args[0]), load(args[1])
    assert set(a) == set(b) and all(np.array_equal(a[n], b[n]) for n in a), (args[0], args[1])
    print(f"{args[1]}: the same {len(a)} tensors as {args[0]}")


def make_lora(*args):
    """A PEFT LoRA adapter for BASE in folder OUT (r = 2, lora_alpha = 6: scale 3) on every
    layer's q_proj and v_proj, seeded: python3 -m checks merge_cli make_lora BASE OUT
    [CONFIG_JSON_OVERRIDES]."""
    import json, os, numpy as np
    from compatnets.safetensors import load, save
    base = load(args[0])
    rng = np.random.default_rng(11)
    tensors = {}
    for name, w in sorted(base.items()):
        if name.endswith(("q_proj.weight", "v_proj.weight")):
            module = "base_model.model." + name[: -len(".weight")]
            tensors[module + ".lora_A.weight"] = rng.normal(0, 0.05, (2, w.shape[1])).astype(np.float32)
            tensors[module + ".lora_B.weight"] = rng.normal(0, 0.05, (w.shape[0], 2)).astype(np.float32)
    os.makedirs(args[1], exist_ok=True)
    save(os.path.join(args[1], "adapter_model.safetensors"), tensors)
    config = {"peft_type": "LORA", "r": 2, "lora_alpha": 6, "target_modules": ["q_proj", "v_proj"],
              "fan_in_fan_out": False, "bias": "none", "use_rslora": False, "use_dora": False,
              "modules_to_save": None, "rank_pattern": {}, "alpha_pattern": {}}
    config.update(json.loads(args[2]) if len(args) > 2 else {})
    with open(os.path.join(args[1], "adapter_config.json"), "w") as f:
        json.dump(config, f)
    print(f"{args[1]}: {len(tensors) // 2} LoRA pairs")


def lora_equals_numpy(*args):
    """OUT (task arithmetic, lambda 1, of BASE with FT and FT+ADAPTER) equals numpy: θ0 +
    (θ_ft − θ0) + (θ_ft + 3·B·A − θ0), F32 (the adapted model is F32, as transformers saves it;
    the base keeps its BF16 dtype): python3 -m checks merge_cli lora_equals_numpy BASE
    FT ADAPTER OUT."""
    import os, numpy as np
    from compatnets.safetensors import load
    base, ft = load(args[0]), load(args[1])
    lora, out = load(os.path.join(args[2], "adapter_model.safetensors")), load(args[3])
    worst = 0.0
    for name, w0 in base.items():
        w0, w = w0.astype(np.float64), ft[name].astype(np.float64)
        a = lora.get("base_model.model." + name[: -len(".weight")] + ".lora_A.weight")
        adapted = w + (3.0 * (lora["base_model.model." + name[: -len(".weight")]
                                    + ".lora_B.weight"].astype(np.float64) @ a) if a is not None else 0.0)
        adapted = adapted.astype(np.float32).astype(np.float64)  # written as F32
        want = w0 + (w - w0) + (adapted - w0)
        got = out[name].astype(np.float64)
        scale = np.abs(want).max() or 1.0
        worst = max(worst, np.abs(got - want).max() / scale)
    assert worst < 1e-2, worst  # the output is BF16: within its rounding
    print(f"LoRA reference: {len(base)} tensors, max error {worst:.2e} of max |value| (BF16 output)")
