#include "merging/stream.h"

#include <Eigen/Core>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace compatbench::merging {

namespace {
void convert(const TensorRef& t, std::size_t begin, std::size_t count, float* out) {
    const auto raw = t.file->raw(*t.info);
    const std::size_t size = formats::dtype_size(t.info->dtype);
    formats::to_f32(t.info->dtype, raw.data() + begin * size, count, out);
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
        const Eigen::Map<const Eigen::ArrayXf> vi(var.data(), static_cast<Eigen::Index>(c));
        const Eigen::Map<const Eigen::ArrayXf> ci(sabs.data(), static_cast<Eigen::Index>(c));
        const double si = vi.cast<double>().sum(), sc = ci.cast<double>().sum();
        s.interference += si;
        s.cancellation += sc;
        s.dispersion += si - sc;
    }
    return s;
}

}  // namespace compatbench::merging
