// methods.md §3.2 operators: hand-computed tensors, and TIES / SLERP / Model Stock against an
// independent numpy computation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "merging/operators.h"
#include "test_support.h"

using namespace compatbench::merging;

namespace {
std::vector<float> run(const MergeParams& p, const TensorScope& s, const std::vector<float>& base,
                       const std::vector<std::vector<float>>& models,
                       TensorMergeStats* stats = nullptr, Kernels kernels = Kernels::fused) {
    std::vector<std::span<const float>> views(models.begin(), models.end());
    std::vector<float> out(base.size());
    const auto st = merge_tensor(p, s, base, views, out, kernels);
    if (stats) *stats = st;
    return out;
}
}  // namespace

TEST(Operators, TaskArithmeticAndScope) {
    const std::vector<float> base = {1, 1, 1};
    const std::vector<std::vector<float>> m = {{2, 0, 1}, {4, 0, 3}};
    MergeParams p;
    EXPECT_EQ(run(p, {}, base, m), (std::vector<float>{3, 0, 2}));
    p.normalize = Normalize::sum;
    p.coef = 0.5;
    EXPECT_EQ(run(p, {}, base, m), (std::vector<float>{3, 0, 2}));
    TensorScope out_of_scope;
    out_of_scope.in_scope = false;
    EXPECT_EQ(run(p, out_of_scope, base, m), base);
    EXPECT_TRUE(in_scope("model.layers.0.mlp.gate_proj.weight", {"*up_proj*", "*gate_proj*"}));
    EXPECT_FALSE(in_scope("model.layers.0.self_attn.q_proj.weight", {"*up_proj*", "*gate_proj*"}));
    EXPECT_TRUE(in_scope("anything", {}));
}

TEST(Operators, TiesByHand) {
    // τ0 = (3, -1, 0.5, -2), τ1 = (-1, -2, 1, 4); density 0.5 keeps 2 of 4 per model:
    // τ̂0 = (3, 0, 0, -2), τ̂1 = (0, -2, 0, 4); signs of the sums: +, -, + (0 -> +), +;
    // agreeing means: 3, -2, 0 (none), 4.
    const std::vector<float> base = {0, 0, 0, 0};
    MergeParams p;
    p.method = Method::ties;
    p.density = 0.5;
    EXPECT_EQ(run(p, {}, base, {{3, -1, 0.5f, -2}, {-1, -2, 1, 4}}),
              (std::vector<float>{3, -2, 0, 4}));
}

TEST(Operators, TiesKeepsTheFloorOfDensityTimesNLikeMergekit) {
    // mergekit's magnitude sparsification keeps int(density * numel) = ⌊0.2 · 1024⌋ = 204 of a
    // 1024-element task vector (rounding would keep 205). τ_j = j + 1: the 204 largest are
    // j = 820..1023. With one model the disjoint mean is the trimmed task vector itself.
    const std::vector<float> base(1024, 0.0f);
    std::vector<float> tau(1024);
    for (std::size_t j = 0; j < tau.size(); ++j) tau[j] = static_cast<float>(j + 1);
    MergeParams p;
    p.method = Method::ties;
    p.density = 0.2;
    const auto merged = run(p, {}, base, {tau});
    std::size_t kept = 0;
    for (std::size_t j = 0; j < merged.size(); ++j) {
        kept += merged[j] != 0.0f;
        EXPECT_EQ(merged[j], j >= 820 ? tau[j] : 0.0f) << j;
    }
    EXPECT_EQ(kept, 204u);
    // Ties at the threshold go to the lower index: of eight equal magnitudes, density 0.25
    // keeps two, the first two.
    const std::vector<float> flat(8, 0.0f), equal = {1, -1, 1, -1, 1, -1, 1, -1};
    p.density = 0.25;
    EXPECT_EQ(run(p, {}, flat, {equal}), (std::vector<float>{1, -1, 0, 0, 0, 0, 0, 0}));
}

TEST(Operators, BlockSizeAndPassesDoNotChangeTheResult) {
    // A tensor longer than a block (16384 elements): an element-wise operator (task
    // arithmetic) gives the same values merged whole or in pieces, and TIES selects over
    // the whole tensor, not per block.
    const std::size_t n = 40000;
    std::vector<float> base(n), a(n), b(n);
    for (std::size_t j = 0; j < n; ++j) {
        base[j] = std::sin(0.001f * static_cast<float>(j));
        a[j] = base[j] + 0.01f * std::cos(0.37f * static_cast<float>(j));
        b[j] = base[j] - 0.02f * std::sin(0.11f * static_cast<float>(j));
    }
    MergeParams p;
    const auto whole = run(p, {}, base, {a, b});
    std::vector<float> pieces;
    for (std::size_t begin = 0; begin < n; begin += 16384) {
        const std::size_t end = std::min(n, begin + 16384);
        const std::vector<float> bb(base.begin() + begin, base.begin() + end),
            aa(a.begin() + begin, a.begin() + end), cc(b.begin() + begin, b.begin() + end);
        const auto part = run(p, {}, bb, {aa, cc});
        pieces.insert(pieces.end(), part.begin(), part.end());
    }
    EXPECT_EQ(whole, pieces);
    // TIES on the whole keeps ⌊0.2 n⌋ per model in total, not per block.
    p.method = Method::ties;
    p.density = 0.2;
    const auto ties = run(p, {}, base, {a});
    std::size_t kept = 0;
    for (std::size_t j = 0; j < n; ++j) kept += ties[j] != base[j];
    EXPECT_EQ(kept, 8000u);
}

TEST(Operators, FusedKernelsEqualTheArrayLoopsToTheBit) {
    // Task arithmetic (mean; sum with weights and c), Model Stock (and its dots in one loop),
    // PRISM, PRISM-hard, norm-matched, DARE (a keep rate of 1/2 and of 0.7, mean and sum),
    // SLERP (K = 2) and TIES (mean, and generalized's sum) run fused per-coordinate kernels for K
    // <= 8: the same θ and statistics as the block arrays, bit for bit, for every K, over two
    // blocks and a tail of 13 (not a multiple of 8), with exact zeros and -0 among the values. K =
    // 9 has no fused kernel.
    const std::size_t n = 2 * 16384 + 13;
    const auto r = compatbench::test::random_matrix(static_cast<int>(n), 10, 5);
    std::vector<float> base(r.col(0).data(), r.col(0).data() + n);
    for (std::size_t j = 0; j < n; j += 97) base[j] = j % 2 ? -0.0f : 0.0f;
    for (std::size_t k = 1; k <= 9; ++k) {
        std::vector<std::vector<float>> models(k, base);
        for (std::size_t i = 0; i < k; ++i)
            for (std::size_t j = 0; j < n; ++j)
                if (j % (11 + i) != 0)  // else θ_ij = θ0_j: a zero τ
                    models[i][j] += 0.01f * r(static_cast<int>(j), static_cast<int>(i + 1));
        std::vector<MergeParams> ps(12);
        ps[1].normalize = Normalize::sum;
        ps[1].coef = 0.7;
        for (std::size_t i = 0; i < k; ++i) ps[1].weights.push_back(0.5 + 0.25 * double(i));
        ps[2].method = Method::model_stock;
        ps[3].method = Method::prism;
        ps[3].kappa = 0.3;
        ps[4].method = Method::prism_hard;
        ps[4].kappa = 0.3;
        ps[5].method = Method::norm_matched;
        ps[5].kappa = 0.3;
        ps[6].method = Method::prism;  // κ high: the keep-rate floor sets λ
        ps[6].kappa = 50;
        ps[7].method = Method::dare;
        ps[7].drop = 0.5;
        ps[8].method = Method::dare;
        ps[8].drop = 0.3;
        ps[8].normalize = Normalize::sum;
        ps[8].coef = 0.7;
        ps[9].method = k == 2 ? Method::slerp : Method::model_stock;
        ps[9].t = 0.3;
        ps[10].method = Method::ties;
        ps[10].density = 0.3;
        ps[11].method = Method::generalized;  // TIES's consensus, summed
        ps[11].sparsify = Sparsify::magnitude;
        ps[11].density = 0.6;
        ps[11].consensus = true;
        ps[11].normalize = Normalize::sum;
        TensorScope s;
        s.name = "w";
        s.matrix = true;
        s.merge_rho = 0.5;
        for (const auto& p : ps) {
            TensorMergeStats a, b;
            const auto fused = run(p, s, base, models, &a, Kernels::fused);
            const auto arrays = run(p, s, base, models, &b, Kernels::arrays);
            const std::string what =
                std::string(method_name(p.method)) + ", K = " + std::to_string(k);
            EXPECT_EQ(std::memcmp(fused.data(), arrays.data(), n * sizeof(float)), 0) << what;
            EXPECT_EQ(a.update_sq, b.update_sq) << what;
            EXPECT_EQ(a.mean_tau_sq, b.mean_tau_sq) << what;
            EXPECT_EQ(a.kept, b.kept) << what;
            EXPECT_EQ(a.lambda, b.lambda) << what;
            EXPECT_GT(a.kept, 0u) << what;
            EXPECT_LT(a.kept, n) << what;
        }
    }
}

TEST(Operators, StatisticsInLanesMoveOnlyTheirLastBits) {
    // Sums::lanes (compatbench merge) adds ‖τ̄‖² and ‖θ − θ0‖² in 8 lanes: the same merged
    // values and changed coordinates as in coordinate order, the two sums within 1e-12
    // relative, through a fused kernel (K = 2) and the array loops (K = 9, and TIES), over
    // two blocks and a tail of 13.
    const std::size_t n = 2 * 16384 + 13;
    const auto r = compatbench::test::random_matrix(static_cast<int>(n), 10, 6);
    const std::vector<float> base(r.col(0).data(), r.col(0).data() + n);
    for (const std::size_t k : {2, 9}) {
        std::vector<std::vector<float>> models(k, base);
        for (std::size_t i = 0; i < k; ++i)
            for (std::size_t j = 0; j < n; ++j)
                models[i][j] += 0.01f * r(static_cast<int>(j), static_cast<int>(i + 1));
        for (const Method method : {Method::task_arithmetic, Method::ties}) {
            MergeParams p;
            p.method = method;
            const auto merged = [&](Sums sums, TensorMergeStats& st) {
                SpanBlocks in(base, {models.begin(), models.end()});
                std::vector<float> out(n);
                st = merge_tensor(
                    p, {}, in,
                    [&](std::size_t begin, std::span<const float> m) {
                        std::copy(m.begin(), m.end(), out.begin() + std::ptrdiff_t(begin));
                    },
                    Kernels::fused, sums);
                return out;
            };
            TensorMergeStats a, b;
            const std::string what =
                std::string(method_name(method)) + ", K = " + std::to_string(k);
            EXPECT_EQ(merged(Sums::ordered, a), merged(Sums::lanes, b)) << what;
            EXPECT_EQ(a.kept, b.kept) << what;
            EXPECT_GT(a.update_sq, 0.0) << what;
            EXPECT_NEAR(a.update_sq, b.update_sq, 1e-12 * a.update_sq) << what;
            EXPECT_NEAR(a.mean_tau_sq, b.mean_tau_sq, 1e-12 * a.mean_tau_sq) << what;
        }
    }
}

TEST(Operators, PrismSoftThresholdGateAndFloor) {
    // K = 2, n = 4: τ0 = (1, 0.1, -0.2, 0), τ1 = (1, -0.1, 0.2, 0): m = (1, 0, 0, 0),
    // I_j = (0, 0.01, 0.04, 0), Ī = 0.0125, σ = 0.1118, λ = κ σ sqrt(2 ln 4) = 0.1862.
    const std::vector<float> base = {0, 0, 0, 0};
    const std::vector<std::vector<float>> m = {{1, 0.1f, -0.2f, 0}, {1, -0.1f, 0.2f, 0}};
    MergeParams p;
    p.method = Method::prism;
    TensorScope s;
    s.merge_rho = 0.5;
    TensorMergeStats st;
    const auto out = run(p, s, base, m, &st);
    const double lambda = std::sqrt(0.0125) * std::sqrt(2 * std::log(4.0));
    EXPECT_NEAR(st.lambda, lambda, 1e-7);
    EXPECT_NEAR(out[0], 1 - lambda, 1e-6);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_EQ(st.kept, 1u);
    // Hard: the surviving coordinate keeps its full value.
    p.method = Method::prism_hard;
    EXPECT_NEAR(run(p, s, base, m)[0], 1.0, 1e-6);
    // Norm-matched: the PRISM norm (1 - λ) spread over m = (1, 0, 0, 0): the same here.
    p.method = Method::norm_matched;
    EXPECT_NEAR(run(p, s, base, m)[0], 1 - lambda, 1e-6);
    // ρ-gate: below 0.1 the plain mean.
    p.method = Method::prism;
    s.merge_rho = 0.05;
    EXPECT_NEAR(run(p, s, base, m)[0], 1.0, 1e-6);
    // Keep-rate floor on a matrix: κ huge would kill everything; the floor keeps the top
    // ceil(0.001 n) = 1 coordinate, above the second-largest magnitude.
    s.merge_rho = 0.5;
    s.matrix = true;
    p.kappa = 100;
    const auto floored = run(p, s, base, {{1, 0.5f, 0, 0}, {1, 0.3f, 0, 0}}, &st);
    EXPECT_NEAR(st.lambda, 0.4, 1e-6);  // |m| = (1, 0.4, 0, 0): λ = the 2nd largest
    EXPECT_NEAR(floored[0], 0.6, 1e-6);
    EXPECT_EQ(floored[1], 0.0f);
    // A convolution kernel gets the floor only when asked: else κ = 100 keeps nothing.
    s.matrix = false;
    s.kernel = true;
    const std::vector<std::vector<float>> k = {{1, 0.5f, 0, 0}, {1, 0.3f, 0, 0}};
    EXPECT_EQ(run(p, s, base, k)[0], 0.0f);
    p.floor_kernels = true;
    EXPECT_NEAR(run(p, s, base, k)[0], 0.6, 1e-6);
    s.kernel = false;  // a vector stays unfloored either way
    EXPECT_EQ(run(p, s, base, k)[0], 0.0f);
}

TEST(Operators, DareKeepsAboutHalfRescaledAndIsSeeded) {
    std::vector<float> base(10000, 0.0f), tau(10000, 1.0f);
    MergeParams p;
    p.method = Method::dare;
    p.drop = 0.5;
    p.seed = 7;
    TensorScope s;
    s.name = "w";
    TensorMergeStats st;
    const auto out = run(p, s, base, {tau}, &st);
    EXPECT_NEAR(static_cast<double>(st.kept) / 10000, 0.5, 0.02);
    for (float v : out) EXPECT_TRUE(v == 0.0f || v == 2.0f);
    EXPECT_EQ(run(p, s, base, {tau}), out);
    s.name = "other";
    EXPECT_NE(run(p, s, base, {tau}), out);  // a mask per tensor
}

TEST(Operators, TiesSlerpModelStockMatchNumpy) {
    if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 has no numpy";
    const auto r = compatbench::test::random_matrix(64, 4, 99);
    std::vector<float> base(r.col(0).data(), r.col(0).data() + 64);
    std::vector<std::vector<float>> models(3);
    for (int i = 0; i < 3; ++i) {
        models[static_cast<std::size_t>(i)] = base;
        for (int j = 0; j < 64; ++j)
            models[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] +=
                0.3f * r(j, i + 1) + 0.1f;
    }
    const auto path = std::filesystem::path(::testing::TempDir()) / "merge_check.safetensors";
    compatbench::formats::SafetensorsWriter w;
    w.add_f32("base", {64}, base);
    for (int i = 0; i < 3; ++i)
        w.add_f32("m" + std::to_string(i), {64}, models[static_cast<std::size_t>(i)]);
    w.write(path.string());
    const auto j = nlohmann::json::parse(
        compatbench::test::run_command("/usr/bin/python3 " + std::string(COMPATBENCH_SOURCE_DIR) +
                                       "/tests/checks/merge_check.py " + path.string()));
    MergeParams p;
    p.method = Method::ties;
    p.density = 0.5;
    const auto ties = run(p, {}, base, models);
    p.method = Method::model_stock;
    const auto stock = run(p, {}, base, models);
    p.method = Method::slerp;
    p.t = 0.3;
    const auto slerp = run(p, {}, base, {models[0], models[1]});
    for (std::size_t i = 0; i < 64; ++i) {
        EXPECT_NEAR(ties[i], j["ties"][i].get<double>(), 1e-5) << i;
        EXPECT_NEAR(stock[i], j["model_stock"][i].get<double>(), 1e-5) << i;
        EXPECT_NEAR(slerp[i], j["slerp"][i].get<double>(), 1e-5) << i;
    }
    EXPECT_THROW(run(p, {}, base, models), std::invalid_argument);  // SLERP needs K = 2
    EXPECT_EQ(method_from_name("model_stock"), Method::model_stock);
    EXPECT_THROW(method_from_name("fisher"), std::invalid_argument);
}

// Iso-C (merging/iso_c.h): τ0 = diag(1, 1), τ1 = diag(2, 0) sum to diag(3, 1), whose singular
// values 3 and 1 become their mean 2: θ0 + c · diag(2, 2). A 1-D tensor takes the mean τ, and
// so does a 2-D tensor named text_projection (as the authors' code has it).
TEST(Operators, IsoCFlattensTheSpectrumOfTheSummedUpdate) {
    MergeParams p;
    p.method = Method::iso_c;
    p.coef = 0.5;
    TensorScope matrix;
    matrix.name = "layer.weight";
    matrix.matrix = true;
    matrix.row_length = 2;
    const std::vector<float> base = {1, 0, 0, 1};
    const auto got = run(p, matrix, base, {{2, 0, 0, 2}, {3, 0, 0, 1}});
    const std::vector<float> want = {2, 0, 0, 2};
    for (std::size_t j = 0; j < 4; ++j) EXPECT_NEAR(got[j], want[j], 1e-6) << j;
    TensorScope projection = matrix;
    projection.name = "text_projection";
    const auto mean = run(p, projection, base, {{2, 0, 0, 2}, {3, 0, 0, 1}});
    EXPECT_EQ(mean, (std::vector<float>{1.75f, 0, 0, 1.25f}));
    EXPECT_EQ(run(p, {}, {0, 0}, {{1, 2}, {3, 4}}), (std::vector<float>{1, 1.5f}));
    TensorScope ragged = matrix;
    ragged.row_length = 3;
    EXPECT_THROW(run(p, ragged, base, {{2, 0, 0, 2}}), std::invalid_argument);
    EXPECT_EQ(method_from_name("iso_c"), Method::iso_c);
    EXPECT_STREQ(method_name(Method::della), "della");
}

// TSV-Merge (merging/tsv.h): with K = 2 each 2×2 task vector keeps int(2 · 1/2) = 1 singular
// triplet. τ0 = diag(3, 1) keeps 3·e1e1ᵀ, τ1 = diag(0, 2) keeps 2·e2e2ᵀ: the singular vectors
// are orthogonal already, so the merge is diag(3, 2). With τ1 = 2·aaᵀ, a = (1, 1)/√2, they
// are not; decorrelated, the merged update keeps the singular values 3 and 2.
TEST(Operators, TsvMergeDecorrelatesTheTasksLeadingSingularVectors) {
    MergeParams p;
    p.method = Method::tsv;
    TensorScope matrix;
    matrix.name = "layer.weight";
    matrix.matrix = true;
    matrix.row_length = 2;
    const std::vector<float> base = {0, 0, 0, 0};
    auto got = run(p, matrix, base, {{3, 0, 0, 1}, {0, 0, 0, 2}});
    const std::vector<float> want = {3, 0, 0, 2};
    for (std::size_t j = 0; j < 4; ++j) EXPECT_NEAR(got[j], want[j], 1e-6) << j;
    got = run(p, matrix, base, {{3, 0, 0, 0}, {1, 1, 1, 1}});
    const double a = got[0], b = got[1], c = got[2], d = got[3];
    const double trace = a * a + b * b + c * c + d * d, det = a * d - b * c;  // σ1² + σ2², σ1σ2
    EXPECT_NEAR(trace, 9.0 + 4.0, 1e-5);
    EXPECT_NEAR(std::abs(det), 6.0, 1e-5);
    TensorScope projection = matrix;  // the mean, as the authors' code has it
    projection.name = "text_projection";
    EXPECT_EQ(run(p, projection, base, {{2, 0, 0, 2}, {4, 0, 0, 0}}),
              (std::vector<float>{3, 0, 0, 1}));
    EXPECT_EQ(method_from_name("tsv"), Method::tsv);
}

// DELLA ranks along dimension 1 of an N-D tensor, as mergekit's torch code does: in a
// (1, 2, 20000) tensor each fibre pairs coordinate q with q + 20000, the larger |τ| kept with
// probability d + ε = 0.9, the smaller with d − ε = 0.1.
TEST(Operators, DellaRanksAlongDimensionOneOfAnNdTensor) {
    const std::size_t inner = 20000;
    std::vector<float> base(2 * inner, 0.0f), model(2 * inner);
    for (std::size_t q = 0; q < inner; ++q) {
        model[q] = 1.0f + static_cast<float>(q % 7);  // c = 0: the smaller of its fibre
        model[inner + q] = 10.0f;                     // c = 1: the larger
    }
    MergeParams p;
    p.method = Method::generalized;
    p.sparsify = Sparsify::della;
    p.density = 0.5;
    p.epsilons = {0.4};
    p.seed = 3;
    TensorScope s;
    s.name = "conv.weight";
    s.row_length = 2;
    s.rank_stride = inner;
    const auto out = run(p, s, base, {model});
    std::size_t small = 0, large = 0;
    for (std::size_t q = 0; q < inner; ++q) {
        small += out[q] != 0.0f;
        large += out[inner + q] != 0.0f;
    }
    EXPECT_NEAR(static_cast<double>(small) / inner, 0.1, 0.02);
    EXPECT_NEAR(static_cast<double>(large) / inner, 0.9, 0.02);
    s.rank_stride = 3;  // 40000 is no multiple of 2 · 3: the shape cannot be right
    EXPECT_THROW(run(p, s, base, {model}), std::invalid_argument);
}

// Where dimension 1 has one coordinate (a convolution over one input channel), mergekit's
// DELLA is 0/0: refused by name, or, for the studies' `della`, kept at the density.
TEST(Operators, DellaOnADimensionOfOneCoordinate) {
    const std::vector<float> base(4000, 0.0f), model(4000, 1.0f);
    MergeParams p;
    p.method = Method::generalized;
    p.sparsify = Sparsify::della;
    p.density = 0.3;
    TensorScope s;
    s.name = "net.0.weight";  // (8, 1, 5, 100)
    s.row_length = 1;
    s.rank_stride = 500;
    try {
        run(p, s, base, {model});
        FAIL() << "DELLA over a dimension of one coordinate was not refused";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("net.0.weight: DELLA ranks along dimension 1"),
                  std::string::npos);
    }
    p.method = Method::della;  // the studies' operator
    const auto out = run(p, s, base, {model});
    const auto kept = std::count_if(out.begin(), out.end(), [](float v) { return v != 0.0f; });
    EXPECT_NEAR(static_cast<double>(kept) / 4000.0, 0.3, 0.03);
}
