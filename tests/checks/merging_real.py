"""Checks of tests/e2e/merging_real.sh, run as: python3 -m checks merging_real FUNCTION ARGS..."""


def tables(*args):
    argv = ["-", *args]
    import sys, h5py, numpy as np
    f = h5py.File(argv[1] + "/results.h5", "r")
    p = {k: f["merging/pairs"][k][:] for k in f["merging/pairs"]}
    assert len(p["model_a"]) == 6, p["model_a"]            # 2 backbones x 3 pairs of fine-tunes
    assert sorted(set(b.decode() for b in p["backbone"])) == ["bb_a", "bb_b"]
    for col in ("backbone", "paradigm", "family", "task_a", "task_b", "ease", "ceiling", "score",
                "cka", "interference", "rho", "screen_score", "acc_a", "acc_b", "ft_acc_a",
                "ft_acc_b", "base_acc_a", "base_acc_b", "retention", "region"):
        assert col in p, col
    assert np.allclose(p["ft_acc_a"], 1) and np.allclose(p["base_acc_b"], 0.5)
    assert np.allclose(p["retention"], 0.5 * (p["acc_a"] / p["ft_acc_a"] + p["acc_b"] / p["ft_acc_b"]))
    assert np.allclose(p["screen_score"], np.sqrt(p["interference"] / 2))   # coef 1, K = 2
    # bb_b's fine-tunes moved 8x further than bb_a's: far more interference.
    a, b = p["backbone"] == b"bb_a", p["backbone"] == b"bb_b"
    assert p["interference"][b].min() > 20 * p["interference"][a].max()
    assert "merging/analysis/lofo_range" in f and len(f["merging/grid/ease"]) == 6
    print("real checkpoints: 6 merges evaluated by the user's script")


def kept_merges_match_numpy(*args):
    argv = ["-", *args]
    import glob, json, os, numpy as np
    from checks.user_scripts.extract_probe import load
    from compatnets.safetensors import read
    merged_dir = [d for d in glob.glob(argv[1] + "/artifacts/merges/*") if "bb_a_t1_t2" in d][0]
    m = load(merged_dir)
    base, a, b = load("ckpt/bb_a.safetensors"), load("ckpt/bb_a_t1"), load("ckpt/bb_a_t2.safetensors")
    for k in ("w1", "w2"):
        want = base[k] + ((a[k] - base[k]) + (b[k] - base[k])) / 2
        assert np.allclose(m[k], want, atol=1e-6), k
    assert m["step"].tolist() == [3] and "head" not in m
    meta = read(os.path.join(merged_dir, "model.safetensors")).metadata
    assert meta["merge_method"] == "task_arithmetic" and meta["normalize"] == "mean", meta
    print("kept merge equals numpy's task arithmetic")


def bad_tensor_named(*args):
    argv = ["-", *args]
    import sys, h5py
    f = h5py.File(argv[1] + "/results.h5", "r")
    ids = [i.decode() for i in f["tasks/id"][:]]
    status = dict(zip(ids, [s.decode() for s in f["tasks/status"][:]]))
    error = dict(zip(ids, [s.decode() for s in f["tasks/error"][:]]))
    e = error["real_models/bb_b+t3"]
    assert status["real_models/bb_b+t3"] == "failed" and "bb_b_t3.safetensors" in e and "'w2'" in e, e
    assert status["merges/bb_b/t1+t3"] == "skipped" and status["merges/bb_a/t1+t3"] == "done"
    print("bad fine-tune:", e)
