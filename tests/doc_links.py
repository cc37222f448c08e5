#!/usr/bin/python3
"""Every relative link of the project's Markdown pages leads somewhere.

A link `[text](path)` or `[text](path#anchor)` or `[text](#anchor)` must name a file or
folder that exists (relative to the page, as a code-hosting site resolves it), and an
anchor must be one of the target page's headings, slugged as GitHub does (lower case,
punctuation dropped, spaces to hyphens, -1, -2, ... for repeats). Links with a scheme
(https:, mailto:) are not followed.

    /usr/bin/python3 tests/doc_links.py SOURCE_DIR
"""
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
SKIP_DIRS = {".git", "build", "results", "runs", "node_modules", "__pycache__"}


def slug(text):
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def outside_code(text):
    """The page's lines outside fenced code blocks, with inline code blanked."""
    fence = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            yield number, line


def anchors(path):
    seen, found = {}, set()
    for _, line in outside_code(open(path, encoding="utf-8").read()):
        m = re.match(r"^#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
    return found


def pages(root):
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(base, f)


def broken_links(root):
    cache = {}
    for page in pages(root):
        for number, line in outside_code(open(page, encoding="utf-8").read()):
            for _, target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = f"{os.path.relpath(page, root)}:{number}: {target}"
                if not os.path.exists(dest):
                    yield f"{where}: no such file"
                    continue
                if anchor and dest.endswith(".md"):
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if anchor not in cache[dest]:
                        yield f"{where}: no heading '{anchor}' in {os.path.relpath(dest, root)}"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = list(broken_links(root))
    for b in bad:
        print(b)
    if bad:
        sys.exit(f"doc_links.py: {len(bad)} broken link(s)")
    print("doc_links.py: every relative link and anchor resolves")


if __name__ == "__main__":
    main()
