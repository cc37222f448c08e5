// ram_fusion (ram_fusion.h). Exact arithmetic in double; in a dtype each step as torch 2
// takes it (in_dtype.h, torch_like.h), with the float32 promotions marked. Compiled with
// -ffp-contract=off, as in_dtype.cpp.
#include "merging/ram_fusion.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace compatbench::merging {

namespace {

using torch_like::Inputs;
using torch_like::Torch;
using torch_like::Values;

bool exact(Torch r) { return r.a == Arithmetic::exact; }

// τ_ij as torch holds it: in double when exact, else θ_ij − θ0_j rounded to the dtype.
double tau(Torch r, const Inputs& v, std::size_t i, std::size_t j) {
    return exact(r) ? static_cast<double>(v.x[i][j]) - v.base[j] : r(v.x[i][j] - v.base[j]);
}

// ram.py's nonzero_mask: |τ| > ε, ε a Python number compared in the dtype.
bool moves(const MergeParams& p, Torch r, double t) {
    return std::abs(t) > (exact(r) ? p.ram_epsilon : static_cast<double>(r.number(p.ram_epsilon)));
}

std::size_t movers(const MergeParams& p, Torch r, const Inputs& v, std::size_t j) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < v.x.size(); ++i) n += moves(p, r, tau(r, v, i, j));
    return n;
}

// ramplus_tl's λ_i = 1 + r · clamp(ρ_i, 0, α), ρ_i = shared_i / max(lone_i, ε): float32 in
// torch (int64 counts clamped by a Python float), double when exact.
std::vector<double> lambdas(const MergeParams& p, Torch r, const Inputs& v) {
    const std::size_t k = v.x.size();
    std::vector<double> shared(k, 0.0), lone(k, 0.0), out(k);
    for (std::size_t j = 0; j < v.n(); ++j) {
        const std::size_t n = movers(p, r, v, j);
        for (std::size_t i = 0; i < k; ++i)
            if (moves(p, r, tau(r, v, i, j))) (n > 1 ? shared : lone)[i] += 1.0;
    }
    for (std::size_t i = 0; i < k; ++i) {
        if (exact(r)) {
            const double rho = shared[i] / std::max(lone[i], p.ram_epsilon);
            out[i] = 1.0 + p.ram_r * std::clamp(rho, 0.0, p.ram_alpha);
            continue;
        }
        const float rho = static_cast<float>(shared[i]) /
                          std::max(static_cast<float>(lone[i]), static_cast<float>(p.ram_epsilon));
        out[i] = 1.0f + static_cast<float>(p.ram_r) *
                            std::clamp(rho, 0.0f, static_cast<float>(p.ram_alpha));
    }
    return out;
}

// ram.py's ram_merge and ramplus_tl_merge: Σ_i over the movers of (τ · unique [· λ_i]) +
// (τ · overlap / n), then θ0 + that. In a dtype RAM's terms and sum are the dtype's; RAM+'s
// lone terms meet float32 λ_i, so its sum and θ are float32.
Values ram(const MergeParams& p, Torch r, const Inputs& v) {
    const bool plus = p.method == Method::ramplus_tl;
    const std::vector<double> lambda = plus ? lambdas(p, r, v) : std::vector<double>{};
    Values theta(v.n());
    for (std::size_t j = 0; j < v.n(); ++j) {
        const std::size_t n = movers(p, r, v, j);
        double sum = 0.0;  // exact
        float acc = 0.0f;  // in the dtype
        for (std::size_t i = 0; i < v.x.size(); ++i) {
            const double t = tau(r, v, i, j);
            if (!moves(p, r, t)) continue;
            const auto tf = static_cast<float>(t), count = static_cast<float>(n);
            if (exact(r))
                sum += n == 1 ? (plus ? t * lambda[i] : t) : t / static_cast<double>(n);
            else
                acc += n == 1 ? (plus ? tf * static_cast<float>(lambda[i]) : tf) : r(tf / count);
        }
        if (exact(r))
            theta[j] = static_cast<float>(v.base[j] + sum);
        else
            theta[j] = plus ? v.base[j] + acc : r(v.base[j] + r(acc));
    }
    return theta;
}

// softmax(x[b, e)) + 1e-8 into out: exactly, or as torch's CPU kernel for a dtype
// (SoftMaxKernel.cpp's last-dimension softmax: in float32, exp(x − max) times the reciprocal
// of their sum, each probability rounded to the dtype; then 1e-8 added in the dtype).
void softmax_eps(Torch r, const Values& x, std::size_t b, std::size_t e, std::vector<double>& out) {
    const float top = *std::max_element(x.begin() + static_cast<std::ptrdiff_t>(b),
                                        x.begin() + static_cast<std::ptrdiff_t>(e));
    double sum = 0.0;
    float sum_f = 0.0f;
    for (std::size_t j = b; j < e; ++j) {
        out[j - b] = exact(r) ? std::exp(static_cast<double>(x[j]) - top)
                              : static_cast<double>(std::exp(x[j] - top));
        sum += out[j - b];
        sum_f += static_cast<float>(out[j - b]);
    }
    for (std::size_t c = 0; c < e - b; ++c)
        out[c] = exact(r) ? out[c] / sum + 1e-8
                          : r(r(static_cast<float>(out[c]) * (1.0f / sum_f)) + r.number(1e-8));
}

// arcee_fusion.py's _compute_importance: |τ_j| · Σ_c p log(p/q) over j's row.
std::vector<double> importance(const TensorScope& s, Torch r, const Inputs& v) {
    const std::size_t n = v.n(), row = s.last_dim > 0 ? s.last_dim : std::max<std::size_t>(n, 1);
    std::vector<double> out(n), p(row), q(row);
    for (std::size_t b = 0; b < n; b += row) {
        const std::size_t e = std::min(n, b + row);
        softmax_eps(r, v.x[0], b, e, p);
        softmax_eps(r, v.base, b, e, q);
        double kl = 0.0;
        for (std::size_t c = 0; c < e - b; ++c)
            kl +=
                exact(r)
                    ? p[c] * std::log(p[c] / q[c])
                    : r(static_cast<float>(p[c]) * r(std::log(r(static_cast<float>(p[c] / q[c])))));
        if (!exact(r)) kl = r(static_cast<float>(kl));
        for (std::size_t j = b; j < e; ++j) {
            const double diff = std::abs(tau(r, v, 0, j));
            out[j] = exact(r) ? diff * kl : r(static_cast<float>(diff * kl));
        }
    }
    return out;
}

// DynamicThresholdFusion: median + 1.5 · (q3 − q1), each at index ⌊q · (n − 1)⌋ of the sorted
// values (q · (n − 1) in float32), found by selection rather than a sort.
double threshold(Torch r, std::vector<double> values) {
    // Three order statistics of the sorted values (torch.sort puts NaN last, as here).
    const auto before = [](double a, double b) {
        return !std::isnan(a) && (std::isnan(b) || a < b);
    };
    const auto at = [&](float q) {
        const auto k = static_cast<std::ptrdiff_t>(q * static_cast<float>(values.size() - 1));
        std::nth_element(values.begin(), values.begin() + k, values.end(), before);
        return values[static_cast<std::size_t>(k)];
    };
    const double median = at(0.5f), q1 = at(0.25f), q3 = at(0.75f);
    if (exact(r)) return median + 1.5 * (q3 - q1);
    const float iqr = r(static_cast<float>(q3 - q1));
    return r(static_cast<float>(median) + r.times(iqr, 1.5));
}

// arcee_fusion.py: θ0 + τ · mask; in a dtype the mask is float32, so θ is θ0 + τ in float32.
Values arcee_fusion(const TensorScope& s, Torch r, const Inputs& v) {
    const std::vector<double> score = importance(s, r, v);
    const double cut = v.n() ? threshold(r, score) : 0.0;
    Values theta(v.n());
    for (std::size_t j = 0; j < v.n(); ++j) {
        const bool kept = score[j] >= cut;
        theta[j] = exact(r) ? (kept ? v.x[0][j] : v.base[j])
                   : kept   ? v.base[j] + static_cast<float>(tau(r, v, 0, j))
                            : v.base[j];
    }
    return theta;
}

}  // namespace

bool is_whole_tensor_method(Method m) {
    return m == Method::ram || m == Method::ramplus_tl || m == Method::arcee_fusion;
}

Values ram_fusion(const MergeParams& p, const TensorScope& s, Torch r, const Inputs& v) {
    if (p.method == Method::arcee_fusion) {
        if (v.x.size() != 1)
            throw std::invalid_argument(s.name +
                                        ": arcee_fusion merges exactly one model "
                                        "besides the base");
        return arcee_fusion(s, r, v);
    }
    return ram(p, r, v);
}

}  // namespace compatbench::merging
