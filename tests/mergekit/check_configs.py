#!/usr/bin/python3
"""`compatbench merge` on mergekit configurations, against references of mergekit in numpy
(float64) and in torch (in the dtype).

    PYTHONPATH=python /usr/bin/python3 tests/mergekit/check_configs.py BIN WORKDIR [--only NAME]...

Writes the tiny Llama checkpoints of make_models.py under WORKDIR/models, then for every
fixture (fixtures/examples: mergekit's examples; fixtures/tests: the configurations of
mergekit's tests/test_basic_merges.py; fixtures/extra: compatbench's own) writes a copy
whose model names are the local folders (mergekit's hub ids map to the local models through
HUB_MODELS) and runs `BIN merge COPY --out OUT` (a plain process, no mpirun):

  - a supported fixture, merged with `--arithmetic exact`, exits 0 and every output tensor
    lies within one unit in the last place of its dtype of reference.py's value rounded to
    that dtype; the same config with `dtype: float32` (and `out_dtype: float32` where it has
    one) gives the same tensor names and shapes, all F32, with max |out - ref| <= 1e-6 *
    max |ref| per tensor; the output folder has config.json (num_hidden_layers and
    torch_dtype as mergekit writes them), and generation_config.json and the tokenizer
    files of the donor (base_model, or the first model) byte for byte;
  - merged again with the default arithmetic, as given and with `dtype: float32`, every
    tensor equals torch_reference.py's (mergekit's kernels run by torch in the dtype) as
    dtype_check.py states: bit for bit for the methods computed operation by operation in
    bfloat16 and float16, outside the coordinates torch's tie order decides;
  - a refused fixture exits 2 with the expected word (the method or key name, as a whole
    word) in stderr, and creates no output folder.

The reference itself must agree on which fixtures are refused and why, and passes its own
hand-worked checks (test_reference.py) first. One line per fixture, PASS or FAIL; the exit
code is 1 when anything failed. `--only NAME` (repeatable) runs the fixtures named NAME or
GROUP/NAME; `--jobs N` checks N fixtures at once (default: one per core).
"""
import argparse
import glob
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import unittest
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import yaml

import dtype_check
import reference
import torch_reference
from make_models import MODEL_NAMES, write_models
from compatnets.safetensors import SafetensorsError, read, shard_files

HERE = os.path.dirname(os.path.abspath(__file__))

# mergekit's example hub ids -> the local stand-ins. A fine-tuning base (the models' common
# ancestor) maps to `base`; every other model to model_a, model_b or model_c.
HUB_MODELS = {
    "psmathur/orca_mini_v3_13b": "model_a",
    "garage-bAInd/Platypus2-13B": "model_b",
    "WizardLM/WizardLM-13B-V1.2": "model_c",
    "WizardLM/WizardMath-13B-V1.0": "model_c",
    "mistralai/Mistral-7B-Instruct-v0.2": "model_a",
    "BioMistral/BioMistral-7B": "model_b",
    "TheBloke/Llama-2-13B-fp16": "base",
    "mistralai/Mistral-7B-v0.1": "base",
}
# Refused merge methods: the word stderr must name. None today: every method reference.py
# re-implements is enabled there (reference.ENABLED_NEW_METHODS).
REFUSED_METHODS = set()
# Fixtures refused for a key of a supported method: GROUP/NAME -> the word.
REFUSED_FIXTURES = {
    "tests/test_della_invalid_epsilon": "epsilon",
    "extra/della_epsilon_gradient": "epsilon",
    "extra/linear_base_without_weight": "weight",
    "extra/slerp_two_models_and_base": "slerp",
    "extra/chat_template_refused": "chat_template",
    "extra/tokenizer_refused": "tokenizer",
    "extra/dtype_int64_refused": "dtype",
    "extra/arcee_fusion_two_models_refused": "arcee_fusion",
    "extra/ram_without_base_refused": "base_model",
}
GROUPS = ("examples", "tests", "extra")
COPIED_FILES = ("generation_config.json", "tokenizer.json", "tokenizer_config.json",
                "special_tokens_map.json")
RUN_TIMEOUT = 300
# Significand bits (with the implicit one) and smallest subnormal exponent per dtype.
PRECISION = {"BF16": (8, -133), "F16": (11, -24), "F32": (24, -149)}
MODEL_LINE = re.compile(r"^(\s*(?:-\s+)?(?:model|base_model):\s*)([^\s#]+)(.*)$")
DTYPE_LINE = re.compile(r"^(\s*(?:out_)?dtype:\s*)([^\s#]+)(.*)$")


class Failure(Exception):
    pass


# ---------------------------------------------------------------- fixtures

def fixtures(only):
    out = []
    for group in GROUPS:
        for path in sorted(glob.glob(os.path.join(HERE, "fixtures", group, "*.yml"))):
            name = os.path.splitext(os.path.basename(path))[0]
            if not only or name in only or f"{group}/{name}" in only:
                out.append((f"{group}/{name}", path))
    return out


def expected_refusal(key, config):
    if key in REFUSED_FIXTURES:
        return REFUSED_FIXTURES[key]
    method = config.get("merge_method")
    return method if method in REFUSED_METHODS else None


def local_name(name):
    name = HUB_MODELS.get(name, name)
    if name not in MODEL_NAMES:
        raise Failure(f"fixture names an unknown model {name!r}")
    return name


def localized(text, paths, float32=False):
    """The fixture's text with every `model:`/`base_model:` value the local folder (as a
    double-quoted YAML string); with float32, every dtype/out_dtype line says float32 (and
    a `dtype: float32` line is added when there is none)."""
    lines, has_dtype = [], False
    for line in text.splitlines():
        m = MODEL_LINE.match(line)
        if m:
            line = m.group(1) + json.dumps(paths[local_name(m.group(2))]) + m.group(3)
        m = DTYPE_LINE.match(line)
        if m and float32:
            line, has_dtype = m.group(1) + "float32" + m.group(3), True
        lines.append(line)
    if float32 and not has_dtype:
        lines.append("dtype: float32")
    return "\n".join(lines) + "\n"


def check_localized(copy_text, config, paths, float32):
    """The rewritten copy parses to the fixture with local paths (guards the text edits)."""
    def walk(node):
        if isinstance(node, dict):
            return {k: (paths[local_name(v)] if k in ("model", "base_model") else walk(v))
                    for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node
    want = walk(config)
    if float32:
        want["dtype"] = "float32"
        if "out_dtype" in want:
            want["out_dtype"] = "float32"
    if yaml.safe_load(copy_text) != want:
        raise Failure("the rewritten copy does not parse to the fixture (check_configs bug)")


# ---------------------------------------------------------------- running

def run_merge(binary, config_path, out, *options):
    try:
        p = subprocess.run([binary, "merge", config_path, "--out", out, *options],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Failure(f"`merge {os.path.basename(config_path)}` took over {RUN_TIMEOUT} s")
    return p.returncode, p.stdout, p.stderr


def last_line(text):
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1][:300] if lines else "(nothing)"


def read_output(out):
    tensors, dtypes = {}, {}
    try:
        for f in shard_files(out):
            r = read(f)
            tensors.update({n: t.astype(np.float64) for n, t in r.tensors.items()})
            dtypes.update(r.dtypes)
    except (OSError, SafetensorsError) as e:
        raise Failure(f"output unreadable: {e}")
    return tensors, dtypes


# ---------------------------------------------------------------- comparing

def round_to(x, dtype):
    """float64 values rounded to the nearest (ties to even) value of `dtype`, as float64."""
    bits, min_exp = PRECISION[dtype]
    _, e = np.frexp(x)                          # |x| = m 2^e, 1/2 <= m < 1
    q = np.maximum(e - bits, min_exp)           # the spacing there: 2^q
    return np.ldexp(np.rint(np.ldexp(x, -q)), q)


def ulp(x, dtype):
    """The spacing of `dtype` at |x| (the distance to the next larger magnitude)."""
    bits, min_exp = PRECISION[dtype]
    _, e = np.frexp(np.abs(x))
    e = np.where(x == 0, min_exp + bits, e)     # zero: the smallest subnormal spacing
    return np.ldexp(1.0, np.maximum(e - bits, min_exp))


def compare_names(got, got_dtypes, ref, want_dtypes):
    missing, extra = sorted(set(ref) - set(got)), sorted(set(got) - set(ref))
    if missing or extra:
        raise Failure(f"tensor names differ: {len(missing)} missing (e.g. {missing[:3]}), "
                      f"{len(extra)} unexpected (e.g. {extra[:3]})")
    for name in ref:
        if got[name].shape != ref[name].shape:
            raise Failure(f"{name}: shape {list(got[name].shape)}, want {list(ref[name].shape)}")
        if got_dtypes[name] != want_dtypes[name]:
            raise Failure(f"{name}: dtype {got_dtypes[name]}, want {want_dtypes[name]}")


def compare_ulp(got, got_dtypes, ref, want_dtypes):
    """Every tensor within one ulp of its dtype of the rounded reference; returns the count
    of coordinates one ulp off and the total."""
    compare_names(got, got_dtypes, ref, want_dtypes)
    off, total = 0, 0
    for name, want in ref.items():
        dtype = want_dtypes[name]
        r = round_to(want, dtype)
        diff = np.abs(got[name] - r)
        bad = ~(diff <= ulp(r, dtype)) & ~(np.isnan(got[name]) & np.isnan(r))
        if bad.any():
            j = int(np.flatnonzero(bad.ravel())[0])
            raise Failure(f"{name}: {int(bad.sum())} of {r.size} values more than 1 ulp of "
                          f"{dtype} off the reference, e.g. [{j}] = {got[name].ravel()[j]!r}, "
                          f"want {r.ravel()[j]!r} (unrounded {want.ravel()[j]!r})")
        off += int((diff > 0).sum())
        total += r.size
    return off, total


def compare_float32(got, got_dtypes, ref):
    """max |out - ref| <= 1e-6 max |ref| per tensor; returns the worst relative error."""
    compare_names(got, got_dtypes, ref, {n: "F32" for n in ref})
    worst = 0.0
    for name, want in ref.items():
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        err = float(np.max(np.abs(got[name] - want))) if want.size else 0.0
        if not err <= 1e-6 * scale:
            raise Failure(f"float32: {name}: max |out - ref| = {err:.3g} > 1e-6 * {scale:.3g}")
        worst = max(worst, err / scale if scale else 0.0)
    return worst


def check_files(out, merged, donor_path):
    """config.json as mergekit writes it, and the donor's other files copied."""
    try:
        with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise Failure(f"config.json: {e}")
    with open(os.path.join(donor_path, "config.json"), encoding="utf-8") as f:
        donor = json.load(f)
    if config.get("num_hidden_layers") != merged.num_hidden_layers:
        raise Failure(f"config.json: num_hidden_layers {config.get('num_hidden_layers')}, "
                      f"want {merged.num_hidden_layers}")
    if config.get("torch_dtype") != merged.torch_dtype:
        raise Failure(f"config.json: torch_dtype {config.get('torch_dtype')!r}, want "
                      f"{merged.torch_dtype!r} (mergekit sets out_dtype, else dtype)")
    for key in ("architectures", "model_type", "hidden_size", "vocab_size"):
        if config.get(key) != donor.get(key):
            raise Failure(f"config.json: {key} {config.get(key)!r}, the donor's is "
                          f"{donor.get(key)!r}")
    for name in COPIED_FILES:
        path = os.path.join(out, name)
        if not os.path.exists(path):
            raise Failure(f"{name} not written (the donor's is to be copied)")
        with open(path, "rb") as f, open(os.path.join(donor_path, name), "rb") as g:
            if f.read() != g.read():
                raise Failure(f"{name} differs from the donor's ({os.path.basename(donor_path)})")


# pretty_name and reference_url of mergekit's methods (registry.py and merge_methods/*.py).
CARD_NAMES = {
    "task_arithmetic": ("Task Arithmetic", "https://arxiv.org/abs/2212.04089"),
    "ties": ("TIES", "https://arxiv.org/abs/2306.01708"),
    "dare_ties": ("DARE TIES", "https://arxiv.org/abs/2311.03099"),
    "dare_linear": ("Linear DARE", "https://arxiv.org/abs/2311.03099"),
    "breadcrumbs": ("Model Breadcrumbs", "https://arxiv.org/abs/2312.06795"),
    "breadcrumbs_ties": ("Model Breadcrumbs with TIES", "https://arxiv.org/abs/2312.06795"),
    "della": ("DELLA", "https://arxiv.org/abs/2406.11617"),
    "della_linear": ("Linear DELLA", "https://arxiv.org/abs/2406.11617"),
    "linear": ("Linear", "https://arxiv.org/abs/2203.05482"),
    "slerp": ("SLERP", "https://en.wikipedia.org/wiki/Slerp"),
    "model_stock": ("Model Stock", "https://arxiv.org/abs/2403.19522"),
    "passthrough": ("Passthrough", None),
    "nearswap": ("NearSwap", "https://huggingface.co/alchemonaut/QuartetAnemoi-70B-t0.0001"),
    "sce": ("SCE", "https://arxiv.org/abs/2408.07990"),
    "multislerp": ("Multi-SLERP", "https://goddard.blog/posts/multislerp-wow-what-a-cool-idea"),
    "nuslerp": ("NuSLERP", None),
    "karcher": ("Karcher Mean", "https://en.wikipedia.org/wiki/Karcher_mean"),
    "ram": ("Reinforced Agent Merging", "https://arxiv.org/abs/2601.13572"),
    "ramplus_tl": ("Reinforced Agent Merging Plus (Tensor-Local)",
                   "https://arxiv.org/abs/2601.13572"),
    "arcee_fusion": ("Arcee Fusion", "https://arcee.ai"),
}


def referenced_models(config):
    """config.py's referenced_models, in the order the YAML names them (mergekit: a set)."""
    refs = [config.get("base_model")] + [m["model"] for m in config.get("models") or []]
    for sl in config.get("slices") or []:
        refs += [src["model"] for src in sl["sources"]]
    return list(dict.fromkeys(r for r in refs if r))


def expected_card(config, text, name):
    """card.py's generate_card for local models (no hub ids: base_model is empty), the tool
    named as compatbench."""
    pretty, url = CARD_NAMES[config["merge_method"]]
    method = f"[{pretty}]({url})" if url else pretty
    base = None if config["merge_method"] == "slerp" else config.get("base_model")
    bullets = "".join(f"* {m}\n" for m in referenced_models(config) if m != base)
    return ("---\nbase_model: []\nlibrary_name: transformers\ntags:\n- mergekit\n- merge\n"
            f"---\n# {name}\n\nThis is a merge of pre-trained language models created using "
            "compatbench merge from a [mergekit](https://github.com/cg123/mergekit) "
            "configuration.\n\n## Merge Details\n### Merge Method\n\nThis model was merged "
            f"using the {method} merge method" + (f" using {base} as a base" if base else "")
            + ".\n\n### Models Merged\n\nThe following models were included in the merge:\n"
            + bullets + "\n### Configuration\n\nThe following YAML configuration was used to "
            f"produce this model:\n\n```yaml\n{text}\n```\n")


def check_card(out, copy_path):
    """mergekit_config.yml is the merge YAML as given; README.md is mergekit's card."""
    with open(copy_path, encoding="utf-8") as f:
        text = f.read()
    for name, want in [("mergekit_config.yml", text),
                       ("README.md", expected_card(yaml.safe_load(text), text,
                                                   os.path.basename(out)))]:
        try:
            with open(os.path.join(out, name), encoding="utf-8") as f:
                got = f.read()
        except OSError as e:
            raise Failure(f"{name}: {e}")
        if got != want:
            raise Failure(f"{name} is not as mergekit writes it")


# ---------------------------------------------------------------- one fixture

def reference_merge(config, paths, float32=False):
    merged = reference.merge(config, lambda n: paths[local_name(n)])
    if float32:
        merged.dtypes = {n: "F32" for n in merged.dtypes}
        merged.torch_dtype = "float32"
    return merged


def check_refused(binary, run_dir, config, copy_path, word):
    try:
        reference_merge(config, PATHS)
        raise Failure(f"the reference merges it, but it is listed as refused ({word})")
    except reference.Unsupported as e:
        if e.key != word:
            raise Failure(f"the reference refuses it for {e.key!r}, listed as {word!r}")
    out = os.path.join(run_dir, "out")
    code, _, err = run_merge(binary, copy_path, out)
    if code != 2:
        raise Failure(f"exit {code}, want 2 (refused); stderr: {last_line(err)}")
    if not re.search(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?![A-Za-z0-9_])", err):
        raise Failure(f"stderr does not name {word!r}: {last_line(err)}")
    if os.path.exists(out):
        raise Failure("refused, but the output folder was created")
    return f"refused (exit 2, stderr names {word!r}, no output folder)"


def run_supported(binary, run_dir, copy_path, tag, *options):
    out = os.path.join(run_dir, tag)
    code, _, err = run_merge(binary, copy_path, out, *options)
    if code != 0:
        raise Failure(f"{tag}: exit {code}, want 0; stderr: {last_line(err)}")
    return out


def check_supported(binary, run_dir, config, text, copy_path):
    try:
        merged = reference_merge(config, PATHS)
    except reference.Unsupported as e:
        raise Failure(f"the reference refuses it ({e.key}: {e}), listed as supported")
    donor_path = PATHS[local_name(merged.donor)]
    out = run_supported(binary, run_dir, copy_path, "out", "--arithmetic", "exact")
    got, got_dtypes = read_output(out)
    off, total = compare_ulp(got, got_dtypes, merged.tensors, merged.dtypes)
    check_files(out, merged, donor_path)
    check_card(out, copy_path)
    f32_text = localized(text, PATHS, float32=True)
    check_localized(f32_text, config, PATHS, float32=True)
    f32_path = os.path.join(run_dir, "config_float32.yml")
    with open(f32_path, "w", encoding="utf-8") as f:
        f.write(f32_text)
    merged32 = reference_merge(config, PATHS, float32=True)
    config32 = torch_reference.as_float32(config)
    out32 = run_supported(binary, run_dir, f32_path, "out_float32", "--arithmetic", "exact")
    got32, got32_dtypes = read_output(out32)
    worst = compare_float32(got32, got32_dtypes, merged32.tensors)
    check_files(out32, merged32, donor_path)
    dtypes = "/".join(sorted(set(merged.dtypes.values())))
    return (f"exact: {len(merged.tensors)} tensors within 1 ulp of {dtypes} ({off} of {total} "
            f"values not equal to the rounded reference); float32: max error {worst:.2g} of "
            f"max |ref|; {check_in_dtype(binary, run_dir, config, copy_path, merged, 'out_dtype')}, "
            f"{check_in_dtype(binary, run_dir, config32, f32_path, merged32, 'out_dtype32')}; "
            f"{merged.num_hidden_layers} layers; files from {local_name(merged.donor)}")


def check_in_dtype(binary, run_dir, config, copy_path, exact, tag):
    """The default arithmetic (the YAML's dtype) against torch (dtype_check.py); `exact`:
    reference.py's merge of the same configuration; `tag`: the output folder's name."""
    merged = torch_reference.merge(config, lambda n: PATHS[local_name(n)])
    got, got_dtypes = read_output(run_supported(binary, run_dir, copy_path, tag))
    compare_names(got, got_dtypes, merged.tensors, merged.dtypes)
    try:
        _, compared, tied, flipped, worst = dtype_check.compare(
            config["merge_method"], got, got_dtypes, merged, exact.tensors)
    except dtype_check.Mismatch as e:
        raise Failure(f"in the dtype: {e}")
    dtypes = "/".join(sorted(set(merged.compute_dtypes.values())))
    flips = f", {flipped} mask decisions other than torch's" if flipped else ""
    if worst == 0:
        return f"in {dtypes}: {compared - flipped} values equal to torch's, {tied} tied{flips}"
    return f"in {dtypes}: within {worst:.2g} scaled ulp of torch's, {tied} tied{flips}"


def check_fixture(binary, workdir, key, path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    config = yaml.safe_load(text)
    run_dir = os.path.join(workdir, "runs", key.replace("/", "__"))
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    copy_text = localized(text, PATHS)
    check_localized(copy_text, config, PATHS, float32=False)
    copy_path = os.path.join(run_dir, "config.yml")
    with open(copy_path, "w", encoding="utf-8") as f:
        f.write(copy_text)
    word = expected_refusal(key, config)
    if word:
        return check_refused(binary, run_dir, config, copy_path, word)
    return check_supported(binary, run_dir, config, text, copy_path)


def self_test():
    suite = unittest.defaultTestLoader.loadTestsFromName("test_reference")
    result = unittest.TextTestRunner(stream=open(os.devnull, "w"), verbosity=0).run(suite)
    problems = result.failures + result.errors
    if problems:
        test, trace = problems[0]
        return False, (f"{len(problems)} of {result.testsRun} failed, e.g. {test.id()}: "
                       f"{last_line(trace)}")
    return True, f"{result.testsRun} hand-worked checks"


PATHS = {}


def init_worker(paths):
    PATHS.update(paths)


def check_one(binary, workdir, key, path):
    """One fixture's line: PASS or FAIL, and whether it failed."""
    try:
        return f"PASS {key}: {check_fixture(binary, workdir, key, path)}", False
    except Failure as e:
        return f"FAIL {key}: {e}", True


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="fixtures checked at once (default: one per core)")
    args = ap.parse_args(argv)
    binary, workdir = os.path.abspath(args.binary), os.path.abspath(args.workdir)
    todo = fixtures(set(args.only))
    unknown = [n for n in args.only if not any(n in (k, k.split("/")[1]) for k, _ in todo)]
    if unknown:
        print(f"no fixture named {', '.join(unknown)}", file=sys.stderr)
        return 2
    os.makedirs(workdir, exist_ok=True)
    PATHS.update(write_models(os.path.join(workdir, "models")))
    ok, what = self_test()
    print(f"{'PASS' if ok else 'FAIL'} reference self-test: {what}", flush=True)
    failed = 0 if ok else 1
    # Fresh interpreters (spawn), not forks of this one, which has imported PyTorch.
    with ProcessPoolExecutor(max(1, args.jobs), mp_context=multiprocessing.get_context("spawn"),
                             initializer=init_worker, initargs=(dict(PATHS),)) as pool:
        runs = [pool.submit(check_one, binary, workdir, key, path) for key, path in todo]
        for run in runs:
            line, bad = run.result()
            failed += bad
            print(line, flush=True)
    total = len(todo) + 1
    print(f"{total - failed} of {total} passed (the reference self-test and {len(todo)} fixtures)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
