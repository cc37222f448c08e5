#!/usr/bin/python3
"""Element-wise math whose bits do not depend on the CPU, checked.

Eigen's vectorised sqrt of a float array (and, with AVX-512, of a double array) starts
from the CPU's approximate reciprocal square root (EIGEN_FAST_MATH, Eigen's default), whose
bits differ between CPU vendors: the same build trained other zoo models on two x86-64
hosts. That covers `.sqrt()`, `.rsqrt()`, `.cwiseSqrt()`, `.pow()` and the partial
reductions' `rowwise().norm()`. workloads/ and runner/ call exact_sqrt() and exact_rsqrt()
(workloads/common/eigen.h) instead, which round std::sqrt.

Two checks:
  - the sources of workloads/ and runner/ name none of those calls (file and line);
  - the built binary holds no approximate reciprocal instruction (rsqrt*, rcp*), no x87
    transcendental instruction and no call to libm's long double functions (whose x87
    bits are the vendor's too: Boost.Math computes a double in double), in any function,
    whatever template produced it (objdump; the function is named).

    /usr/bin/python3 tests/portable_math.py SOURCE_DIR [BINARY]
"""
import os
import re
import subprocess
import sys

FORBIDDEN = re.compile(r"\.(sqrt|rsqrt|cwiseSqrt)\(\s*\)|\.(pow|cwisePow)\(|"
                       r"wise\(\)\.(norm|normalized|stableNorm|blueNorm|hypotNorm)\(")
APPROXIMATE = re.compile(r"\tv?(rsqrt|rcp)(14|28)?(ps|ss|pd|sd|ph|sh)\b"
                         r"|\tf(2xm1|yl2x|yl2xp1|sin|cos|sincos|ptan|patan)\b"
                         r"|<(exp|exp2|expm1|log|log2|log10|log1p|pow|sin|cos|tan|asin|acos|atan"
                         r"|atan2|sinh|cosh|tanh|erf|erfc|lgamma|tgamma|cbrt|hypot)l@plt>")
FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")


def in_sources(root):
    for top in ("workloads", "runner"):
        for base, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if FORBIDDEN.search(line.split("//", 1)[0]):
                            yield f"{os.path.relpath(path, root)}:{number}: {line.strip()}"


def in_binary(binary):
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", binary],
                             check=True, capture_output=True, text=True).stdout
    function, found = "", {}
    for line in listing.splitlines():
        head = FUNCTION.match(line)
        if head:
            function = head.group(1)
        elif APPROXIMATE.search(line):
            found.setdefault(function, line.split("\t")[-1].strip())
    return [f"{binary}: {instruction} in {name[:300]}" for name, instruction in found.items()]


def main():
    root = sys.argv[1]
    found = list(in_sources(root))
    if len(sys.argv) > 2:
        found += in_binary(sys.argv[2])
    for f in found:
        print(f"math whose bits the CPU vendor chooses (see the docstring): {f}")
    if found:
        sys.exit(1)
    print("portable math: none of the host-dependent forms in the sources"
          + (" or the binary" if len(sys.argv) > 2 else ""))


if __name__ == "__main__":
    main()
