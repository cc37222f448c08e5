"""bench/merging.sh's config: CONFIG without the alignment study's groups (align_*,
alignment, paradigms), written to OUT.

    /usr/bin/python3 bench/merging_config.py CONFIG OUT
"""
import re, sys
out, drop = [], False
for line in open(sys.argv[1]).read().split("\n"):
    m = re.match(r"  - \{?name: ([\w.-]+)", line)
    if m:
        drop = re.fullmatch(r"align_\w+|alignment|paradigms", m.group(1)) is not None
    elif not line.startswith("    "):
        drop = False
    if not drop:
        out.append(line)
open(sys.argv[2], "w").write("\n".join(out))
