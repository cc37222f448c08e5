// Eigen, included through this header everywhere in the project.
//
// GCC 12's AVX-512 intrinsic headers define _mm512_undefined_pd() and its kin as a
// self-initialised local (`__m512d __Y = __Y;`). Once Eigen's AVX-512 packet code is
// inlined at -O3, -Wmaybe-uninitialized reports that local in every translation unit that
// uses Eigen (GCC bug 105593, fixed in GCC 13). The warning belongs to the compiler's own
// headers, so it is silenced for their lines only: they are included first, inside the
// pragma, and every later #include of them is a no-op. Eigen's code and the project's code
// keep every warning.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include <Eigen/Dense>

namespace compatbench {

// Dense column-major matrices of the project's kernels: features and probes (float), and
// similarities and statistics (double).
using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

// Eigen blocks its matrix products by the cache sizes it reads from the CPU, and the depth
// of a block decides where a long dot product is split into partial sums: the same build
// gave other CKA bits on a machine reporting a 32 KiB L1 than on one reporting 48 or 64 KiB.
// The runner fixes the sizes once at start, so a product's bits depend on the build and the
// inputs only, not on the machine (the golden hashes hold on any x86-64 host).
inline void fix_eigen_blocking() {
    Eigen::setCpuCacheSizes(48 * 1024, 1280 * 1024, 30 * 1024 * 1024);
}

}  // namespace compatbench
