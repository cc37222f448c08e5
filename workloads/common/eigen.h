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
#include <cmath>

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

// Element-wise square root and its reciprocal, exactly rounded. Eigen's own vectorised
// sqrt (EIGEN_FAST_MATH, its default: a float array's sqrt(), rsqrt(), pow() and a partial
// reduction's norm(), and with AVX-512 a double array's too) starts from the CPU's
// approximate reciprocal square root, whose bits are the vendor's choice: the same build
// trained other zoo models, and gave other results, on two x86-64 hosts. ExactSqrt takes the
// CPU's correctly rounded square-root instruction, a packet at a time where the build has
// one, else std::sqrt, so the bits depend on the build and the inputs only.
// tests/portable_math.py keeps Eigen's approximate forms out of the sources and the binary.
struct ExactSqrt {
    template <class T>
    T operator()(const T& v) const {
        return std::sqrt(v);
    }
#if defined(EIGEN_VECTORIZE_SSE2)
    Eigen::internal::Packet4f packetOp(const Eigen::internal::Packet4f& p) const {
        return _mm_sqrt_ps(p);
    }
    Eigen::internal::Packet2d packetOp(const Eigen::internal::Packet2d& p) const {
        return _mm_sqrt_pd(p);
    }
#endif
#if defined(EIGEN_VECTORIZE_AVX)
    Eigen::internal::Packet8f packetOp(const Eigen::internal::Packet8f& p) const {
        return _mm256_sqrt_ps(p);
    }
    Eigen::internal::Packet4d packetOp(const Eigen::internal::Packet4d& p) const {
        return _mm256_sqrt_pd(p);
    }
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
    Eigen::internal::Packet16f packetOp(const Eigen::internal::Packet16f& p) const {
        return _mm512_sqrt_ps(p);
    }
    Eigen::internal::Packet8d packetOp(const Eigen::internal::Packet8d& p) const {
        return _mm512_sqrt_pd(p);
    }
#endif
#if defined(EIGEN_VECTORIZE_NEON) && EIGEN_ARCH_ARM64
    Eigen::internal::Packet4f packetOp(const Eigen::internal::Packet4f& p) const {
        return vsqrtq_f32(p);
    }
    Eigen::internal::Packet2f packetOp(const Eigen::internal::Packet2f& p) const {
        return vsqrt_f32(p);
    }
    Eigen::internal::Packet2d packetOp(const Eigen::internal::Packet2d& p) const {
        return vsqrtq_f64(p);
    }
#endif
};

template <class Derived>
auto exact_sqrt(const Eigen::ArrayBase<Derived>& a) {
    return a.unaryExpr(ExactSqrt{});
}

// 1 / sqrt(a), each step rounded: the bits of T(1) / std::sqrt(v).
template <class Derived>
auto exact_rsqrt(const Eigen::ArrayBase<Derived>& a) {
    return exact_sqrt(a).inverse();
}

}  // namespace compatbench

template <>
struct Eigen::internal::functor_traits<compatbench::ExactSqrt> {
    enum {
        Cost = 6 * Eigen::NumTraits<float>::MulCost,
#if defined(EIGEN_VECTORIZE_SSE2) || (defined(EIGEN_VECTORIZE_NEON) && EIGEN_ARCH_ARM64)
        PacketAccess = 1
#else
        PacketAccess = 0
#endif
    };
};
