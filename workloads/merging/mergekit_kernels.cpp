#include "merging/mergekit_kernels.h"

#include <cmath>
#include <stdexcept>

#include "merging/block_pass.h"
#include "merging/generalized.h"
#include "merging/selection.h"

namespace compatbench::merging {

namespace {

using blocks::array_pass;
using blocks::Block;
using blocks::for_blocks;

// θ = θ_1 as it is (mergekit's multislerp and nuslerp of one model).
void first_model(TensorBlocks& in, const BlockSink& out, TensorMergeStats& st) {
    array_pass(in, out, st, [&](Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) b.theta[j] = b.x[0][j];
    });
}

// v_i: τ_i with a base, else θ_i itself (multislerp, nuslerp).
inline double vector_of(const MergeParams& p, const Block& b, std::size_t i, std::size_t j) {
    return p.has_base ? b.t[i][j] : static_cast<double>(b.x[i][j]);
}

// The Gram matrix v_i·v_q (k × k, row-major) of value(b, i, j), in coordinate order.
template <class Value>
std::vector<double> gram_of(TensorBlocks& in, Value value) {
    const std::size_t k = in.models();
    std::vector<double> gram(k * k, 0.0);
    for_blocks(in, [&](const Block& b) {
        for (std::size_t i = 0; i < k; ++i)
            for (std::size_t q = i; q < k; ++q)
                for (std::size_t j = 0; j < b.count; ++j)
                    gram[i * k + q] += value(b, i, j) * value(b, q, j);
    });
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t q = 0; q < i; ++q) gram[i * k + q] = gram[q * k + i];
    return gram;
}

void nearswap(const MergeParams& p, TensorBlocks& in, const BlockSink& out, TensorMergeStats& st) {
    array_pass(in, out, st, [&](Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) {
            const double a = b.base[j], x = b.x[0][j];
            const double w = std::clamp(p.t / std::max(std::abs(a - x), 1e-6), 0.0, 1.0);
            b.theta[j] = w * x + (1.0 - w) * a;
        }
    });
}

}  // namespace

void mark_largest_variances(const MergeParams& p, const std::vector<double>& var, std::size_t n,
                            Selection& keep) {
    std::size_t nonzero = 0;
    for (std::size_t j = 0; j < n; ++j) nonzero += var[j] != 0.0;
    // int(nonzero * density): torch multiplies the int64 count by a float in float32.
    const auto top =
        static_cast<std::size_t>(static_cast<float>(nonzero) * static_cast<float>(p.select_topk));
    mark_top(var, n, top, keep.bits, true);
}

namespace {

// SCE's kept coordinates: the ⌊nnz(var)·select_topk⌋ of largest variance across the τ_i.
Selection sce_selection(const MergeParams& p, TensorBlocks& in) {
    Selection keep;
    if (p.select_topk >= 1.0) return keep;
    const std::size_t n = in.numel(), k = in.models();
    keep.all = false;
    keep.bits.assign((n + 63) / 64, 0);
    if (p.select_topk <= 0.0) return keep;
    std::vector<double>& var = magnitudes(n);
    for_blocks(in, [&](const Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) {
            double sq = 0.0;
            bool equal = true;  // torch's var is exactly 0 there; a mean in double may not be
            for (const auto& t : b.t) sq += (t[j] - b.mean[j]) * (t[j] - b.mean[j]);
            for (const auto& t : b.t) equal &= t[j] == b.t[0][j];
            var[b.begin + j] = equal ? 0.0 : sq / static_cast<double>(k);
        }
    });
    mark_largest_variances(p, var, n, keep);
    return keep;
}

void sce(const MergeParams& p, TensorBlocks& in, const BlockSink& out, TensorMergeStats& st) {
    const std::size_t k = in.models();
    const Selection keep = sce_selection(p, in);
    std::vector<double> w(k, 0.0);  // mean_j of the kept τ_ij², then normalised
    for_blocks(in, [&](const Block& b) {
        for (std::size_t i = 0; i < k; ++i)
            for (std::size_t j = 0; j < b.count; ++j)
                if (keep.kept(b.begin + j)) w[i] += b.t[i][j] * b.t[i][j];
    });
    double total = 0.0;
    for (double& x : w) total += (x /= static_cast<double>(in.numel()));
    for (double& x : w) x = std::abs(total) < 1e-6 ? 1.0 / static_cast<double>(k) : x / total;
    array_pass(in, out, st, [&](Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) {
            double sum = 0.0, num = 0.0, den = 0.0;
            const bool kept = keep.kept(b.begin + j);
            for (std::size_t i = 0; i < k && kept; ++i) sum += b.t[i][j];
            for (std::size_t i = 0; i < k && kept; ++i) {
                const double t = b.t[i][j];
                if (sum >= 0.0 ? t > 0.0 : t < 0.0) num += t * w[i], den += w[i];
            }
            b.theta[j] = b.base[j] + num / std::max(den, 1e-6);
        }
    });
}

// multislerp's coefficients c_i of θ = (θ0) + Σ c_i v_i, from the Gram matrix of the v_i.
std::vector<double> multislerp_coefficients(const MergeParams& p, const TensorScope& s,
                                            const std::vector<double>& gram, std::size_t k) {
    std::vector<double> w(p.weights), norm(k), a(k), c(k);
    double wsum = 0.0;
    for (double x : w) wsum += x;
    if (p.normalize == Normalize::mean)
        for (double& x : w) x /= wsum;
    for (std::size_t i = 0; i < k; ++i) norm[i] = std::sqrt(gram[i * k + i]);
    for (std::size_t i = 0; i < k; ++i) a[i] = w[i] / (norm[i] + p.eps);
    double mean_sq = 0.0, avg_norm = 0.0;
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t q = 0; q < k; ++q) mean_sq += a[i] * a[q] * gram[i * k + q];
    const double mean_norm = std::sqrt(std::max(mean_sq, 0.0));
    if (mean_norm < p.eps) {
        if (k != 2)
            throw std::invalid_argument(
                s.name +
                ": multislerp: the weighted sum of the models' directions is zero "
                "(antipodal models with balancing weights; mergekit raises too)");
        return w;  // mergekit's fallback: the weighted sum
    }
    double dots = 0.0;  // Σ_i w_i (u_i · m/‖m‖)
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t q = 0; q < k; ++q)
            dots += w[i] * a[q] * gram[i * k + q] / ((norm[i] + p.eps) * mean_norm);
    for (std::size_t i = 0; i < k; ++i) avg_norm += norm[i] * w[i];
    // The tangent result is (1 − dots/‖m‖)·m; the exponential map of it from m/‖m‖.
    const double factor = 1.0 - dots / mean_norm;
    const double tn = std::abs(factor) * mean_norm + p.eps;
    const double scale = avg_norm * (std::cos(tn) / mean_norm + factor * std::sin(tn) / tn);
    for (std::size_t i = 0; i < k; ++i) c[i] = scale * a[i];
    return c;
}

void multislerp(const MergeParams& p, const TensorScope& s, TensorBlocks& in, const BlockSink& out,
                TensorMergeStats& st) {
    const std::size_t k = in.models();
    const auto v = [&](const Block& b, std::size_t i, std::size_t j) {
        return vector_of(p, b, i, j);
    };
    if (k == 1) return first_model(in, out, st);  // mergekit returns it as it is
    const std::vector<double> c = multislerp_coefficients(p, s, gram_of(in, v), k);
    array_pass(in, out, st, [&](Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) {
            double x = p.has_base ? static_cast<double>(b.base[j]) : 0.0;
            for (std::size_t i = 0; i < k; ++i) x += c[i] * v(b, i, j);
            b.theta[j] = x;
        }
    });
}

// nuslerp's vectors: coordinate f belongs to vector group(f) of `size`; flatten: one; along
// dimension 0 (row_wise): the coordinates of equal index over the other dimensions; else the
// rows of the last dimension.
struct Fibres {
    std::size_t size = 1, stride = 0, len = 0;
    Fibres(const MergeParams& p, const TensorScope& s, std::size_t n) {
        if (p.flatten) return;
        if (p.row_wise) {  // a 1-D tensor is one vector (transpose(0, -1) leaves it)
            if (s.matrix || s.kernel) stride = size = s.row_length * s.rank_stride;
            return;
        }
        len = s.last_dim > 0 && n % s.last_dim == 0 ? s.last_dim : n;
        size = n / len;
    }
    std::size_t group(std::size_t f) const { return stride ? f % stride : len ? f / len : 0; }
};

// nuslerp.py: t = w_2 / (w_1 + w_2) (0.5 when that sum is below 1e-6); per vector, the SLERP
// weights of v_1 and v_2 (not normalised) from their angle, linear where |sin θ| < 1e-8.
void nuslerp(const MergeParams& p, const TensorScope& s, TensorBlocks& in, const BlockSink& out,
             TensorMergeStats& st) {
    const auto v = [&](const Block& b, std::size_t i, std::size_t j) {
        return vector_of(p, b, i, j);
    };
    if (in.models() == 1) return first_model(in, out, st);  // mergekit returns it as it is
    const double wsum = p.weights.at(0) + p.weights.at(1);
    const double t = std::abs(wsum) < 1e-6 ? 0.5 : p.weights[1] / wsum;
    const Fibres fib(p, s, in.numel());
    std::vector<double> dots(3 * fib.size, 0.0);  // per vector: v1·v1, v2·v2, v1·v2
    for_blocks(in, [&](const Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) {
            double* d = &dots[3 * fib.group(b.begin + j)];
            const double x = v(b, 0, j), y = v(b, 1, j);
            d[0] += x * x, d[1] += y * y, d[2] += x * y;
        }
    });
    std::vector<double> wa(fib.size), wb(fib.size);
    for (std::size_t g = 0; g < fib.size; ++g) {
        const double* d = &dots[3 * g];
        const double n1 = std::max(std::sqrt(d[0]), 1e-7), n2 = std::max(std::sqrt(d[1]), 1e-7);
        const double theta = std::acos(std::clamp(d[2] / (n1 * n2), -1.0, 1.0));
        const double sin = std::sin(theta);
        const bool linear = std::abs(sin) < 1e-8;
        wa[g] = linear ? 1.0 - t : std::sin((1.0 - t) * theta) / sin;
        wb[g] = linear ? t : std::sin(t * theta) / sin;
    }
    array_pass(in, out, st, [&](Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) {
            const std::size_t g = fib.group(b.begin + j);
            b.theta[j] = (p.has_base ? static_cast<double>(b.base[j]) : 0.0) + wa[g] * v(b, 0, j) +
                         wb[g] * v(b, 1, j);
        }
    });
}

// Σ_iq a_i b_q G_iq: the dot product of Σ a_i θ_i and Σ b_q θ_q.
double gram_dot(const std::vector<double>& a, const std::vector<double>& b,
                const std::vector<double>& gram) {
    const std::size_t k = a.size();
    double s = 0.0;
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t q = 0; q < k; ++q) s += a[i] * b[q] * gram[i * k + q];
    return s;
}

// karcher.py's iteration on coefficients: every vector it forms (the mean direction u, the
// step T) is Σ_i c_i θ_i, so u·θ_i and norms come from the Gram matrix G of the θ_i.
std::vector<double> karcher_coefficients(const MergeParams& p, const std::vector<double>& gram,
                                         std::size_t k) {
    const auto norm_of = [&](const std::vector<double>& a) {
        return std::sqrt(std::max(gram_dot(a, a, gram), 0.0));
    };
    std::vector<double> norm(k), u(k, 0.0);
    std::vector<std::size_t> valid;
    for (std::size_t i = 0; i < k; ++i) norm[i] = std::sqrt(gram[i * k + i]);
    for (std::size_t i = 0; i < k; ++i)
        if (norm[i] > p.tol) valid.push_back(i);
    if (valid.empty()) return u;                                   // zeros
    const double alpha = 1.0 / static_cast<double>(valid.size());  // every alpha is 1/n
    for (std::size_t i : valid) u[i] = alpha / norm[i];
    const double norm_u = norm_of(u);
    if (norm_u < p.tol) {
        std::fill(u.begin(), u.end(), 0.0);
        u[valid[0]] = 1.0 / norm[valid[0]];
    } else {
        for (double& c : u) c /= norm_u;
    }
    for (int it = 0; it < p.max_iter; ++it) {
        std::vector<double> step(k, 0.0), unit(k, 0.0);
        for (std::size_t i : valid) {
            std::fill(unit.begin(), unit.end(), 0.0);
            unit[i] = 1.0 / norm[i];
            const double d = std::clamp(gram_dot(u, unit, gram), -1.0, 1.0), theta = std::acos(d);
            if (theta < p.tol) continue;
            const double f = alpha * theta / std::sin(theta);
            for (std::size_t q = 0; q < k; ++q) step[q] += f * (unit[q] - d * u[q]);
        }
        const double norm_step = norm_of(step);
        if (norm_step < p.tol) break;
        for (std::size_t q = 0; q < k; ++q)
            u[q] = std::cos(norm_step) * u[q] + std::sin(norm_step) * step[q] / norm_step;
        const double nu = norm_of(u);
        if (nu > p.tol)
            for (double& c : u) c /= nu;
    }
    double scale = 0.0;  // Σ alpha_i ‖θ_i‖ over every input, zero norms too
    for (std::size_t i = 0; i < k; ++i) scale += norm[i] / static_cast<double>(k);
    for (double& c : u) c *= scale;
    return u;
}

void karcher(const MergeParams& p, TensorBlocks& in, const BlockSink& out, TensorMergeStats& st) {
    const std::size_t k = in.models();
    if (k == 1) return first_model(in, out, st);  // karcher.py returns the one input
    const std::vector<double> gram = gram_of(in, [](const Block& b, std::size_t i, std::size_t j) {
        return static_cast<double>(b.x[i][j]);
    });
    const std::vector<double> c = karcher_coefficients(p, gram, k);
    array_pass(in, out, st, [&](Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) {
            double x = 0.0;
            for (std::size_t i = 0; i < k; ++i) x += c[i] * b.x[i][j];
            b.theta[j] = x;
        }
    });
}

}  // namespace

// Model Stock: t · mean θ_i + (1 − t) · θ0 = θ0 + t · τ̄, t from the mean pairwise cosine.
double model_stock_t(const double* dots, std::size_t k) {
    const auto at = [&](std::size_t i, std::size_t q) {  // i <= q
        return dots[i * k - i * (i - 1) / 2 + (q - i)];
    };
    double cos_sum = 0.0;
    int pairs = 0;
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t q = i + 1; q < k; ++q) {
            // mergekit's model_stock: the norms' product clamped at 1e-6, the cosine to ±1.
            const double norms = std::sqrt(at(i, i)) * std::sqrt(at(q, q));
            cos_sum += std::clamp(at(i, q) / std::max(norms, 1e-6), -1.0, 1.0);
            ++pairs;
        }
    const double c = pairs ? cos_sum / pairs : 1.0;
    const double denom = 1.0 + (static_cast<double>(k) - 1.0) * c;
    return denom != 0.0 ? static_cast<double>(k) * c / denom : 0.0;
}

void model_stock_filter_wise(const TensorScope& s, TensorBlocks& in, const BlockSink& out,
                             TensorMergeStats& st) {
    const std::size_t k = in.models(), pairs = k * (k + 1) / 2, n = in.numel();
    const std::size_t len = s.last_dim > 0 && n % s.last_dim == 0 ? s.last_dim : n;
    std::vector<double> dots(n / len * pairs, 0.0);  // per row: τ_i·τ_q, i <= q
    for_blocks(in, [&](const Block& b) {
        for (std::size_t j = 0; j < b.count; ++j) {
            double* d = &dots[(b.begin + j) / len * pairs];
            for (std::size_t i = 0; i < k; ++i)
                for (std::size_t q = i; q < k; ++q) *d++ += b.t[i][j] * b.t[q][j];
        }
    });
    std::vector<double> t(n / len);
    for (std::size_t r = 0; r < t.size(); ++r) t[r] = model_stock_t(&dots[r * pairs], k);
    array_pass(in, out, st, [&](Block& b) {
        for (std::size_t j = 0; j < b.count; ++j)
            b.theta[j] = b.base[j] + t[(b.begin + j) / len] * b.mean[j];
    });
}

bool promotes_dtypes(Method m) {
    return m == Method::linear || m == Method::multislerp || m == Method::model_stock ||
           m == Method::nearswap || m == Method::sce || m == Method::nuslerp;
}

bool is_mergekit_kernel(Method m) {
    return m == Method::nearswap || m == Method::sce || m == Method::multislerp ||
           m == Method::nuslerp || m == Method::karcher;
}

void mergekit_pass(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                   const BlockSink& out, TensorMergeStats& st) {
    switch (p.method) {
        case Method::nearswap:
            return nearswap(p, in, out, st);
        case Method::sce:
            return sce(p, in, out, st);
        case Method::multislerp:
            return multislerp(p, s, in, out, st);
        case Method::nuslerp:
            return nuslerp(p, s, in, out, st);
        case Method::karcher:
            return karcher(p, in, out, st);
        default:
            throw std::invalid_argument(s.name + ": " + method_name(p.method) +
                                        " is no mergekit kernel");
    }
}

}  // namespace compatbench::merging
