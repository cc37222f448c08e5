"""Checks of tests/e2e/lm_real.sh: the language-model library's tables, `compatbench merge`
of its specialists scored as the study's merges, and its bad-input runs."""
import json
import os

import h5py


def _table(results, name):
    g = h5py.File(results, "r")[name]
    return {k: g[k][:] for k in g}


def _ledger(out):
    status = {}
    for line in open(os.path.join(out, "ledger.jsonl")):
        r = json.loads(line)
        status[r["id"]] = r["status"]
    return status


def tables(out):
    f = os.path.join(out, "results.h5")
    corpus = json.load(open(os.path.join(out, "lm", "corpus", "corpus.json")))
    assert _table(f, "lm/corpus")["sha256"][0].decode() == corpus["sha256"]
    spec = _table(f, "lm/specialists")
    # Each specialist predicts its own domain's held-out text better than the base.
    assert len(spec["domain"]) == 8 and (spec["ppl"] < spec["base_ppl"]).all(), spec
    merges = _table(f, "lm/merges")
    methods = {m.decode() for m in merges["method"]}
    assert {"prism", "prism_hard", "task_arithmetic", "ties", "della"} == methods, methods
    assert sorted(set(merges["k"].tolist())) == [2, 4]
    drift = _table(f, "lm/drift")
    assert sorted(set(drift["step"].tolist())) == [10, 20, 40], drift["step"]
    fixed = _table(f, "lm/analysis/screening_fixed")
    assert fixed["threshold"].tolist() == [1.9e-3] and fixed["n"][0] == 28, fixed
    index = json.load(open(os.path.join(out, "lm", "specialists", "lr1e-3", "python", "model.safetensors.index.json")))
    assert len(set(index["weight_map"].values())) > 1, "the specialists are not sharded"
    print(f"language models: corpus {corpus['sha256'][:12]}, 8 specialists, {len(merges['k'])} merges by "
          f"{len(methods)} operators, drift exponent {_table(f, 'lm/analysis/drift')['exponent'][-1]:.2f}")


PAIR = (b"lr1e-3", b"english,python")  # the study's merge that `compatbench merge` redoes


def _study_row(results, table, method):
    m = _table(results, table)
    rows = [i for i in range(len(m["k"])) if (m["backbone"][i], m["members"][i]) == PAIR
            and m["method"][i] == method.encode() and m["coef"][i] == 1.0 and m["kappa"][i] in (0.0, 1.0)]
    assert len(rows) == 1, (table, method, rows)
    return m, rows[0]


def merge_configs(out, work):
    """prism.yaml and ta.yaml: the study's pair; members.txt and domains.txt. Task
    arithmetic restricted to the MLP projections as a mergekit user writes it: a weight
    of 1 where the tensor's name holds `mlp`, 0 elsewhere (normalized: the base there)."""
    results, lm = os.path.join(out, "results.h5"), os.path.join(out, "lm")
    m, i = _study_row(results, "lm/merges", "prism")
    domains = m["members"][i].decode().split(",")
    folder = os.path.join(lm, "specialists", PAIR[0].decode())
    models = "".join(f"  - model: {folder}/{d}\n" for d in domains)
    head = f"base_model: {lm}/models/base\nout_dtype: float32\nshard_mb: 0.05\n"
    with open(os.path.join(work, "prism.yaml"), "w") as f:
        f.write("merge_method: prism\n" + head + "models:\n" + models +
                "parameters: {coef: 1.0, scope: ['*gate_proj*', '*up_proj*', '*down_proj*']}\n")
    weighted = "".join(f"  - model: {folder}/{d}\n    parameters: {{weight: [{{filter: mlp, value: 1}}, {{value: 0}}]}}\n"
                       for d in domains)
    with open(os.path.join(work, "ta.yaml"), "w") as f:
        f.write("merge_method: task_arithmetic\n" + head + "models:\n" + weighted + "parameters: {normalize: true}\n")
    with open(os.path.join(work, "members.txt"), "w") as f:
        f.write(" ".join(f"{folder}/{d}" for d in domains))
    with open(os.path.join(work, "domains.txt"), "w") as f:
        f.write(" ".join(domains))


def merges_score_as_the_study(out, work):
    results = os.path.join(out, "results.h5")
    for name, table, method in (("prism", "lm/merges", "prism"), ("ta", "lm/merges", "task_arithmetic")):
        m, i = _study_row(results, table, method)
        ours = json.load(open(os.path.join(work, name + ".json")))
        mean = (ours["acc_1"] + ours["acc_2"]) / 2
        assert mean == m["merged_mean"][i], (name, ours, m["merged_mean"][i])
        print(f"compatbench merge, {method} of {m['members'][i].decode()}: merged mean {mean:.4f} "
              "in PyTorch, as the study's")


def advice_as_the_study(out, work):
    """Every task-arithmetic merge of the higher level at c = 1, as `advise merge` screened it."""
    m = _table(os.path.join(out, "results.h5"), "lm/merges")
    checked = 0
    for i in range(len(m["k"])):
        if m["method"][i] != b"task_arithmetic" or m["coef"][i] != 1.0 or m["backbone"][i] != PAIR[0]:
            continue
        members = sorted(m["members"][i].decode().split(","))
        advice = json.load(open(os.path.join(work, f"advice{int(m['k'][i])}.json")))
        row = [a for a in advice["merges"] if sorted(a["members"]) == members][0]
        for key, col in (("interference", "interference"), ("rho", "rho"), ("score", "screen_score")):
            assert abs(row[key] - m[col][i]) <= 1e-6 * abs(m[col][i]), (key, row[key], m[col][i])
        assert row["sign_conflict"] == m["sign_conflict"][i], (row, m["sign_conflict"][i])
        checked += 1
    assert checked == 7, checked
    print(f"advise merge: the {checked} merges of the study screened alike (sign conflicts exactly)")


def misplace_norm_weight(index):
    """Breaks a sharded checkpoint's INDEX (model.safetensors.index.json): model.norm.weight
    named in a shard that lacks it (the first, or the second when it is in the first)."""
    with open(index) as f:
        data = json.load(f)
    files = sorted(set(data["weight_map"].values()))
    data["weight_map"]["model.norm.weight"] = files[0] if data["weight_map"]["model.norm.weight"] != files[0] else files[1]
    with open(index, "w") as f:
        json.dump(data, f)


def _sound(merge_id):
    """Whether a merge of the study reads neither broken specialist (the higher level's c
    and english): ids are lm_merges/<level>/k<K>/[<pair>/]<method>/..."""
    parts = merge_id.split("/")
    return parts[1] != "lr1e-3" or (parts[2] == "k2" and not {"c", "english"} & set(parts[3].split("+")))


def only_sound_done(out, study):
    status = _ledger(out)
    assert status["lm_checkpoints/lr1e-3+c"] == "failed", status
    assert status["lm_checkpoints/lr1e-3+english"] == "failed", status
    done = sorted(i for i, s in status.items() if i.startswith("lm_merges/") and s == "done")
    sound = [i for i in _ledger(study) if i.startswith("lm_merges/") and _sound(i)]
    assert done == sorted(sound), (len(done), len(sound))
    print(f"broken specialists named; the {len(done)} merges without them finished")


def resumed_as_the_study(out, study):
    ours, theirs = _table(os.path.join(out, "results.h5"), "lm/merges"), _table(os.path.join(study, "results.h5"), "lm/merges")
    key = lambda t: {(t["backbone"][i], t["members"][i], t["method"][i], t["coef"][i], t["kappa"][i]):  # noqa: E731
                     t["merged_mean"][i] for i in range(len(t["k"]))}
    assert key(ours) == key(theirs), "the repaired, resumed merges differ from the study's"
    print(f"repaired and resumed: all {len(ours['k'])} merges as the study's")
