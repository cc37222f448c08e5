"""Checks of tests/e2e/real_smoke.sh, run as: python3 -m checks real_smoke FUNCTION ARGS..."""


def study_tables(*args):
    argv = ["-", *args]
    import sys, h5py, numpy as np
    f = h5py.File(argv[1] + "/results.h5", "r")
    assert f["meta/resumed_tasks"][()] == 132, f["meta/resumed_tasks"][()]  # every task of the config
    t = lambda path: {k: f[path][k][:] for k in f[path]}
    data, vision, text, pairs = t("real/data"), t("real/vision"), t("real/text"), t("alignment/pairs")
    assert data["encoder_images"].tolist() == [1500] and data["coco_images"].tolist() == [300]
    # The captions' oracle R@1 (compatnets.captions), recorded with the data, at its minimum.
    assert data["oracle_flickr"][0] >= 0.5 and data["oracle_coco"][0] >= 0.25, data
    assert data["oracle_coco"][0] < data["oracle_flickr"][0], data
    assert [m.decode() for m in vision["model"]] == ["mlp_sup", "cnn_ae", "vit_simclr", "cnn_mae"]
    # Trained encoders beat chance (10 classes) on the held-out test images.
    assert (vision["probe_acc"] > 0.3).all() and (text["probe_acc"] > 0.3).all(), (vision, text)
    assert vision["steps"].tolist() == [60] * 4 and np.isfinite(vision["final_loss"]).all()
    attributes = [f"probe_{a}" for a in ("ink", "brightness", "aspect", "symmetry", "fill",
                                          "texture", "balance", "contrast")]
    for enc in (vision, text):  # the eight attribute probes and their mean
        probes = np.stack([enc[a] for a in attributes])
        assert ((probes > 0) & (probes <= 1)).all() and np.allclose(enc["probe_attributes"], probes.mean(0))
    # The language-supervised pair, trained together and exported each on its own.
    clip = t("real/clip")
    assert clip["model"].tolist() == [b"cnn_clip+bow_clip"] and clip["text_probe_acc"][0] > 0.3, clip
    assert len(pairs["vision"]) == 20 and np.allclose(pairs["score"], pairs["ease"] * pairs["ceiling"])
    # The ceiling read per paradigm and leaving the pair out (alone in its cell here: NaN),
    # and ease above its permutation null (methods.md §1.1, §1.2).
    assert np.allclose(pairs["score_paradigm"], pairs["ease"] * pairs["ceiling_paradigm"])
    assert np.isnan(pairs["ceiling_leave_pair_out"]).all()
    grid = t("alignment/similarity")
    assert np.allclose(grid["ease_excess"], grid["ease"] - grid["ease_null"])
    assert ((grid["ease_null"] > 0) & (grid["ease_null"] < 0.2)).all(), grid["ease_null"]
    corr = t("alignment/analysis/correlations")
    assert {b"score_excess", b"score_paradigm", b"ceiling_leave_pair_out"} <= set(corr["predictor"])
    assert (pairs["r10_flickr"] > 0).all() and (pairs["r10_coco"] > 0).all()
    models = t("real/models")
    assert sorted(m.decode() for m in models["paradigm"]) == sorted(
        ["supervised", "autoencoder", "contrastive", "masked_image", "language", "caption_label",
         "masked_word", "autoencoder", "language"])
    # The encoder-roles study on the 3 vision encoders, tuned jointly and frozen: 7 subsets
    # each, six benchmarks, IM through the full pool's model, and ranks. Joint training moves
    # the encoders' blocks (Δrank ≠ 0); frozen encoders keep them (Δrank = 0 exactly).
    for study in ("encoders", "encoders_frozen"):
        subsets = t(study + "/subsets")
        assert sorted(subsets["mask"].tolist()) == list(range(1, 8)), subsets["mask"]
        for b in ("fine", "coarse", "aspect", "symmetry", "ink", "brightness"):
            assert (subsets[b] > 0.2).all(), b
        for c in ("classes", "shape", "appearance", "average"):
            assert np.isfinite(subsets["im_" + c]).all(), c
        full = subsets["mask"] == 7
        assert (subsets["im_average"][full] == subsets["average"][full]).all()
        taxonomy = t(study + "/analysis/taxonomy")
        assert len(taxonomy["encoder"]) == 3 and np.isfinite(t(study + "/analysis/erank")["singleton_erank"]).all()
        claims = t(study + "/analysis/claims")
        assert set(claims["verdict"].tolist()) == {b"untested"}, claims  # one replicate: no standard error
    assert (np.abs(t("encoders/analysis/delta_rank")["delta_rank"]) > 1e-3).all()
    assert (t("encoders_frozen/analysis/delta_rank")["delta_rank"] == 0).all()
    # The merging study on real fine-tunes of mlp_sup: 3 tasks, 3 pairs merged and scored.
    runs, merges = t("real/finetune_runs"), t("merging/merges")
    assert (runs["ft_acc"] > 0.5).all(), runs["ft_acc"]
    assert len(merges["model_a"]) == 3 and np.isfinite(merges["retention"]).all()
    for k in ("acc_a", "acc_b", "ft_acc_a", "base_acc_b"):
        assert ((merges[k] >= 0) & (merges[k] <= 1)).all(), k
    # PRISM's K-way merges (K = 2, 3, every operator) and the drift merges (K = 2 at steps
    # 20, 40, 60), each scored in PyTorch; the operators' table, the drift fit and the screen.
    kway, drift = t("prism/merges"), t("prism/drift")
    methods = sorted(set(m.decode() for m in kway["method"]))
    assert methods == sorted(["task_arithmetic", "ties", "dare", "slerp", "model_stock", "prism",
                              "prism_hard", "norm_matched", "della", "breadcrumbs", "iso_c"]), methods
    assert sorted(kway["k"].tolist()) == [2] * 11 + [3] * 10, kway["k"]
    for c in ("merged_mean", "ft_mean", "base_mean", "retention", "interference", "update_pct"):
        assert np.isfinite(kway[c]).all(), c
    assert ((kway["merged_mean"] >= 0) & (kway["merged_mean"] <= 1)).all()
    assert sorted(drift["step"].tolist()) == [20, 40, 60] and (np.diff(drift["interference"][np.argsort(drift["step"])]) > 0).all(), drift
    ops = t("prism/analysis/operators")
    assert len(ops["method"]) == 11 and (ops["n"] == 2).sum() == 10, ops
    assert len(t("prism/analysis/drift")["exponent"]) >= 1 and len(t("prism/analysis/screening")["score"]) == 3
    # Correlations within the backbone; a tagged convolutional fine-tune merged by PRISM with
    # its keep floor on matrices only and on kernels too (the same merge, its own table).
    assert set(t("merging/analysis/within")["group"]) == {b"mlp/supervised"}
    cnn, kernels = t("prism/cnn"), t("prism/kernels")
    assert cnn["backbone"].tolist() == kernels["backbone"].tolist() == [b"cnn_mae_lr3e-3"]
    assert kernels["keep_fraction"][0] >= cnn["keep_fraction"][0] > 0, (cnn, kernels)
    print("real smoke: 4 vision, 3 text encoders and a language-supervised pair trained, 20 pairs aligned, 7 encoder subsets scored, "
          "3 fine-tunes merged pairwise, 21 K-way and 3 drift merges scored, 1 and 2 ranks identical, "
          "resume reran nothing")


def merge_scores_in_torch(*args):
    argv = ["-", *args]
    import json, sys, h5py
    w = argv[1]
    f = h5py.File(w + "/n2/results.h5", "r")
    m = {k: f["merging/merges"][k][:] for k in f["merging/merges"]}
    i = [j for j in range(3) if m["model_a"][j] == b"mlp_sup+fine" and m["model_b"][j] == b"mlp_sup+digits"][0]
    ours = json.load(open(w + "/merged.json"))
    assert (ours["acc_a"], ours["acc_b"]) == (m["acc_a"][i], m["acc_b"][i]), (ours, m["acc_a"][i], m["acc_b"][i])
    screen = json.load(open(w + "/screen.json"))
    assert abs(screen["interference"] - m["interference"][i]) <= 1e-9 * max(1, abs(screen["interference"])), (screen, m["interference"][i])
    print(f"compatbench merge of fine+digits scores {ours['acc_a']:.4f} / {ours['acc_b']:.4f} in PyTorch, as the study's merge; screen agrees")


def advice_as_the_study(*args):
    import json, h5py
    from checks.advise import expect_pair_as_study
    w = args[0]
    f = h5py.File(w + "/n2/results.h5", "r")
    m = {k: f["merging/merges"][k][:] for k in f["merging/merges"]}
    advice = json.load(open(w + "/advice.json"))
    rows = {tuple(sorted(a["members"])): a for a in advice["merges"]}
    assert len(rows) == 3, rows
    for i in range(len(m["model_a"])):
        key = tuple(sorted(n.decode().replace("+", "_") for n in (m["model_a"][i], m["model_b"][i])))
        expect_pair_as_study(rows[key], m, i, key)
    print(f"advise merge: the {len(m['model_a'])} pairs of the merging study screened alike")


def align_advice_as_the_study(*args):
    import csv, json, h5py
    w = args[0]
    f = h5py.File(w + "/n2/results.h5", "r")
    p = {k: f["alignment/pairs"][k][:] for k in f["alignment/pairs"]}
    advice = json.load(open(w + "/align.json"))
    rows = {(a["vision"], a["text"]): a for a in advice["pairs"]}
    assert len(rows) == len(p["vision"]) == 20, (len(rows), len(p["vision"]))
    for i in range(len(p["vision"])):
        a = rows[(p["vision"][i].decode(), p["text"][i].decode())]
        for key in ("ease", "ceiling", "score"):
            assert a[key] == p[key][i], (key, a, p[key][i])
        assert abs(a["cka"] - p["cka"][i]) <= 1e-9 * abs(p["cka"][i]), (a, p["cka"][i])
        assert a["region"] == p["region"][i].decode(), (a, p["region"][i])
    scores = [a["score"] for a in advice["pairs"]]
    assert scores == sorted(scores, reverse=True) and advice["ranked_by"] == "score"
    assert [a["first"] for a in advice["pairs"]] == [True, True] + [False] * 18
    assert len(list(csv.DictReader(open(w + "/align.csv")))) == 20
    h5 = h5py.File(w + "/align.h5", "r")["advice/align"]
    assert [v.decode() for v in h5["vision"][:]] == [a["vision"] for a in advice["pairs"]]
    assert h5["score"][:].tolist() == scores and h5["first"][:].tolist() == [1, 1] + [0] * 18
    print("advise align: the 20 pairs' ease, ceiling, score and region as the study's, CKA to 1e-9; the first 2 named")


def prism_merge_config(*args):
    argv = ["-", *args]
    import sys, h5py
    m = h5py.File(argv[1], "r")["prism/merges"]
    i = [j for j in range(len(m["k"])) if m["k"][j] == 2 and m["method"][j] == b"prism"][0]
    tasks = m["members"][i].decode().split(",")
    print(f"merge_method: prism\nbase_model: {argv[2]}/models/mlp_sup.safetensors\nmodels:")
    for t in tasks:
        print(f"  - model: {argv[2]}/finetunes/mlp_sup_{t}.safetensors")
    print("parameters: {coef: 1.0, scope: ['*']}\nout_dtype: float32")


def prism_merge_scores_in_torch(*args):
    argv = ["-", *args]
    import json, sys, h5py
    w = argv[1]
    m = h5py.File(w + "/n2/results.h5", "r")["prism/merges"]
    i = [j for j in range(len(m["k"])) if m["k"][j] == 2 and m["method"][j] == b"prism"][0]
    ours = json.load(open(w + "/prism_merged.json"))
    assert (ours["acc_1"] + ours["acc_2"]) / 2 == m["merged_mean"][i], (ours, m["merged_mean"][i])
    print(f"compatbench merge, PRISM of {m['members'][i].decode()}: merged mean {m['merged_mean'][i]:.4f} in PyTorch, as the study's")


def user_features_run(*args):
    argv = ["-", *args]
    import sys, h5py
    f = h5py.File(argv[1] + "/results.h5", "r")
    fits = {k: f["alignment/fits"][k][:] for k in f["alignment/fits"]}
    assert fits["vision"].tolist() == [b"my_cnn"] and fits["text"].tolist() == [b"bow_label"]
    assert 0 < fits["r10_flickr"][0] <= 1, fits["r10_flickr"]
    print(f"user encoder: exported by the example, aligned with bow_label (R@10 flickr {fits['r10_flickr'][0]:.3f})")


def truncated_finetune_named(*args):
    argv = ["-", *args]
    import json, sys
    status = {}
    for line in open(argv[1] + "/ledger.jsonl"):
        r = json.loads(line)
        status[r["id"]] = r["status"]
    assert status["real_checkpoints/mlp_sup+rotated"] == "failed", status
    merged = [i for i, s in status.items() if i.startswith("merges/") and s == "done"]
    assert len(merged) == 1 and "rotated" not in merged[0], status   # fine + digits only
    # K = 2 merges digits and fine: all but TIES (its script failed) done; K = 3 needs rotated
    # (skipped tasks are in results.h5, not in the ledger of finished attempts).
    import h5py
    tasks = h5py.File(argv[1] + "/results.h5", "r")["tasks"]
    kway = {i.decode(): s.decode() for i, s in zip(tasks["id"][:], tasks["status"][:])
            if i.startswith(b"prism_merges/")}
    assert len(kway) == 21 and sum("/k3/" in i for i in kway) == 10, kway
    assert all(s == "skipped" for i, s in kway.items() if "/k3/" in i), kway
    assert kway["prism_merges/mlp_sup/k2/ties/c1"] == "failed", kway
    assert all(s == "done" for i, s in kway.items() if "/k2/" in i and "/ties/" not in i), kway
    errors = [json.loads(l).get("error", "") for l in open(argv[1] + "/ledger.jsonl")]
    assert any("exit code 3" in e and "the evaluation crashed" in e for e in errors), errors


def resume_after_repair(*args):
    argv = ["-", *args]
    import sys, h5py, numpy as np
    f = h5py.File(argv[1] + "/results.h5", "r")
    assert np.isfinite(f["merging/merges/retention"][:]).all() and f["meta/status"][()] == b"complete"
    assert np.isfinite(f["prism/merges/retention"][:]).all() and len(f["prism/merges/k"]) == 21
    print("truncated fine-tune and failing evaluation script: named, their merges skipped or failed, "
          "the others merged; --resume finished the rest")


def mismatched_tensors_named(*args):
    argv = ["-", *args]
    import sys
    from compatnets.safetensors import read, save
    r, b = argv[1], argv[2]
    f = read(f"{r}/finetunes/mlp_sup_rotated.safetensors")
    name = sorted(k for k in f.tensors if not k.startswith("head."))[0]
    renamed = {("renamed." + k if k == name else k): v for k, v in f.tensors.items()}
    save(f"{b}/renamed.safetensors", renamed, metadata=f.metadata)
    reshaped = dict(f.tensors)
    reshaped[name] = f.tensors[name].reshape(-1)[:-1]
    save(f"{b}/reshaped.safetensors", reshaped, metadata=f.metadata)
    print(name)


def mismatch_run_failed(*args):
    argv = ["-", *args]
    import json, sys
    rows = {r["id"]: r for r in map(json.loads, open(argv[1] + "/ledger.jsonl"))}
    tensor = argv[2]
    assert rows["real_checkpoints/mlp_sup+fine"]["status"] == "done", rows
    renamed, reshaped = rows["real_checkpoints/mlp_sup+rotated"], rows["real_checkpoints/mlp_sup+digits"]
    assert renamed["status"] == "failed" and "renamed.safetensors: no tensor '" + tensor + "'" in renamed["error"], renamed
    assert reshaped["status"] == "failed" and "reshaped.safetensors: tensor '" + tensor + "' differs in shape" in reshaped["error"], reshaped
    print("mismatched fine-tunes: the renamed and the reshaped tensor named with their files")


def no_dataset_skips_the_rest(*args):
    argv = ["-", *args]
    import json, sys
    lines = [json.loads(l) for l in open(argv[1] + "/ledger.jsonl")]
    status = {l["id"]: l["status"] for l in lines}
    assert status["real_data"] == "failed", status
    assert all(s == "skipped" for i, s in status.items() if i != "real_data"), status
    print("missing dataset: the data task failed naming the package, the rest skipped")
