#include "merging/operators.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "common/hash.h"

namespace compatbench::merging {

namespace {

constexpr const char* kNames[] = {"task_arithmetic", "ties",  "dare",       "slerp",
                                  "model_stock",     "prism", "prism_hard", "norm_matched"};

using Vec = std::vector<double>;

double dot(const Vec& a, const Vec& b) {
    double s = 0.0;
    for (std::size_t j = 0; j < a.size(); ++j) s += a[j] * b[j];
    return s;
}

// Keeps the k largest |v| (ties: the lower index), zeroes the rest.
void trim_top(Vec& v, double density) {
    const std::size_t n = v.size();
    const auto k = static_cast<std::size_t>(std::llround(density * static_cast<double>(n)));
    if (k >= n) return;
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                     [&](std::size_t a, std::size_t b) {
                         const double x = std::abs(v[a]), y = std::abs(v[b]);
                         return x > y || (x == y && a < b);
                     });
    for (std::size_t i = k; i < n; ++i) v[idx[i]] = 0.0;
}

// TIES on (already trimmed) task vectors: elect a sign per coordinate (0 -> +), average the
// values that agree with it (§3.2).
Vec ties_merge(const std::vector<Vec>& taus) {
    const std::size_t n = taus.front().size();
    Vec delta(n, 0.0);
    for (std::size_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (const auto& t : taus) sum += t[j];
        const double sign = sum < 0.0 ? -1.0 : 1.0;
        double agree = 0.0;
        int count = 0;
        for (const auto& t : taus) {
            if (t[j] != 0.0 && (t[j] < 0.0 ? -1.0 : 1.0) == sign) {
                agree += t[j];
                ++count;
            }
        }
        delta[j] = count ? agree / count : 0.0;
    }
    return delta;
}

Vec mean_of(const std::vector<Vec>& taus) {
    Vec m(taus.front().size(), 0.0);
    for (const auto& t : taus)
        for (std::size_t j = 0; j < m.size(); ++j) m[j] += t[j];
    for (double& x : m) x /= static_cast<double>(taus.size());
    return m;
}

// Σ_i w_i τ_i, divided by Σ_i w_i for `normalize: mean` (§3.2 task arithmetic).
Vec weighted(const std::vector<Vec>& taus, const MergeParams& p) {
    Vec d(taus.front().size(), 0.0);
    double total = 0.0;
    for (std::size_t i = 0; i < taus.size(); ++i) {
        const double w = p.weights.empty() ? 1.0 : p.weights.at(i);
        total += w;
        for (std::size_t j = 0; j < d.size(); ++j) d[j] += w * taus[i][j];
    }
    if (p.normalize == Normalize::mean && total != 0.0)
        for (double& x : d) x /= total;
    return d;
}

// The PRISM threshold of one tensor (§3.2): κ σ sqrt(2 ln n), 0 below the ρ-gate, lowered for
// a matrix to keep at least `keep_floor` of its coordinates.
double prism_lambda(const MergeParams& p, const TensorScope& s, const std::vector<Vec>& taus,
                    const Vec& m) {
    const std::size_t n = m.size();
    if (s.merge_rho < p.rho_gate || n < 2) return 0.0;
    // Ī of this tensor (population variance over the K task vectors).
    double sum_var = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        double sq = 0.0;
        for (const auto& t : taus) sq += t[j] * t[j];
        sum_var += std::max(0.0, sq / static_cast<double>(taus.size()) - m[j] * m[j]);
    }
    const double sigma = std::sqrt(sum_var / static_cast<double>(n));
    double lambda = p.kappa * sigma * std::sqrt(2.0 * std::log(static_cast<double>(n)));
    if (s.matrix && p.keep_floor > 0.0) {
        const auto floor_k =
            static_cast<std::size_t>(std::ceil(p.keep_floor * static_cast<double>(n)));
        std::size_t survive = 0;
        for (double x : m) survive += std::abs(x) > lambda;
        if (survive < floor_k && floor_k < n) {
            Vec mag(n);
            for (std::size_t j = 0; j < n; ++j) mag[j] = std::abs(m[j]);
            std::nth_element(mag.begin(), mag.begin() + static_cast<std::ptrdiff_t>(floor_k),
                             mag.end(), std::greater<>());
            lambda = mag[floor_k];  // the (k+1)-th largest: exactly the top k lie above it
        }
    }
    return lambda;
}

}  // namespace

const char* method_name(Method m) { return kNames[static_cast<int>(m)]; }

const std::vector<std::string>& method_names() {
    static const std::vector<std::string> names(std::begin(kNames), std::end(kNames));
    return names;
}

bool reads_merge_rho(Method m) {
    return m == Method::prism || m == Method::prism_hard || m == Method::norm_matched;
}

Method method_from_name(const std::string& name) {
    for (int i = 0; i < 8; ++i)
        if (name == kNames[i]) return static_cast<Method>(i);
    std::string known;
    for (const char* n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
    throw std::invalid_argument("unknown merge method '" + name + "' (known: " + known + ")");
}

bool in_scope(const std::string& name, const std::vector<std::string>& patterns) {
    if (patterns.empty()) return true;
    for (const auto& p : patterns)
        if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
    return false;
}

namespace {

// θ0 + scale · delta, in double.
Vec from_delta(std::span<const float> base, const Vec& delta, double scale) {
    Vec theta(base.size());
    for (std::size_t j = 0; j < base.size(); ++j) theta[j] = base[j] + scale * delta[j];
    return theta;
}

// DARE: each τ_i keeps a coordinate with probability 1 - p, rescaled by 1 / (1 - p); the
// mask is drawn per (seed, tensor, model), the same whatever rank or order merges it.
void dare_drop(const MergeParams& p, const TensorScope& s, std::vector<Vec>& taus) {
    const double keep = 1.0 - p.drop;
    for (std::size_t i = 0; i < taus.size(); ++i) {
        std::uint64_t state = p.seed ^ fnv1a64(s.name) ^ splitmix64(i + 1);
        for (auto& t : taus[i]) {
            const bool kept = unit_double(splitmix64(state++)) < keep;
            t = kept && keep > 0.0 ? t / keep : 0.0;
        }
    }
}

// SLERP of the two models' values (not their task vectors) at t.
Vec slerp(const MergeParams& p, const TensorScope& s,
          std::span<const std::span<const float>> models) {
    if (models.size() != 2) throw std::invalid_argument(s.name + ": SLERP merges exactly 2 models");
    Vec a(models[0].begin(), models[0].end()), b(models[1].begin(), models[1].end());
    const double na = std::sqrt(dot(a, a)), nb = std::sqrt(dot(b, b));
    const double cos = na > 0 && nb > 0 ? std::clamp(dot(a, b) / (na * nb), -1.0, 1.0) : 1.0;
    double wa = 1.0 - p.t, wb = p.t;
    if (std::abs(cos) <= 0.9995) {
        const double omega = std::acos(cos), so = std::sin(omega);
        wa = std::sin((1.0 - p.t) * omega) / so;
        wb = std::sin(p.t * omega) / so;
    }
    Vec theta(a.size());
    for (std::size_t j = 0; j < a.size(); ++j) theta[j] = wa * a[j] + wb * b[j];
    return theta;
}

// Model Stock: t · mean θ_i + (1 - t) · θ0 = θ0 + t · τ̄, t from the mean pairwise cosine.
double model_stock_t(const std::vector<Vec>& taus) {
    const std::size_t k = taus.size();
    double cos_sum = 0.0;
    int pairs = 0;
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t q = i + 1; q < k; ++q) {
            const double ni = std::sqrt(dot(taus[i], taus[i])),
                         nq = std::sqrt(dot(taus[q], taus[q]));
            cos_sum += ni > 0 && nq > 0 ? dot(taus[i], taus[q]) / (ni * nq) : 0.0;
            ++pairs;
        }
    const double c = pairs ? cos_sum / pairs : 1.0;
    const double denom = 1.0 + (static_cast<double>(k) - 1.0) * c;
    return denom != 0.0 ? static_cast<double>(k) * c / denom : 0.0;
}

// PRISM (soft threshold of τ̄ at λ), PRISM-hard (hard threshold), or the norm-matched mean
// (τ̄ scaled to the PRISM update's norm).
Vec prism_delta(const MergeParams& p, const TensorScope& s, const std::vector<Vec>& taus,
                const Vec& m, TensorMergeStats& st) {
    const std::size_t n = m.size();
    st.lambda = prism_lambda(p, s, taus, m);
    Vec delta(n);
    for (std::size_t j = 0; j < n; ++j) {
        const double mag = std::abs(m[j]);
        if (p.method == Method::prism_hard)
            delta[j] = mag > st.lambda ? m[j] : 0.0;
        else
            delta[j] = mag > st.lambda ? std::copysign(mag - st.lambda, m[j]) : 0.0;
    }
    if (p.method == Method::norm_matched) {
        const double nm = std::sqrt(st.mean_tau_sq);
        const double scale = nm > 0 ? std::sqrt(dot(delta, delta)) / nm : 0.0;
        for (std::size_t j = 0; j < n; ++j) delta[j] = m[j] * scale;
    }
    return delta;
}

// The merged values θ of one in-scope tensor, in double (§3.2). `taus` may be modified.
Vec merged_values(const MergeParams& p, const TensorScope& s, std::span<const float> base,
                  std::span<const std::span<const float>> models, std::vector<Vec>& taus,
                  const Vec& m, TensorMergeStats& st) {
    switch (p.method) {
        case Method::task_arithmetic:
            return from_delta(base, weighted(taus, p), p.coef);
        case Method::ties:
            for (auto& t : taus) trim_top(t, p.density);
            return from_delta(base, ties_merge(taus), p.coef);
        case Method::dare:
            dare_drop(p, s, taus);
            return from_delta(base, p.dare_then_ties ? ties_merge(taus) : weighted(taus, p),
                              p.coef);
        case Method::slerp:
            return slerp(p, s, models);
        case Method::model_stock:
            return from_delta(base, m, model_stock_t(taus));
        case Method::prism:
        case Method::prism_hard:
        case Method::norm_matched:
            return from_delta(base, prism_delta(p, s, taus, m, st), p.coef);
    }
    throw std::logic_error("merge method without a rule");
}

}  // namespace

TensorMergeStats merge_tensor(const MergeParams& p, const TensorScope& s,
                              std::span<const float> base,
                              std::span<const std::span<const float>> models,
                              std::span<float> out) {
    const std::size_t n = base.size();
    const std::size_t k = models.size();
    if (k == 0) throw std::invalid_argument(s.name + ": no models to merge");
    if (out.size() != n) throw std::invalid_argument(s.name + ": output size differs");
    for (std::size_t i = 0; i < k; ++i) {
        if (models[i].size() != n)
            throw std::invalid_argument(s.name + ": model " + std::to_string(i) + " has " +
                                        std::to_string(models[i].size()) + " values, the base " +
                                        std::to_string(n));
    }
    TensorMergeStats st;
    st.numel = n;
    std::vector<Vec> taus(k, Vec(n));
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t j = 0; j < n; ++j)
            taus[i][j] = static_cast<double>(models[i][j]) - base[j];
    const Vec m = mean_of(taus);
    st.mean_tau_sq = dot(m, m);
    if (!s.in_scope) {
        std::copy(base.begin(), base.end(), out.begin());
        return st;
    }
    const Vec theta = merged_values(p, s, base, models, taus, m, st);
    for (std::size_t j = 0; j < n; ++j) {
        out[j] = static_cast<float>(theta[j]);
        const double u = theta[j] - base[j];
        st.update_sq += u * u;
        st.kept += u != 0.0;
    }
    return st;
}

}  // namespace compatbench::merging
