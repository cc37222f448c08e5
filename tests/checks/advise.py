"""Checks of tests/e2e/advise.sh: `compatbench advise merge` against numpy (methods.md §3.1)."""
import csv
import fnmatch
import itertools
import json
import math
import os
import shutil

import numpy as np

from compatnets.safetensors import load, save


def _task_vectors(d, scope, with_base=False):
    base = load(d + "/base.safetensors")
    names = sorted(n for n in base if any(fnmatch.fnmatchcase(n, p) for p in scope))
    models = [load(d + "/ft0.safetensors"), load(d + "/ft1")] + [load(f"{d}/ft{i}.safetensors") for i in range(2, 8)]
    # τ in float32 per coordinate, as the study's kernel.
    taus = [np.concatenate([(m[n].astype(np.float32) - base[n].astype(np.float32)).ravel() for n in names])
            for m in models]
    if not with_base:
        return taus
    return taus, np.concatenate([base[n].astype(np.float64).ravel() for n in names])


def _relative_norms(advice, taus, base, other=None):
    """Each fine-tune's ‖τ‖ / ‖θ0‖ (methods.md §3.4) as numpy gives it, and as another run's."""
    want = [np.linalg.norm(t.astype(np.float64)) / np.linalg.norm(base) for t in taus]
    got = advice["relative_norm"]
    assert len(got) == len(advice["models"]) == len(want), got
    for g, w in zip(got, want):
        assert abs(g - w) <= 1e-9 * w, (got, want)
    if other is not None:
        assert all(abs(a - b) <= 1e-12 * a for a, b in zip(got, other["relative_norm"])), (got, other)


def _expected(taus, subset, coef):
    t = np.stack([taus[i].astype(np.float64) for i in subset])
    k = len(subset)
    interference = (t ** 2).mean(0) - t.mean(0) ** 2
    dispersion = (t ** 2).mean(0) - np.abs(t).mean(0) ** 2
    conflict = ((t > 0).any(0) & (t < 0).any(0)).mean()
    i_mean = interference.mean()
    return {"interference": i_mean, "rho": 1 - dispersion.sum() / interference.sum(),
            "sign_conflict": conflict, "score": coef * math.sqrt(i_mean / k)}


def _check(advice, taus, coef):
    names = advice["models"]
    assert advice["merges"], advice
    scores = [m["score"] for m in advice["merges"]]
    assert scores == sorted(scores), "not ranked lowest score first"
    for m in advice["merges"]:
        subset = [names.index(n) for n in m["members"]]
        want = _expected(taus, subset, coef)
        for key in ("interference", "rho", "score"):
            assert abs(m[key] - want[key]) <= 1e-6 * abs(want[key]) + 1e-12, (m, key, want)
        assert m["sign_conflict"] == want["sign_conflict"], (m, want)
        assert m["operator"] == ("prism" if m["score"] > advice["threshold"] else "mean"), m
    return len(advice["merges"])


def merges_as_numpy(work):
    k2, k3 = (json.load(open(f"{work}/{n}.json")) for n in ("k2", "k3"))
    taus, base = _task_vectors(work + "/llm", ["*"], with_base=True)
    n2 = _check(k2, taus, 1.0)
    _relative_norms(k2, taus, base)
    taus, base = _task_vectors(work + "/llm", ["*mlp*"], with_base=True)
    n3 = _check(k3, taus, 0.5)
    assert (n2, n3) == (28, 56), (n2, n3)
    one = json.load(open(f"{work}/k3_n1.json"))
    _relative_norms(k3, taus, base, other=one)  # 2 ranks (k3) against 1
    for a, b in zip(one["merges"], k3["merges"]):
        assert a["members"] == b["members"] and a["sign_conflict"] == b["sign_conflict"], (a, b)
        assert abs(a["interference"] - b["interference"]) <= 1e-12 * a["interference"], (a, b)
    screen = json.load(open(f"{work}/screen.json"))
    pair = [m for m in k2["merges"] if sorted(m["members"]) == ["ft1", "ft4"]][0]
    for key in ("interference", "rho", "score"):
        assert abs(pair[key] - screen[key]) <= 1e-6 * abs(screen[key]), (pair, screen)
    rows = list(csv.DictReader(open(f"{work}/k2.csv")))
    assert len(rows) == 28 and rows[0]["members"] == ", ".join(k2["merges"][0]["members"]), rows[0]
    flagged = sum(m["flagged"] for m in k2["merges"])
    print(f"advise merge: 28 pairs and 56 triples as numpy (sign conflicts exactly), as screen; "
          f"{flagged} of 28 pairs flagged at 5e-3")


def bad_inputs(d):
    t = load(d + "/ft0.safetensors")
    save(d + "/f8.safetensors", {n: v for n, v in t.items()})
    data = open(d + "/f8.safetensors", "rb").read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    header["model.norm.weight"]["dtype"] = "F8_E4M3"
    size = int(np.prod(header["model.norm.weight"]["shape"]))
    begin = header["model.norm.weight"]["data_offsets"][0]
    header["model.norm.weight"]["data_offsets"][1] = begin + size  # one byte per value
    text = json.dumps(header).encode()
    # Keep the other tensors' offsets valid: F8 needs fewer bytes, the rest stay in place.
    open(d + "/f8.safetensors", "wb").write(len(text).to_bytes(8, "little") + text + data[8 + n:])
    # A model of the same shape trained apart from the base: an independent draw at each
    # tensor's scale (about √2 of the base's norm away).
    rng = np.random.default_rng(7)
    base = load(d + "/base.safetensors")
    save(d + "/far.safetensors", {n: (rng.standard_normal(v.shape) * v.astype(np.float64).std()
                                      + v.astype(np.float64).mean()).astype(np.float32)
                                  for n, v in base.items()})
    for name in ("hf_base", "hf_ft", "other"):
        os.makedirs(f"{d}/{name}", exist_ok=True)
        shutil.copy(d + ("/base.safetensors" if name == "hf_base" else "/ft0.safetensors"),
                    f"{d}/{name}/model.safetensors")
        json.dump({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 96 if name == "other" else 64,
                   "vocab_size": 512}, open(f"{d}/{name}/config.json", "w"))


def expect_pair_as_study(row, merges, i, where):
    """One pair of the advice (a JSON row) against row i of a study's merging/merges table:
    interference, ρ and score to 1e-6 relative, sign conflict exactly."""
    for col, got in (("interference", "interference"), ("rho", "rho"), ("screen_score", "score")):
        assert abs(row[got] - merges[col][i]) <= 1e-6 * abs(merges[col][i]), (where, col, row[got], merges[col][i])
    assert row["sign_conflict"] == merges["sign_conflict"][i], (where, row, merges["sign_conflict"][i])


def report_section(run, pairs):
    """The report's "Advice before merging" section: the advice files it kept in report/advice/
    (members named by their file stems) hold every pair of the merging study, and the counts it prints at the paper's threshold
    are recounted here from those files and the study's destructive column."""
    import re
    import h5py
    m = h5py.File(run + "/results.h5", "r")["merging/merges"]
    key = lambda names: frozenset(n.replace("+", "_") for n in names)  # noqa: E731  (file stems)
    study = {key((a.decode(), b.decode())): bool(d)
             for a, b, d in zip(m["model_a"][:], m["model_b"][:], m["destructive"][:])}
    assert len(study) == int(pairs), (len(study), pairs)
    study_score = {key((a.decode(), b.decode())): s
                   for a, b, s in zip(m["model_a"][:], m["model_b"][:], m["screen_score"][:])}
    scores = {}
    for name in os.listdir(run + "/report/advice"):
        for r in json.load(open(f"{run}/report/advice/{name}"))["merges"]:
            scores[key(r["members"])] = r["score"]
    assert set(study) <= set(scores), set(study) - set(scores)
    worst = max(abs(scores[k] - study_score[k]) / study_score[k] for k in study)
    assert worst <= 1e-6, worst  # the advice's scores are the study's
    d = [k for k in study if study[k]]
    caught = sum(scores[k] > 1.9e-3 for k in d)
    false = sum(scores[k] > 1.9e-3 for k in study if not study[k])
    page = open(run + "/report/index.html").read()
    want = (f"{len(study)} pairs advised by <code>compatbench advise merge</code>",
            f"{caught} of {len(d)} destructive merges flagged, {false} of {len(study) - len(d)} "
            "harmless ones flagged")
    for w in want:
        assert w in page, (w, re.findall(r"<li>[^<]*pairs advised[^\n]*", page))
    shown = float(re.search(r"equal the study's to ([0-9.e+-]+) \(relative\)", page).group(1))
    assert shown <= 1e-6 and abs(shown - worst) <= 0.06 * worst + 1e-300, (shown, worst)
    print(f"report: the advice on {len(study)} studied pairs, scores as the study's to {worst:.1e}, "
          f"{caught} of {len(d)} destructive and {false} harmless flagged at the paper's threshold, "
          "as recounted")
