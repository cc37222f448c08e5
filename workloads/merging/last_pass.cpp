#include "merging/last_pass.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/constant.h"
#include "merging/in_dtype.h"

namespace compatbench::merging::last_pass {

void Stats::finish(TensorMergeStats& st) const {
    st.mean_tau_sq = sums == Sums::lanes ? Lanes{mean_tau_lanes}.total() : mean_tau_sq;
    st.update_sq = sums == Sums::lanes ? Lanes{update_lanes}.total() : update_sq;
    for (std::size_t l = 0; l < 8; ++l) st.kept += static_cast<std::uint64_t>(-changed[l]);
}

Drop::Drop(const MergeParams& p, const std::string& tensor, std::size_t models) {
    const double keep = 1.0 - p.drop;
    rate.keep = keep;
    rate.inverse = exact_inverse(keep);
    rate.below = draws_below(keep);
    for (std::size_t i = 0; i < models; ++i)
        streams.push_back(p.seed ^ fnv1a64(tensor) ^ splitmix64(i + 1));
}

namespace {

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
    if constexpr (U == Update::weighted || U == Update::dropped || U == Update::ties) return d;
    if constexpr (U == Update::mean) return m;
    if constexpr (U == Update::scaled) return m * f.mean_scale;
    const V8l sign = V8l{} + std::numeric_limits<long long>::min(), mb = bits(m);
    const V8d mag = value(mb & ~sign);
    const V8l keep = mag > f.lambda;
    if constexpr (U == Update::hard) return value(mb & keep);
    return value(((bits(mag - f.lambda) & ~sign) | (mb & sign)) & keep);
}

// Drop's operator() for 8 coordinates of model i, from the first's point in its stream
// (stream_i + j0): the kept τ rescaled, +0 for the others.
V8d dropped(const Drop::Rate& rate, std::uint64_t first, const V8d& t) {
    const V8u at = V8u{0, 1, 2, 3, 4, 5, 6, 7} + first;
    const V8l kept = (splitmix64_lanes(at) >> 11) < rate.below;
    return value(bits(rate.inverse != 0.0 ? t * rate.inverse : t / rate.keep) & kept);
}

// τ_ij of coordinates j0 .. j0 + 7 where TIES keeps it (`kept`: model i's bits), +0 elsewhere.
V8d selected(const std::uint64_t* kept_bits, std::size_t j0, const V8d& t) {
    const auto byte =
        static_cast<long long>((kept_bits[j0 >> 6] >> (j0 & 63)) & 0xff);  // j0 % 8 = 0
    const V8l kept = ((V8l{} + byte) & V8l{1, 2, 4, 8, 16, 32, 64, 128}) != 0;
    return value(bits(t) & kept);
}

// generalized.cpp's combine under sign consensus and unit weights, for 8 coordinates: the
// selected τ_i (s) that agree with the sign of their sum, summed in model order, ÷ how many
// (1 or 1/2 for K <= 2, as there) for `normalize: mean`.
template <int K>
V8d consensus(const V8d (&s)[K], const V8d& sum, bool mean) {
    V8d delta = {}, divisor = {};
    const V8l negative = sum < 0.0;
    for (int i = 0; i < K; ++i) {
        const V8l agrees = (s[i] != 0.0) & ((s[i] < 0.0) == negative);
        delta += value(bits(s[i]) & agrees);
        divisor += value(bits(V8d{} + 1.0) & agrees);
    }
    if (!mean) return delta;
    if constexpr (K <= 2) return delta * (divisor == 2.0 ? V8d{} + 0.5 : V8d{} + 1.0);
    return delta / (divisor == 0.0 ? V8d{} + 1.0 : divisor);
}

// Per group of 8 coordinates, as tensor_merge.cpp's arrays do per coordinate: τ_i = θ_i − θ0
// in double, τ̄ = (0 + τ_1 + … + τ_K) / K, d = (0 + w_1 τ_1 + … + w_K τ_K) [/ Σ w] (DARE:
// the dropped τ_i), θ = θ0 + scale · update (SLERP: wa θ_1 + wb θ_2). `begin`: the index of
// the block's first coordinate in the tensor (DARE's draws).
template <int K, Update U, Arithmetic A = Arithmetic::exact>
void kernel(const MergeParams& p, const Fused& f, std::size_t begin, const float* base,
            const float* const* x, std::size_t count, float* merged, Stats& out) {
    Stats stats = out;  // in registers for the loop
    double w[K];
    double total = 0.0;
    for (int i = 0; i < K; ++i) {
        w[i] = p.weights.empty() ? 1.0 : p.weights.at(static_cast<std::size_t>(i));
        total += w[i];
    }
    const bool divide = p.normalize == Normalize::mean && std::abs(total) >= 1e-8;  // mergekit
    const double inverse = exact_inverse(total);
    const Drop::Rate drop = f.drop ? f.drop->rate : Drop::Rate{};  // DARE's, in registers
    std::uint64_t stream[K] = {};
    for (int i = 0; i < K && f.drop; ++i) stream[i] = f.drop->streams[static_cast<std::size_t>(i)];
    for (std::size_t j = 0; j < count; j += 8) {
        const std::size_t n = count - j < 8 ? count - j : 8;
        const V8d b = widen(load<V8f>(base + j, n));
        V8d m = {}, d = {}, xs[K], s[K];  // xs: SLERP's, s: TIES's
        for (int i = 0; i < K; ++i) {
            const V8f xf = load<V8f>(x[i] + j, n);
            const V8d xi = widen(xf), t = xi - b;
            if constexpr (U == Update::slerp)
                xs[i] = A == Arithmetic::exact || !f.round_inputs ? xi : widen(rounded<A>(xf));
            m += t;
            if constexpr (U == Update::weighted) d += w[i] * t;
            if constexpr (U == Update::dropped) d += dropped(drop, stream[i] + begin + j, t);
            if constexpr (U == Update::ties) {
                s[i] =
                    f.kept[i] ? selected(f.kept[i], begin + j, f.scales ? t * f.scales[i] : t) : t;
                d += s[i];
            }
        }
        m /= static_cast<double>(K);
        if constexpr (U == Update::weighted || U == Update::dropped)
            if (divide) d = inverse != 0.0 ? d * inverse : d / total;
        if constexpr (U == Update::ties) d = consensus<K>(s, d, p.normalize == Normalize::mean);
        V8d theta;
        if constexpr (U == Update::slerp)
            theta = f.wa * xs[0] + f.wb * xs[K - 1];  // K = 2
        else
            theta = b + f.scale * update<U>(f, m, d);
        if constexpr (A != Arithmetic::exact)  // float32, then the dtype
            theta = widen(rounded<A>(__builtin_convertvector(theta, V8f)));
        stats.add(m, theta, b, merged + j, n);
    }
    out = stats;
}

template <int K>
void dispatch(const MergeParams& p, const Fused& f, std::size_t begin, const float* base,
              const float* const* x, std::size_t count, float* merged, Stats& stats) {
    switch (f.update) {
        case Update::weighted:
            return kernel<K, Update::weighted>(p, f, begin, base, x, count, merged, stats);
        case Update::mean:
            return kernel<K, Update::mean>(p, f, begin, base, x, count, merged, stats);
        case Update::soft:
            return kernel<K, Update::soft>(p, f, begin, base, x, count, merged, stats);
        case Update::hard:
            return kernel<K, Update::hard>(p, f, begin, base, x, count, merged, stats);
        case Update::scaled:
            return kernel<K, Update::scaled>(p, f, begin, base, x, count, merged, stats);
        case Update::dropped:
            return kernel<K, Update::dropped>(p, f, begin, base, x, count, merged, stats);
        case Update::ties:
            return kernel<K, Update::ties>(p, f, begin, base, x, count, merged, stats);
        case Update::slerp:
            if constexpr (K == 2) {
                if (f.round == Arithmetic::exact)
                    return kernel<K, Update::slerp>(p, f, begin, base, x, count, merged, stats);
                return with_dtype(f.round, [&](auto A) {
                    kernel<K, Update::slerp, A()>(p, f, begin, base, x, count, merged, stats);
                });
            }
            throw std::logic_error("SLERP's kernel merges exactly 2 models");
    }
}

}  // namespace

bool fused_pass(const MergeParams& p, const Fused& f, TensorBlocks& in, std::size_t block,
                const BlockSink& out, TensorMergeStats& st) {
    const std::size_t k = in.models();
    if (k == 0 || k > 8) return false;
    if (f.update == Update::slerp && k != 2) return false;
    if (f.update == Update::dropped || f.update == Update::ties)  // the arrays weigh each τ
        for (const double w : p.weights)
            if (w != 1.0) return false;
    std::vector<float> merged(std::min(block, in.numel()));
    Stats stats(st.sums);
    read_blocks(in, block,
                [&](std::size_t begin, std::size_t count, const float* base,
                    const std::vector<const float*>& x) {
                    with_constant<8>(k, [&](auto K) {
                        dispatch<K()>(p, f, begin, base, x.data(), count, merged.data(), stats);
                    });
                    out(begin, {merged.data(), count});
                });
    stats.finish(st);
    return true;
}

}  // namespace compatbench::merging::last_pass
