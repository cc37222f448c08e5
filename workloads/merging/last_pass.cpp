#include "merging/last_pass.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/constant.h"

namespace compatbench::merging::last_pass {

void Stats::finish(TensorMergeStats& st) const {
    st.mean_tau_sq = mean_tau_sq;
    st.update_sq = update_sq;
    for (std::size_t l = 0; l < 8; ++l) st.kept += static_cast<std::uint64_t>(-changed[l]);
}

namespace {

V8d widen(const V8f& v) { return __builtin_convertvector(v, V8d); }
V8l bits(const V8d& v) {
    V8l b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}
V8d value(const V8l& b) {
    V8d v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}

// The update of one group of coordinates from τ̄ (m) and Σ w_i τ_i (d). The thresholds work
// on the bits as std::abs and std::copysign do: |m| clears the sign bit, sign(m)(|m| − λ)
// puts m's sign bit on the difference, and a coordinate at or below λ gets +0.
template <Update U>
V8d update(const Fused& f, const V8d& m, const V8d& d) {
    if constexpr (U == Update::weighted) return d;
    if constexpr (U == Update::mean) return m;
    if constexpr (U == Update::scaled) return m * f.mean_scale;
    const V8l sign = V8l{} + std::numeric_limits<long long>::min(), mb = bits(m);
    const V8d mag = value(mb & ~sign);
    const V8l keep = mag > f.lambda;
    if constexpr (U == Update::hard) return value(mb & keep);
    return value(((bits(mag - f.lambda) & ~sign) | (mb & sign)) & keep);
}

// Per group of 8 coordinates, as tensor_merge.cpp's arrays do per coordinate: τ_i = θ_i − θ0
// in double, τ̄ = (0 + τ_1 + … + τ_K) / K, d = (0 + w_1 τ_1 + … + w_K τ_K) [/ Σ w],
// θ = θ0 + scale · update.
template <int K, Update U>
void kernel(const MergeParams& p, const Fused& f, const float* base, const float* const* x,
            std::size_t count, float* merged, Stats& out) {
    Stats stats = out;  // in registers for the loop
    double w[K];
    double total = 0.0;
    for (int i = 0; i < K; ++i) {
        w[i] = p.weights.empty() ? 1.0 : p.weights.at(static_cast<std::size_t>(i));
        total += w[i];
    }
    const bool divide = p.normalize == Normalize::mean && std::abs(total) >= 1e-8;  // mergekit
    const double inverse = exact_inverse(total);
    for (std::size_t j = 0; j < count; j += 8) {
        const std::size_t n = count - j < 8 ? count - j : 8;
        const V8d b = widen(load<V8f>(base + j, n));
        V8d m = {}, d = {};
        for (int i = 0; i < K; ++i) {
            const V8d t = widen(load<V8f>(x[i] + j, n)) - b;
            m += t;
            if constexpr (U == Update::weighted) d += w[i] * t;
        }
        m /= static_cast<double>(K);
        if constexpr (U == Update::weighted)
            if (divide) d = inverse != 0.0 ? d * inverse : d / total;
        const V8d theta = b + f.scale * update<U>(f, m, d);
        stats.add(m, theta, b, merged + j, n);
    }
    out = stats;
}

template <int K>
void dispatch(const MergeParams& p, const Fused& f, const float* base, const float* const* x,
              std::size_t count, float* merged, Stats& stats) {
    switch (f.update) {
        case Update::weighted:
            return kernel<K, Update::weighted>(p, f, base, x, count, merged, stats);
        case Update::mean:
            return kernel<K, Update::mean>(p, f, base, x, count, merged, stats);
        case Update::soft:
            return kernel<K, Update::soft>(p, f, base, x, count, merged, stats);
        case Update::hard:
            return kernel<K, Update::hard>(p, f, base, x, count, merged, stats);
        case Update::scaled:
            return kernel<K, Update::scaled>(p, f, base, x, count, merged, stats);
    }
}

}  // namespace

bool fused_pass(const MergeParams& p, const Fused& f, TensorBlocks& in, std::size_t block,
                const BlockSink& out, TensorMergeStats& st) {
    const std::size_t k = in.models();
    if (k == 0 || k > 8) return false;
    std::vector<float> merged(std::min(block, in.numel()));
    Stats stats;
    read_blocks(in, block,
                [&](std::size_t begin, std::size_t count, const float* base,
                    const std::vector<const float*>& x) {
                    with_constant<8>(k, [&](auto K) {
                        dispatch<K()>(p, f, base, x.data(), count, merged.data(), stats);
                    });
                    out(begin, {merged.data(), count});
                });
    stats.finish(st);
    return true;
}

}  // namespace compatbench::merging::last_pass
