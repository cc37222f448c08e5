#include "merging/stream.h"

#include "common/constant.h"
#include "common/lanes.h"
#include "formats/tensor_reader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace compatbench::merging {

namespace {
// Σ a and Σ b in double, each in 8 lanes (lane l adds the elements j ≡ l mod 8, the lanes
// then added pairwise): one running double sum would be a serial chain of additions. The
// two sums go side by side, as 8-double vectors, so their chains overlap.
void sum_wide(const float* a, const float* b, std::size_t n, double& sa, double& sb) {
    V8d x = {}, y = {};
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        V8f va, vb;
        std::memcpy(&va, a + j, sizeof va);
        std::memcpy(&vb, b + j, sizeof vb);
        x += __builtin_convertvector(va, V8d);
        y += __builtin_convertvector(vb, V8d);
    }
    sa = Lanes{x}.total();
    sb = Lanes{y}.total();
    for (; j < n; ++j) {
        sa += static_cast<double>(a[j]);
        sb += static_cast<double>(b[j]);
    }
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
    double si, sc;
    sum_wide(vi, vc, c, si, sc);
    s.interference += si;
    s.cancellation += sc;
    s.dispersion += si - sc;
    s.sign_conflicts += conflicts;
}

constexpr std::size_t kBlock = 2048;

// Every element of n, a block at a time, the raw bytes (BF16 or F32, the dtypes read in
// place) from fetch(begin, count, base, models).
template <formats::DType D, int K, class Fetch>
InterferenceSums sums_in_place(Fetch& fetch, int k, std::size_t n) {
    float vi[kBlock], vc[kBlock];
    std::vector<float> t(static_cast<std::size_t>(k));
    std::vector<const std::uint8_t*> models(static_cast<std::size_t>(k));
    const std::uint8_t* base = nullptr;
    InterferenceSums s;
    s.count = n;
    for (std::size_t begin = 0; begin < n; begin += kBlock) {
        const std::size_t c = std::min(kBlock, n - begin);
        fetch(begin, c, base, models.data());
        add_block<D, K>(base, models.data(), k, 0, c, t.data(), vi, vc, s);
    }
    return s;
}

// The kernel for K models known at compile time up to 8, else at run time.
template <formats::DType D, class Fetch>
InterferenceSums sums_for_k(Fetch& fetch, int k, std::size_t n) {
    InterferenceSums s;
    if (!with_constant<8>(static_cast<std::size_t>(k),
                          [&](auto K) { s = sums_in_place<D, K()>(fetch, k, n); }))
        s = sums_in_place<D, 0>(fetch, k, n);
    return s;
}

// Checkpoint tensors read a chunk at a time (formats::TensorReader) into buffers reused
// across tensors; blocks in the dtype when base and models share BF16 or F32, else
// converted to float32.
class CheckpointFetch {
  public:
    CheckpointFetch(const TensorRef& base, std::span<const TensorRef> models, bool convert) {
        thread_local std::vector<std::vector<std::uint8_t>> raw;
        thread_local std::vector<std::vector<float>> floats;
        raw.resize(models.size() + 1);
        if (convert) floats.resize(models.size() + 1, std::vector<float>(kBlock));
        readers_.emplace_back(*base.file, *base.info, raw[0]);
        for (std::size_t i = 0; i < models.size(); ++i)
            readers_.emplace_back(*models[i].file, *models[i].info, raw[i + 1]);
        floats_ = convert ? &floats : nullptr;
    }
    void operator()(std::size_t begin, std::size_t c, const std::uint8_t*& base,
                    const std::uint8_t** models) {
        for (std::size_t r = 0; r < readers_.size(); ++r) {
            const std::uint8_t* p = readers_[r].elements(begin, c);
            if (floats_) {
                float* f = (*floats_)[r].data();
                formats::to_f32(readers_[r].dtype(), p, c, f);
                p = reinterpret_cast<const std::uint8_t*>(f);
            }
            (r == 0 ? base : models[r - 1]) = p;
        }
    }

  private:
    std::vector<formats::TensorReader> readers_;  // the base, then each model
    std::vector<std::vector<float>>* floats_;
};
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
    const int k = static_cast<int>(models.size());
    if (same(formats::DType::BF16)) {
        CheckpointFetch fetch(base, models, false);
        return sums_for_k<formats::DType::BF16>(fetch, k, n);
    }
    if (same(formats::DType::F32)) {
        CheckpointFetch fetch(base, models, false);
        return sums_for_k<formats::DType::F32>(fetch, k, n);
    }
    CheckpointFetch fetch(base, models, true);  // F16, F64 or mixed: through float32
    return sums_in_place<formats::DType::F32, 0>(fetch, k, n);
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
    const auto* b = reinterpret_cast<const std::uint8_t*>(base.data());
    auto fetch = [&](std::size_t begin, std::size_t, const std::uint8_t*& bp,
                     const std::uint8_t** mp) {
        bp = b + 4 * begin;
        for (std::size_t i = 0; i < ptrs.size(); ++i) mp[i] = ptrs[i] + 4 * begin;
    };
    return sums_for_k<formats::DType::F32>(fetch, static_cast<int>(models.size()), base.size());
}

}  // namespace compatbench::merging
