# The Python package installs as users install it: `pip install ./python` into a virtual
# environment (offline here: no index, Debian's setuptools and wheel), and imports from
# there, outside the source tree.
set -euo pipefail
SRC=${1:?usage: python_install.sh SOURCE_DIR}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/compatbench-pip.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cp -r "$SRC/python" "$WORK/python"   # pip builds in place: the source tree stays clean
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --no-deps --no-build-isolation --no-index "$WORK/python"
cd "$WORK"
"$WORK/venv/bin/python" - <<'PYEOF'
import sys
import numpy as np, compatnets, compatnets.safetensors as st
assert "site-packages" in st.__file__, st.__file__
assert "compatnets.report" not in sys.modules and "matplotlib" not in sys.modules  # optional
import compatnets.report.page as page  # the report is installed too
assert "site-packages" in page.__file__, page.__file__
st.save("t.safetensors", {"x": np.arange(6, dtype=np.float32).reshape(2, 3)})
assert (st.load("t.safetensors")["x"] == np.arange(6).reshape(2, 3)).all()
print("compatnets installed with pip into a venv:", st.__file__)
PYEOF
