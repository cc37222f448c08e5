"""The text corpus of the language-model library: eight domains, read only from files that
Debian packages install, assembled deterministically.

    python3 -m compatnets.corpus --out DIR [--domain-bytes 400000 --block 1024
                                 --heldout-every 10 --eval-windows 64 --probe-windows 32
                                 --context 128 --gen-windows 16 --gen-prompt 64 --gen-bytes 16]
                                 [--from TEXT] [--result FILE]

    python    the standard library's modules, its packages included, not its tests
              (libpython3.x-stdlib)
    c         the kernel's user-space headers, /usr/include/linux/**/*.h (linux-libc-dev)
    perl      Perl's core modules, /usr/share/perl/5.*/**/*.pm (perl-modules)
    shell     git's shell scripts, then the bash completions (git, bash-completion)
    legal     the license texts of /usr/share/common-licenses (base-files), then every
              package's /usr/share/doc/*/copyright (each distinct text once)
    english   the English fortunes (fortunes, fortunes-min; not the `off` folder)
    german    the German fortunes (fortunes-de)
    spanish   the Spanish fortunes (fortunes-es)

With --from TEXT, each domain's files are TEXT/<domain>/* instead (your own text, or a
test's). A domain's files are read in name order and joined (a blank line between files) up to
--domain-bytes; the text is cut into blocks of --block bytes, and every --heldout-every-th
block (the last of each run) is held out: train and held-out text never share a byte.
Written into DIR: <domain>.train and <domain>.heldout (raw bytes: the tokens of a byte-level
model) and corpus.json: per domain its source files, byte counts and the sha256 of both
parts; the sha256 of the whole corpus (of the per-part digests in domain order); the
evaluation and probe settings every model of the library is scored with. The generation
windows (`--gen-windows` a domain, evenly spread over its held-out line starts) are the
`--gen-prompt` bytes before a line starts and the line's first `--gen-bytes` bytes, all
inside one block: a model continues the prompt greedily and must give those bytes exactly.
FILE: {"sha256", "domains", "train_bytes", "heldout_bytes"}.
"""
import argparse
import glob
import hashlib
import json
import os
import sys
import sysconfig

import numpy as np

DOMAINS = ("python", "c", "perl", "shell", "legal", "english", "german", "spanish")
FORTUNES = "/usr/share/games/fortunes"


def _plain_files(pattern):
    """Regular files (not links, not the fortune index files) matching `pattern` (`**`
    recursive), sorted, each real file once (a directory reached through a link is not
    read twice)."""
    seen, out = set(), []
    for p in sorted(glob.glob(pattern, recursive=True)):
        if not os.path.isfile(p) or os.path.islink(p) or p.endswith((".dat", ".u8")):
            continue
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            out.append(p)
    return out


def _python_modules():
    stdlib = sysconfig.get_paths()["stdlib"]
    skip = (os.sep + "test" + os.sep, os.sep + "tests" + os.sep, os.sep + "idle_test" + os.sep,
            "site-packages", "dist-packages")
    return [p for p in _plain_files(os.path.join(stdlib, "**", "*.py")) if not any(s in p for s in skip)]


def _distinct(files):
    """`files` without those whose text an earlier one already had."""
    seen, out = set(), []
    for p in files:
        with open(p, "rb") as f:
            h = hashlib.sha256(f.read()).digest()
        if h not in seen:
            seen.add(h)
            out.append(p)
    return out


def _shell_scripts():
    scripts = []
    for p in _plain_files("/usr/lib/git-core/*"):
        with open(p, "rb") as f:
            if f.read(32).split(b"\n")[0] in (b"#!/bin/sh", b"#!/bin/bash", b"#!/usr/bin/env bash"):
                scripts.append(p)
    return scripts + _plain_files("/usr/share/bash-completion/completions/*")


def sources(domain, root=None):
    """The files of a domain, in the order they are read (under `root`/<domain>/ if given)."""
    if root is not None:
        return _plain_files(os.path.join(root, domain, "*"))
    return {
        "python": _python_modules,
        "c": lambda: _plain_files("/usr/include/linux/**/*.h"),
        "perl": lambda: _plain_files("/usr/share/perl/5.*/**/*.pm"),
        "shell": _shell_scripts,
        "legal": lambda: _distinct(_plain_files("/usr/share/common-licenses/*")
                                   + _plain_files("/usr/share/doc/*/copyright")),
        "english": lambda: _plain_files(os.path.join(FORTUNES, "*")),
        "german": lambda: _plain_files(os.path.join(FORTUNES, "de", "*")),
        "spanish": lambda: _plain_files(os.path.join(FORTUNES, "es", "*")),
    }[domain]()


_PACKAGES = {"english": "fortunes", "german": "fortunes-de", "spanish": "fortunes-es",
             "shell": "git", "legal": "base-files", "perl": "perl-modules-5.36", "c": "linux-libc-dev"}


def domain_text(domain, limit, root=None):
    """(text bytes, the files read) of a domain, at most `limit` bytes."""
    files = sources(domain, root)
    if not files and root is not None:
        raise OSError(f"domain '{domain}': no files in {os.path.join(root, domain)}")
    if not files:
        raise OSError(f"domain '{domain}': no source files; apt-get install {_PACKAGES.get(domain, 'python3')}")
    parts, used, size = [], [], 0
    for p in files:
        with open(p, "rb") as f:
            data = f.read()
        parts.append(data + b"\n\n")
        used.append(p)
        size += len(data) + 2
        if size >= limit:
            break
    return b"".join(parts)[:limit], used


def split(text, block, every):
    """(train, held-out): every `every`-th block of `block` bytes held out."""
    train, held = [], []
    for i in range(0, len(text), block):
        (held if (i // block) % every == every - 1 else train).append(text[i:i + block])
    return b"".join(train), b"".join(held)


SETTINGS = ("block", "heldout_every", "domain_bytes", "context", "eval_windows", "probe_windows",
            "gen_windows", "gen_prompt", "gen_bytes")


def window_starts(size, block, length, n):
    """n offsets, evenly spread over a part of `size` bytes, of windows of `length` bytes
    that each lie inside one block (a part joins blocks that were apart in the text)."""
    starts = [b + j * length for b in range(0, size, block)
              for j in range((min(size, b + block) - b) // length)]
    if len(starts) < n:
        raise ValueError(f"{len(starts)} windows of {length} bytes within blocks of {block}, fewer than {n}")
    return [starts[i] for i in np.linspace(0, len(starts) - 1, n).round().astype(int)]


def generation_starts(data, block, prompt, length, n):
    """n line starts (offsets just after a newline), evenly spread over a part, each with
    `prompt` bytes before it and `length` after it inside one block."""
    starts = [i + 1 for i, byte in enumerate(data[:-1]) if byte == 10
              and i + 1 - prompt >= 0 and (i + 1 - prompt) // block == (i + length) // block
              and i + length < len(data)]
    if len(starts) < n:
        raise ValueError(f"{len(starts)} line starts with {prompt} bytes before and {length} after "
                         f"within blocks of {block}, fewer than {n}")
    return [starts[i] for i in np.linspace(0, len(starts) - 1, n).round().astype(int)]


def digest(info):
    """The corpus's sha256: of its settings (those it records: a corpus built before the
    generation settings existed keeps its digest), then each part's sha256 in domain order."""
    h = hashlib.sha256(json.dumps({k: info[k] for k in SETTINGS if k in info}, sort_keys=True).encode())
    for entry in info["domains"].values():
        h.update((entry["train_sha256"] + entry["heldout_sha256"]).encode())
    return h.hexdigest()


def build(a):
    os.makedirs(a.out, exist_ok=True)
    info = {"block": a.block, "heldout_every": a.heldout_every, "domain_bytes": a.domain_bytes,
            "context": a.context, "eval_windows": a.eval_windows, "probe_windows": a.probe_windows,
            "gen_windows": a.gen_windows, "gen_prompt": a.gen_prompt, "gen_bytes": a.gen_bytes,
            "domains": {}}
    for name in ("eval_windows", "probe_windows", "gen_windows", "gen_prompt", "gen_bytes"):
        if getattr(a, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(a, name)}: must be at least 1")
    if a.gen_prompt + a.gen_bytes > a.context:
        raise ValueError(f"--gen-prompt {a.gen_prompt} + --gen-bytes {a.gen_bytes} exceed --context {a.context}")
    for d in DOMAINS:
        text, used = domain_text(d, a.domain_bytes, a.source)
        train, held = split(text, a.block, a.heldout_every)
        for part, data, n in (("held-out", held, a.eval_windows), ("train", train, a.probe_windows)):
            try:
                window_starts(len(data), a.block, a.context + 1, n)
            except ValueError as e:
                raise ValueError(f"domain '{d}', {part} text: {e}") from None
        try:
            generation_starts(held, a.block, a.gen_prompt, a.gen_bytes, a.gen_windows)
        except ValueError as e:
            raise ValueError(f"domain '{d}', held-out text: {e}") from None
        entry = {"sources": used, "train_bytes": len(train), "heldout_bytes": len(held)}
        for part, data in (("train", train), ("heldout", held)):
            with open(os.path.join(a.out, f"{d}.{part}"), "wb") as f:
                f.write(data)
            entry[f"{part}_sha256"] = hashlib.sha256(data).hexdigest()
        info["domains"][d] = entry
    info["sha256"] = digest(info)
    with open(os.path.join(a.out, "corpus.json"), "w") as f:
        json.dump(info, f, indent=1)
    return {"sha256": info["sha256"], "domains": len(DOMAINS),
            "train_bytes": sum(e["train_bytes"] for e in info["domains"].values()),
            "heldout_bytes": sum(e["heldout_bytes"] for e in info["domains"].values())}


class Corpus:
    """A corpus folder as `build` wrote it; each part read once, its sha256 checked against
    corpus.json (a changed file fails, naming it)."""

    def __init__(self, folder):
        self.folder = folder
        path = os.path.join(folder, "corpus.json")
        try:
            with open(path) as f:
                self.info = json.load(f)
            recorded = self.info["sha256"]
            ok = digest(self.info) == recorded
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise OSError(f"{path}: cannot read the corpus description ({e!r})") from None
        if not ok:
            raise ValueError(f"{path}: its sha256 does not match its settings and parts (edited?)")
        self.sha256, self.context = recorded, self.info["context"]
        self._parts = {}

    def domains(self):
        return list(self.info["domains"])

    def part(self, domain, part):
        """The bytes of <domain>.<part> (train or heldout), checked against corpus.json."""
        if domain not in self.info["domains"]:
            raise ValueError(f"unknown domain '{domain}' (one of {', '.join(self.domains())})")
        key = (domain, part)
        if key not in self._parts:
            path = os.path.join(self.folder, f"{domain}.{part}")
            with open(path, "rb") as f:
                data = f.read()
            want = self.info["domains"][domain][f"{part}_sha256"]
            if hashlib.sha256(data).hexdigest() != want:
                raise ValueError(f"{path}: sha256 differs from corpus.json's {want[:12]}… "
                                 "(the file changed after the corpus was built)")
            self._parts[key] = data
        return self._parts[key]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m compatnets.corpus", description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    for name, default in (("domain-bytes", 400000), ("block", 1024), ("heldout-every", 10),
                          ("eval-windows", 64), ("probe-windows", 32), ("context", 128),
                          ("gen-windows", 16), ("gen-prompt", 64), ("gen-bytes", 16)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--from", dest="source")
    p.add_argument("--result")
    a = p.parse_args(argv)
    try:
        result = build(a)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.result:
        with open(a.result, "w") as f:
            json.dump(result, f)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
