#include "merging/stream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace compatbench::merging {

namespace {
void convert(const TensorRef& t, std::size_t begin, std::size_t count, float* out) {
    const auto raw = t.file->raw(*t.info);
    const std::size_t size = formats::dtype_size(t.info->dtype);
    formats::to_f32(t.info->dtype, raw.data() + begin * size, count, out);
}
// Σ v in double with 8 independent accumulators (lanes the compiler can vectorise; one
// running double sum would be a serial chain of additions).
double sum_wide(const float* v, std::size_t n) {
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l)
            acc[l] += static_cast<double>(v[j + static_cast<std::size_t>(l)]);
    double total =
        ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; j < n; ++j) total += static_cast<double>(v[j]);
    return total;
}
// Element j of a BF16 or F32 tensor as float (unaligned, little-endian host).
template <formats::DType D>
inline float load(const std::uint8_t* p, std::size_t j) {
    if constexpr (D == formats::DType::BF16) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * j, 2);
        const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    } else {
        float f;
        std::memcpy(&f, p + 4 * j, 4);
        return f;
    }
}

// One pass over the raw bytes for K models of one dtype: per element, τ_i, τ̄, mean |τ|,
// I = mean (τ_i - τ̄)² and C, straight into two small buffers summed in double.
template <formats::DType D, int K>
InterferenceSums fused(const std::uint8_t* base, const std::uint8_t* const* models, std::size_t n) {
    constexpr std::size_t kBlock = 2048;
    constexpr float inv_k = 1.0f / K;
    float vi[kBlock], vc[kBlock];
    InterferenceSums s;
    s.count = n;
    for (std::size_t begin = 0; begin < n; begin += kBlock) {
        const std::size_t c = std::min(kBlock, n - begin);
        for (std::size_t j = 0; j < c; ++j) {
            const float b = load<D>(base, begin + j);
            float t[K];
            float sum = 0.0f, sabs = 0.0f;
            for (int i = 0; i < K; ++i) {
                t[i] = load<D>(models[i], begin + j) - b;
                sum += t[i];
                sabs += std::abs(t[i]);
            }
            const float mean = sum * inv_k, mabs = sabs * inv_k;
            float var = 0.0f;
            for (int i = 0; i < K; ++i) var += (t[i] - mean) * (t[i] - mean);
            var *= inv_k;
            vi[j] = var;
            vc[j] =
                std::min(std::max(0.0f, (mabs - std::abs(mean)) * (mabs + std::abs(mean))), var);
        }
        const double si = sum_wide(vi, c), sc = sum_wide(vc, c);
        s.interference += si;
        s.cancellation += sc;
        s.dispersion += si - sc;
    }
    return s;
}

template <formats::DType D>
bool try_fused(const TensorRef& base, std::span<const TensorRef> models, InterferenceSums& out) {
    const std::uint8_t* ptrs[8];
    for (std::size_t i = 0; i < models.size(); ++i)
        ptrs[i] = models[i].file->raw(*models[i].info).data();
    const std::uint8_t* b = base.file->raw(*base.info).data();
    const std::size_t n = base.info->numel();
    switch (models.size()) {
        case 1:
            out = fused<D, 1>(b, ptrs, n);
            return true;
        case 2:
            out = fused<D, 2>(b, ptrs, n);
            return true;
        case 3:
            out = fused<D, 3>(b, ptrs, n);
            return true;
        case 4:
            out = fused<D, 4>(b, ptrs, n);
            return true;
        case 5:
            out = fused<D, 5>(b, ptrs, n);
            return true;
        case 6:
            out = fused<D, 6>(b, ptrs, n);
            return true;
        case 7:
            out = fused<D, 7>(b, ptrs, n);
            return true;
        case 8:
            out = fused<D, 8>(b, ptrs, n);
            return true;
        default:
            return false;
    }
}
}  // namespace

InterferenceSums stream_interference(const TensorRef& base, std::span<const TensorRef> models,
                                     std::size_t chunk) {
    const std::size_t n = base.info->numel();
    for (const auto& m : models) {
        if (m.info->numel() != n)
            throw std::invalid_argument(m.file->path() + ": tensor '" + m.info->name + "' has " +
                                        std::to_string(m.info->numel()) + " values, the base " +
                                        std::to_string(n));
    }
    // Fast path: every tensor BF16, or every tensor F32, and K <= 8.
    const auto same = [&](formats::DType d) {
        if (base.info->dtype != d) return false;
        for (const auto& m : models)
            if (m.info->dtype != d) return false;
        return true;
    };
    InterferenceSums fast;
    if (same(formats::DType::BF16) && try_fused<formats::DType::BF16>(base, models, fast))
        return fast;
    if (same(formats::DType::F32) && try_fused<formats::DType::F32>(base, models, fast))
        return fast;
    const std::size_t k = models.size();
    const float inv_k = 1.0f / static_cast<float>(k);
    std::vector<float> b(chunk), x(chunk), sum(chunk), sabs(chunk), var(chunk);
    std::vector<std::vector<float>> tau(k, std::vector<float>(chunk));
    InterferenceSums s;
    s.count = n;
    for (std::size_t begin = 0; begin < n; begin += chunk) {
        const std::size_t c = std::min(chunk, n - begin);
        convert(base, begin, c, b.data());
        std::fill_n(sum.data(), c, 0.0f);
        std::fill_n(sabs.data(), c, 0.0f);
        std::fill_n(var.data(), c, 0.0f);
        for (std::size_t i = 0; i < k; ++i) {
            float* t = tau[i].data();
            convert(models[i], begin, c, t);
            for (std::size_t j = 0; j < c; ++j) {
                t[j] -= b[j];
                sum[j] += t[j];
                sabs[j] += std::abs(t[j]);
            }
        }
        // I_j = mean_i (τ_ij - τ̄_j)² (two passes: no cancellation between E[τ²] and τ̄²);
        // C_j = (mean |τ|)² - τ̄², D_j = I_j - C_j, both clamped at 0 against rounding.
        for (std::size_t i = 0; i < k; ++i) {
            const float* t = tau[i].data();
            for (std::size_t j = 0; j < c; ++j) {
                const float d = t[j] - sum[j] * inv_k;
                var[j] += d * d;
            }
        }
        for (std::size_t j = 0; j < c; ++j) {
            const float mean = sum[j] * inv_k, mabs = sabs[j] * inv_k;
            var[j] *= inv_k;
            const float cancel = std::max(0.0f, (mabs - std::abs(mean)) * (mabs + std::abs(mean)));
            sabs[j] = std::min(cancel, var[j]);  // reuse: C_j
        }
        const double si = sum_wide(var.data(), c), sc = sum_wide(sabs.data(), c);
        s.interference += si;
        s.cancellation += sc;
        s.dispersion += si - sc;
    }
    return s;
}

}  // namespace compatbench::merging
