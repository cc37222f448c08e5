"""bench/eta.sh's copy of a config with a progress line every 2 s (runner.progress_interval,
not part of the config hash): CONFIG's text with the interval set or added, written to OUT.

    /usr/bin/python3 bench/eta_config.py CONFIG OUT
"""
import re, sys
text = open(sys.argv[1]).read()
if re.search(r"^runner:", text, re.M):
    text = re.sub(r"^(\s+)progress_interval:.*$", r"\1progress_interval: 2", text, flags=re.M)
    if "progress_interval: 2" not in text:
        text = re.sub(r"^runner:\s*\n", "runner:\n  progress_interval: 2\n", text, flags=re.M)
else:
    text += "\nrunner:\n  progress_interval: 2\n"
open(sys.argv[2], "w").write(text)
