"""Checks of tests/e2e/screen.sh, run as: python3 -m checks screen FUNCTION ARGS..."""


def scope_and_threshold(*args):
    argv = ["-", *args]
    import json, os, numpy as np
    from compatnets.safetensors import load as load_file
    w = argv[1]
    one, two, mlp = (json.load(open(f"{w}/{n}.json")) for n in ("one", "two", "mlp"))
    for key in ("interference", "rho", "score"):
        assert one[key] == two[key], (key, one[key], two[key])   # same bytes on 1 and 2 ranks
    assert one["k"] == 2 and one["coef"] == 0.5 and two["ranks"] == 2
    def load(path):
        return {n: t.astype(np.float64).ravel() for n, t in load_file(path).items()}
    base, a, b = load(f"{w}/llm/base.safetensors"), load(f"{w}/llm/ft0.safetensors"), load(f"{w}/llm/ft1")
    tot_i = tot_c = count = 0.0
    per = {}
    for n in base:
        t = np.stack([a[n] - base[n], b[n] - base[n]])
        i = t.var(axis=0)
        c = np.abs(t).mean(0) ** 2 - t.mean(0) ** 2
        per[n] = (i.mean(), c.sum() / i.sum())
        tot_i += i.sum(); tot_c += c.sum(); count += i.size
    mean_i = tot_i / count
    assert abs(one["interference"] - mean_i) < 1e-5 * mean_i, (one["interference"], mean_i)
    assert abs(one["rho"] - tot_c / tot_i) < 1e-4, (one["rho"], tot_c / tot_i)
    assert abs(one["score"] - 0.5 * np.sqrt(mean_i / 2)) < 1e-5 * one["score"]
    for t in one["tensors"]:
        assert abs(t["interference"] - per[t["name"]][0]) < 1e-5 * per[t["name"]][0], t
    names = [t["name"] for t in mlp["tensors"]]
    assert len(names) == 6 and all("mlp" in n for n in names) and mlp["verdict"] == "harmless", names
    assert one["verdict"] == ("destructive" if one["score"] > 1.9e-3 else "harmless")
    print(f"screen: I = {mean_i:.4g}, rho = {tot_c / tot_i:.4f} as numpy; 1 and 2 ranks equal")


def bad_input_named(*args):
    argv = ["-", *args]
    import numpy as np
    from compatnets.safetensors import load, save
    d = argv[1]
    t = load(d + "/ft0.safetensors")
    missing = {n: v for n, v in t.items() if n != "model.layers.1.mlp.up_proj.weight"}
    save(d + "/missing.safetensors", missing, dtypes="BF16")
    shape = dict(t)
    shape["model.norm.weight"] = np.zeros(65, dtype=np.float32)
    save(d + "/shape.safetensors", shape, dtypes="BF16")
    save(d + "/f32.safetensors", t)
    open(d + "/cut.safetensors", "wb").write(open(d + "/ft0.safetensors", "rb").read()[:5000])
