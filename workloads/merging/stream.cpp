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

// The interference kernel (methods.md §3.1), the one every caller uses. Per element of a
// block: τ_i = model_i - base, τ̄, mean |τ|, I = mean (τ_i - τ̄)² (two passes: no
// cancellation between E[τ²] and τ̄²), C = (mean |τ|)² - τ̄² clamped to [0, I] against
// rounding, and whether the τ_i have both signs; the block's I and C summed in double.
// K > 0 fixes the model count at compile time (unrolled); K = 0 takes `k` at run time.
template <formats::DType D, int K>
void add_block(const std::uint8_t* base, const std::uint8_t* const* models, int k,
               std::size_t begin, std::size_t c, float* scratch, float* vi, float* vc,
               InterferenceSums& s) {
    const int kk = K ? K : k;
    const float inv_k = 1.0f / static_cast<float>(kk);
    std::uint32_t conflicts = 0;  // 32-bit lanes like the floats' (c <= kBlock)
    for (std::size_t j = 0; j < c; ++j) {
        float fixed[K ? K : 1];  // the τ_i in registers when K is known
        float* t = K ? fixed : scratch;
        const float b = load<D>(base, begin + j);
        float sum = 0.0f, sabs = 0.0f;
        unsigned positive = 0, negative = 0;  // bitwise, not ||: the loop stays vectorised
        for (int i = 0; i < kk; ++i) {
            t[i] = load<D>(models[i], begin + j) - b;
            sum += t[i];
            sabs += std::abs(t[i]);
            positive |= t[i] > 0.0f;
            negative |= t[i] < 0.0f;
        }
        const float mean = sum * inv_k, mabs = sabs * inv_k;
        float var = 0.0f;
        for (int i = 0; i < kk; ++i) var += (t[i] - mean) * (t[i] - mean);
        var *= inv_k;
        vi[j] = var;
        vc[j] = std::min(std::max(0.0f, (mabs - std::abs(mean)) * (mabs + std::abs(mean))), var);
        conflicts += positive & negative;
    }
    const double si = sum_wide(vi, c), sc = sum_wide(vc, c);
    s.interference += si;
    s.cancellation += sc;
    s.dispersion += si - sc;
    s.sign_conflicts += conflicts;
}

constexpr std::size_t kBlock = 2048;

// Every element of n, straight from the raw bytes (BF16 or F32, the dtypes read in place).
template <formats::DType D, int K>
InterferenceSums sums_in_place(const std::uint8_t* base, const std::uint8_t* const* models, int k,
                               std::size_t n) {
    float vi[kBlock], vc[kBlock];
    std::vector<float> t(static_cast<std::size_t>(k));
    InterferenceSums s;
    s.count = n;
    for (std::size_t begin = 0; begin < n; begin += kBlock)
        add_block<D, K>(base, models, k, begin, std::min(kBlock, n - begin), t.data(), vi, vc, s);
    return s;
}

// The kernel for K models known at compile time up to 8, else at run time.
template <formats::DType D>
InterferenceSums sums_for_k(const std::uint8_t* base, const std::uint8_t* const* models, int k,
                            std::size_t n) {
    switch (k) {
        case 1:
            return sums_in_place<D, 1>(base, models, k, n);
        case 2:
            return sums_in_place<D, 2>(base, models, k, n);
        case 3:
            return sums_in_place<D, 3>(base, models, k, n);
        case 4:
            return sums_in_place<D, 4>(base, models, k, n);
        case 5:
            return sums_in_place<D, 5>(base, models, k, n);
        case 6:
            return sums_in_place<D, 6>(base, models, k, n);
        case 7:
            return sums_in_place<D, 7>(base, models, k, n);
        case 8:
            return sums_in_place<D, 8>(base, models, k, n);
        default:
            return sums_in_place<D, 0>(base, models, k, n);
    }
}

// Other dtypes (F16, F64): a block at a time converted to float32, then the same kernel.
InterferenceSums sums_converted(const TensorRef& base, std::span<const TensorRef> models) {
    const std::size_t n = base.info->numel(), k = models.size();
    std::vector<float> b(kBlock), vi(kBlock), vc(kBlock), t(k);
    std::vector<std::vector<float>> m(k, std::vector<float>(kBlock));
    std::vector<const std::uint8_t*> ptrs(k);
    for (std::size_t i = 0; i < k; ++i)
        ptrs[i] = reinterpret_cast<const std::uint8_t*>(m[i].data());
    const auto* bp = reinterpret_cast<const std::uint8_t*>(b.data());
    InterferenceSums s;
    s.count = n;
    for (std::size_t begin = 0; begin < n; begin += kBlock) {
        const std::size_t c = std::min(kBlock, n - begin);
        convert(base, begin, c, b.data());
        for (std::size_t i = 0; i < k; ++i) convert(models[i], begin, c, m[i].data());
        add_block<formats::DType::F32, 0>(bp, ptrs.data(), static_cast<int>(k), 0, c, t.data(),
                                          vi.data(), vc.data(), s);
    }
    return s;
}
}  // namespace

InterferenceSums stream_interference(const TensorRef& base, std::span<const TensorRef> models) {
    const std::size_t n = base.info->numel();
    for (const auto& m : models) {
        if (m.info->numel() != n)
            throw std::invalid_argument(m.file->path() + ": tensor '" + m.info->name + "' has " +
                                        std::to_string(m.info->numel()) + " values, the base " +
                                        std::to_string(n));
    }
    if (models.empty()) return {};
    const auto same = [&](formats::DType d) {
        if (base.info->dtype != d) return false;
        for (const auto& m : models)
            if (m.info->dtype != d) return false;
        return true;
    };
    std::vector<const std::uint8_t*> ptrs;
    for (const auto& m : models) ptrs.push_back(m.file->raw(*m.info).data());
    const std::uint8_t* b = base.file->raw(*base.info).data();
    const int k = static_cast<int>(models.size());
    if (same(formats::DType::BF16)) return sums_for_k<formats::DType::BF16>(b, ptrs.data(), k, n);
    if (same(formats::DType::F32)) return sums_for_k<formats::DType::F32>(b, ptrs.data(), k, n);
    return sums_converted(base, models);
}

InterferenceSums interference(std::span<const float> base,
                              std::span<const std::span<const float>> models) {
    std::vector<const std::uint8_t*> ptrs;
    for (std::size_t i = 0; i < models.size(); ++i) {
        if (models[i].size() != base.size())
            throw std::invalid_argument("model " + std::to_string(i) + " has " +
                                        std::to_string(models[i].size()) + " values, the base " +
                                        std::to_string(base.size()));
        ptrs.push_back(reinterpret_cast<const std::uint8_t*>(models[i].data()));
    }
    if (models.empty()) return {};
    return sums_for_k<formats::DType::F32>(reinterpret_cast<const std::uint8_t*>(base.data()),
                                           ptrs.data(), static_cast<int>(models.size()),
                                           base.size());
}

}  // namespace compatbench::merging
