"""The language-model library: a Llama-architecture base pretrained on a mixture of the
corpus's domains, specialists that continue its pretraining on one domain each, and the
evaluation of merged checkpoints.

    python3 -m compatnets.lm pretrain --corpus CORPUS --out BASE [--hidden 192 --layers 6
            --heads 4 --intermediate 512 --steps 1200 --batch 16 --lr 1e-3 --seed 1
            --shard-mb 4] [--result FILE]
    python3 -m compatnets.lm specialize --base BASE --domain D --corpus CORPUS --out DIR
            --features DIR [--steps 400 --save-steps 25,50,100,200 --batch 16 --lr 1e-3
            --seed 1 --shard-mb 4 --name llama+D] [--result FILE]
    python3 -m compatnets.lm evaluate --checkpoint MERGED --base BASE --finetuned A B [...]
            --tasks D_A D_B [...] --corpus CORPUS --out FILE

Tokens are bytes; a batch is `batch` windows of the corpus's context + 1 bytes drawn at
random (seeded) from the training text: for `pretrain` each window from a domain drawn
uniformly, for `specialize` from its domain only. AdamW (β 0.9/0.95, weight decay 0.1),
linear warm-up over the first 5% of steps, then cosine decay to a tenth (`pretrain`) or a
constant rate (`specialize`, continued pretraining).

Every saved model is scored on every domain's held-out text (`eval_windows` windows of
context + 1 bytes spread evenly over <domain>.heldout, each inside one block; next-token
accuracy over the context positions, and perplexity, e^(mean cross-entropy)) and by
generation (the corpus's generation windows: `gen_prompt` bytes before a held-out line
starts, continued greedily for `gen_bytes` bytes; gen is the share continued exactly); the
scores go to eval.json beside the checkpoint ({"corpus_sha256", "base", "steps", "tokens",
"domains": {d: {"acc", "ppl", "gen", "win", "gen_win"}}}, win and gen_win per window).
`pretrain` also writes loss_curve.json (each tenth of the steps: its mean training loss and
the held-out loss after it); FILE then holds heldout_1..heldout_10 and last_tenth_gain, the
held-out loss's relative fall over the last tenth.
`specialize` writes DIR/<domain>/ and DIR/<domain>@<steps>/ for each saved step, and the
specialist's probe features (the mean final hidden state over each of `probe_windows`
windows of context bytes spread alike over every domain's training text) to
<features>/<name>/probe.safetensors. The learning rate warms up linearly over the first 5%
of the steps and then stays: a specialist never runs above its own `--lr`. FILE: acc and ppl on the own domain, the same
for the base, the mean accuracy and cross-entropy on the other domains (beside the base's),
gen on the own domain, ‖τ‖/‖θ0‖ over the matrices (rel_norm) and over the MLP projections
(rel_norm_mlp), the learning rate, tokens and steps.

`evaluate` scores the merged tensors (a folder of safetensors, no config: the base's
config.json is used) on every domain, beside the members and the base (their eval.json
when it was taken on this corpus against this base, else computed), and writes acc_i,
ft_acc_i, base_acc_i, ppl_i for i = 1..K (what compatbench's kway_merge reads), then
diff_se (the paired standard error of the merge's mean accuracy over its members' domains
against the base's, over their windows), all_acc and base_all_acc (every domain), gen,
base_gen, ft_gen (the members' domains) and all_gen, base_all_gen (every domain). Every
member's config.json must agree with the base's, and every corpus file with corpus.json.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

from .jobs import deterministic, finish  # first: exits with a message without PyTorch
import torch  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from . import llama  # noqa: E402
from .corpus import Corpus, generation_starts, window_starts  # noqa: E402
from .safetensors import SafetensorsError, save as save_file  # noqa: E402


def open_corpus(folder):
    """The corpus, refused at once (before any training) when it lacks the generation
    settings every model is scored with."""
    corpus = Corpus(folder)
    if "gen_windows" not in corpus.info:
        raise ValueError(f"{folder}/corpus.json: no generation settings (a corpus built before "
                         "they existed: build it again)")
    return corpus


def windows(corpus, domain, part, n, length):
    """n windows of `length` bytes evenly spread over a domain's part, each inside one of
    the corpus's blocks, as a (n, length) int64 tensor."""
    data = corpus.part(domain, part)
    arr = np.frombuffer(data, np.uint8)
    starts = window_starts(len(data), corpus.info["block"], length, n)
    return torch.from_numpy(np.stack([arr[s:s + length] for s in starts]).astype(np.int64))


def heldout(corpus, domain):
    """The evaluation windows of a domain's held-out text: `eval_windows` of context + 1."""
    return windows(corpus, domain, "heldout", corpus.info["eval_windows"], corpus.context + 1)


def generation(corpus, domain):
    """The generation windows of a domain's held-out text: (prompts (n, gen_prompt), the
    bytes that follow (n, gen_bytes)), as int64 tensors (corpus.generation_starts)."""
    info = corpus.info
    data = corpus.part(domain, "heldout")
    arr = np.frombuffer(data, np.uint8).astype(np.int64)
    p, n = info["gen_prompt"], info["gen_bytes"]
    starts = generation_starts(data, info["block"], p, n, info["gen_windows"])
    return (torch.from_numpy(np.stack([arr[s - p:s] for s in starts])),
            torch.from_numpy(np.stack([arr[s:s + n] for s in starts])))


@torch.no_grad()
def window_scores(model, ids, batch=16):
    """Per window of `ids`: (next-token accuracy, summed cross-entropy), as arrays."""
    model.eval()
    acc, nll = [], []
    for i in range(0, len(ids), batch):
        x = ids[i:i + batch]
        logits = model(x[:, :-1])
        y = x[:, 1:]
        acc.append((logits.argmax(-1) == y).double().mean(1).numpy())
        nll.append(F.cross_entropy(logits.transpose(1, 2), y, reduction="none").double().sum(1).numpy())
    model.train()
    return np.concatenate(acc), np.concatenate(nll)


def perplexity(nll, ids):
    """e^(mean cross-entropy) over the predicted tokens of windows `ids`, from their summed nll."""
    return math.exp(float(nll.sum()) / (len(ids) * (ids.shape[1] - 1)))


def score(model, ids, batch=16):
    """(next-token accuracy, perplexity) of `model` on windows `ids`."""
    acc, nll = window_scores(model, ids, batch)
    return float(acc.mean()), perplexity(nll, ids)


@torch.no_grad()
def greedy(model, prompts, length):
    """`length` tokens continuing each prompt, each the most likely after the ones before
    (keys and values of earlier positions cached)."""
    model.eval()
    past, out = [], []
    nxt = model(prompts, past)[:, -1].argmax(-1, keepdim=True)
    for _ in range(length - 1):  # the last token needs no forward pass after it
        out.append(nxt)
        nxt = model(nxt, past)[:, -1].argmax(-1, keepdim=True)
    out.append(nxt)
    model.train()
    return torch.cat(out, 1)


def domain_scores(model, corpus, domain):
    """A model on a domain's held-out text: accuracy and perplexity over the evaluation
    windows, the share of generation windows continued exactly (gen), and per window the
    accuracy (win) and exact continuation (gen_win), which paired comparisons read."""
    ids = heldout(corpus, domain)
    acc, nll = window_scores(model, ids)
    prompts, target = generation(corpus, domain)
    exact = (greedy(model, prompts, target.shape[1]) == target).all(1).double().numpy()
    return {"acc": float(acc.mean()), "ppl": perplexity(nll, ids),
            "gen": float(exact.mean()), "win": acc.tolist(), "gen_win": exact.tolist()}


def score_all(model, corpus, domains=None):
    return {d: domain_scores(model, corpus, d) for d in (domains or corpus.domains())}


class Sampler:
    """Random training windows of one domain or of the mixture, from a seeded generator."""

    def __init__(self, corpus, domains, batch, g):
        self.parts = [np.frombuffer(corpus.part(d, "train"), np.uint8) for d in domains]
        self.length, self.batch, self.g = corpus.context + 1, batch, g
        for d, part in zip(domains, self.parts):
            if len(part) < self.length:
                raise ValueError(f"domain '{d}': {len(part)} training bytes, fewer than a window of {self.length}")

    def __call__(self):
        which = torch.randint(0, len(self.parts), (self.batch,), generator=self.g)
        rows = []
        for w in which.tolist():
            part = self.parts[w]
            s = int(torch.randint(0, len(part) - self.length + 1, (1,), generator=self.g))
            rows.append(part[s:s + self.length])
        return torch.from_numpy(np.stack(rows).astype(np.int64))


def train(model, sample, steps, lr, decay, on_step=None):
    """AdamW on next-token cross-entropy; returns the last loss. `decay`: cosine to lr/10
    after the warm-up, else constant. on_step(step, loss) after each step."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    warm = max(1, steps // 20)
    loss = None
    for step in range(1, steps + 1):
        frac = (step - warm) / max(1, steps - warm)
        rate = lr * (step / warm if step <= warm else (0.1 + 0.45 * (1 + math.cos(math.pi * frac)) if decay else 1.0))
        for group in opt.param_groups:
            group["lr"] = rate
        x = sample()
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if on_step:
            on_step(step, float(loss))
    return float(loss)


def save_scored(model, folder, corpus, shard_mb, **facts):
    """The checkpoint, then its scores on every domain (eval.json)."""
    llama.save(folder, model, shard_bytes=int(shard_mb * (1 << 20)))
    scores = score_all(model, corpus)
    with open(os.path.join(folder, "eval.json"), "w") as f:
        json.dump(dict(facts, corpus_sha256=corpus.sha256, domains=scores), f, indent=1)
    return scores


def heldout_loss(model, corpus):
    """Mean cross-entropy (nats a byte) over every domain's evaluation windows."""
    return float(np.mean([math.log(score(model, heldout(corpus, d))[1]) for d in corpus.domains()]))


def pretrain(a):
    g = deterministic(a.seed)
    corpus = open_corpus(a.corpus)
    cfg = llama.Config(hidden_size=a.hidden, intermediate_size=a.intermediate, num_hidden_layers=a.layers,
                       num_attention_heads=a.heads, max_position_embeddings=corpus.context)
    model = llama.Llama(cfg)
    tenths = [max(1, round(a.steps * i / 10)) for i in range(1, 11)]  # a step may end several
    curve = {"step": [], "train_loss": [], "heldout_loss": []}
    losses = []

    def on_step(step, loss):  # the loss curve: each tenth's mean training loss, then held-out
        losses.append(loss)
        for _ in range(tenths.count(step)):
            curve["step"].append(step)
            curve["train_loss"].append(float(np.mean(losses)))
            curve["heldout_loss"].append(heldout_loss(model, corpus))
        if step in tenths:
            losses.clear()

    loss = train(model, Sampler(corpus, corpus.domains(), a.batch, g), a.steps, a.lr, decay=True,
                 on_step=on_step)
    tokens = a.steps * a.batch * corpus.context
    scores = save_scored(model, a.out, corpus, a.shard_mb, base=None, steps=a.steps, tokens=tokens)
    with open(os.path.join(a.out, "loss_curve.json"), "w") as f:
        json.dump(curve, f, indent=1)
    held = curve["heldout_loss"]
    return {"params": sum(p.numel() for p in model.parameters()), "final_loss": loss,
            "acc_mean": float(np.mean([s["acc"] for s in scores.values()])),
            "ppl_mean": float(np.mean([s["ppl"] for s in scores.values()])),
            "gen_mean": float(np.mean([s["gen"] for s in scores.values()])), "tokens": tokens,
            **{f"heldout_{i}": v for i, v in enumerate(held, 1)},
            "last_tenth_gain": (held[-2] - held[-1]) / held[-2] if len(held) > 1 else float("nan")}


def relative_norms(model, base):
    """‖τ‖/‖θ0‖ of a model against its base, over its matrices (the tensors of two or more
    dimensions: the norms' weights, near 1 and barely moved, would otherwise dominate ‖θ0‖)
    and over the MLP projections."""
    theta, theta0 = model.tensors(), base.tensors()
    out = {}
    for key, keep in (("rel_norm", lambda n: theta0[n].ndim >= 2), ("rel_norm_mlp", lambda n: ".mlp." in n)):
        names = [n for n in theta0 if keep(n)]
        tau = sum(float(np.sum((theta[n].astype(np.float64) - theta0[n]) ** 2)) for n in names)
        out[key] = math.sqrt(tau / sum(float(np.sum(theta0[n].astype(np.float64) ** 2)) for n in names))
    return out


@torch.no_grad()
def probe_features(model, corpus):
    """The mean final hidden state of each probe window, every domain in corpus order."""
    model.eval()
    n, length = corpus.info["probe_windows"], corpus.context
    rows = [model.hidden(windows(corpus, d, "train", n, length)).mean(1) for d in corpus.domains()]
    model.train()
    return torch.cat(rows).numpy().astype(np.float32)


def specialize(a):
    g = deterministic(a.seed)
    corpus = open_corpus(a.corpus)
    if a.domain not in corpus.domains():
        raise ValueError(f"unknown domain '{a.domain}' (one of {', '.join(corpus.domains())})")
    model = llama.load(a.base)
    base_scores = _scores_of(a.base, corpus, None) or score_all(model, corpus)
    per_step = a.batch * corpus.context
    try:
        saves = {int(s) for s in a.save_steps.split(",") if s}
    except ValueError:
        raise ValueError(f"--save-steps {a.save_steps!r}: not a comma-separated list of steps") from None
    if any(not 0 < s <= a.steps for s in saves):
        raise ValueError(f"--save-steps {a.save_steps}: each must be between 1 and --steps {a.steps}")
    base = os.path.realpath(a.base)

    def saved(step, folder):
        return save_scored(model, folder, corpus, a.shard_mb, base=base, domain=a.domain,
                           steps=step, tokens=step * per_step)

    def on_step(step, _loss):
        if step in saves and step < a.steps:
            saved(step, os.path.join(a.out, f"{a.domain}@{step}"))

    train(model, Sampler(corpus, [a.domain], a.batch, g), a.steps, a.lr, decay=False, on_step=on_step)
    scores = saved(a.steps, os.path.join(a.out, a.domain))
    folder = os.path.join(a.features, a.name or f"llama+{a.domain}")
    os.makedirs(folder, exist_ok=True)
    save_file(os.path.join(folder, "probe.safetensors"), {"features": probe_features(model, corpus)})
    others = [d for d in scores if d != a.domain]
    other = lambda sc, key, f=float: float(np.mean([f(sc[d][key]) for d in others]))  # noqa: E731
    return {"acc": scores[a.domain]["acc"], "ppl": scores[a.domain]["ppl"],
            "base_acc": base_scores[a.domain]["acc"], "base_ppl": base_scores[a.domain]["ppl"],
            "acc_other": other(scores, "acc"), "base_acc_other": other(base_scores, "acc"),
            "loss_other": other(scores, "ppl", math.log), "base_loss_other": other(base_scores, "ppl", math.log),
            "gen": scores[a.domain]["gen"], "base_gen": base_scores[a.domain]["gen"],
            **relative_norms(model, llama.load(a.base)), "lr": a.lr,
            "tokens": a.steps * per_step, "steps": a.steps}


def _scores_of(folder, corpus, base):
    """A checkpoint's eval.json scores when taken on this corpus (and against `base`, when
    given), else None."""
    try:  # a cache: unreadable or from elsewhere, it is recomputed
        with open(os.path.join(folder, "eval.json")) as f:
            known = json.load(f)
        if known.get("corpus_sha256") != corpus.sha256:
            return None
        if base is not None and known.get("base") != os.path.realpath(base):
            return None
        return {d: {"acc": float(v["acc"]), "ppl": float(v["ppl"]), "gen": float(v["gen"]),
                    "win": [float(x) for x in v["win"]], "gen_win": [float(x) for x in v["gen_win"]]}
                for d, v in known["domains"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def evaluate(a):
    deterministic(0)  # one thread, deterministic kernels (nothing here draws at random)
    if len(a.finetuned) != len(a.tasks):
        raise ValueError(f"{len(a.finetuned)} specialists but {len(a.tasks)} domains")
    corpus = open_corpus(a.corpus)
    merged = llama.load(a.base, tensors_from=a.checkpoint)
    base_scores = _scores_of(a.base, corpus, None) or score_all(llama.load(a.base), corpus)
    mine = score_all(merged, corpus)
    out, own_gen = {}, []
    for i, (ft, domain) in enumerate(zip(a.finetuned, a.tasks), 1):
        own = _scores_of(ft, corpus, a.base)
        if own is None or domain not in own:
            own = score_all(llama.load(ft, like=a.base), corpus, [domain])
        else:
            llama.Config.read(a.base).check_same(llama.Config.read(ft), a.base, ft)
        own_gen.append(own[domain]["gen"])
        out.update({f"acc_{i}": mine[domain]["acc"], f"ppl_{i}": mine[domain]["ppl"],
                    f"ft_acc_{i}": own[domain]["acc"], f"base_acc_{i}": base_scores[domain]["acc"]})
    return dict(out, **merge_facts(mine, base_scores, a.tasks), ft_gen=float(np.mean(own_gen)))


def merge_facts(mine, base, members):
    """What a merge's row adds to its members' accuracies: the paired standard error of its
    mean accuracy over the members' domains against the base's (over their held-out
    windows); the mean accuracy over every domain; the exact greedy continuations on the
    members' domains and on every domain; each beside the base's."""
    diff = np.concatenate([np.subtract(mine[d]["win"], base[d]["win"]) for d in members])
    mean = lambda sc, key, ds: float(np.mean([sc[d][key] for d in ds]))  # noqa: E731
    every = list(mine)
    return {"diff_se": float(diff.std(ddof=1) / math.sqrt(len(diff))),
            "all_acc": mean(mine, "acc", every), "base_all_acc": mean(base, "acc", every),
            "gen": mean(mine, "gen", members), "base_gen": mean(base, "gen", members),
            "all_gen": mean(mine, "gen", every), "base_all_gen": mean(base, "gen", every)}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    verbs = {"pretrain": pretrain, "specialize": specialize, "evaluate": evaluate}
    if not argv or argv[0] not in verbs:
        print(f"usage: python3 -m compatnets.lm {{{','.join(verbs)}}} ... (see --help)", file=sys.stderr)
        return 2
    job = verbs[argv[0]]
    p = argparse.ArgumentParser(prog=f"python3 -m compatnets.lm {argv[0]}", description=__doc__.split("\n")[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True)
    if job is evaluate:
        p.add_argument("--checkpoint", required=True)
        p.add_argument("--base", required=True)
        p.add_argument("--finetuned", nargs="+", required=True)
        p.add_argument("--tasks", nargs="+", required=True)
    else:
        for name, default in (("steps", 1200 if job is pretrain else 400), ("batch", 16), ("seed", 1)):
            p.add_argument("--" + name, type=int, default=default)
        p.add_argument("--lr", type=float, default=1e-3)
        p.add_argument("--shard-mb", type=float, default=4.0)
        p.add_argument("--result")
    if job is pretrain:
        for name, default in (("hidden", 192), ("layers", 6), ("heads", 4), ("intermediate", 512)):
            p.add_argument("--" + name, type=int, default=default)
    if job is specialize:
        for name in ("base", "domain", "features"):
            p.add_argument("--" + name, required=True)
        p.add_argument("--save-steps", default="")
        p.add_argument("--name", help="the specialist's name: its features go to <features>/<name>/ "
                       "(default llama+<domain>)")
    a = p.parse_args(argv[1:])
    return finish(job, a, a.out if job is evaluate else a.result,
                  errors=(ValueError, OSError, KeyError, SafetensorsError))


if __name__ == "__main__":
    sys.exit(main())
