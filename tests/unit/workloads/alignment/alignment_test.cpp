// methods.md §2: CSA against an independent CCA (numpy/scipy), Recall@k with ties, the
// trained linear adapter.
#include <gtest/gtest.h>

#include "test_support.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "alignment/alignment.h"
#include "formats/safetensors.h"
#include "nn/random.h"

using namespace compatbench::alignment;
using compatbench::MatD;
using compatbench::MatF;
namespace fs = std::filesystem;

namespace {
// Two views sharing a 3-dimensional latent with different strengths.
std::pair<MatF, MatF> paired(int n, std::uint64_t seed, float noise = 0.5f) {
    const MatF z = compatbench::test::random_matrix(n, 3, seed);
    MatF v = compatbench::test::random_matrix(n, 6, seed + 1) * noise;
    MatF t = compatbench::test::random_matrix(n, 5, seed + 2) * noise;
    v.leftCols(3) += z;
    t.col(0) += z.col(0);
    t.col(1) += 0.5f * z.col(1);
    t.col(2) += 0.2f * z.col(2) + 0.3f * z.col(0);
    return {v, t};
}
std::vector<float> row_major(const MatF& m) {
    const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r = m;
    return {r.data(), r.data() + r.size()};
}
}  // namespace

TEST(Csa, MatchesAnIndependentQrCca) {
    if (std::system("/usr/bin/python3 -c 'import numpy, scipy' > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 has no numpy/scipy";
    const auto [xv, xt] = paired(500, 100);
    const auto [ev, et_all] = paired(7, 200);
    const MatF et = et_all.topRows(7);
    const fs::path p = fs::path(::testing::TempDir()) / "cca_check.safetensors";
    compatbench::formats::SafetensorsWriter w;
    for (const auto& [name, m] :
         {std::pair<std::string, MatF>{"xv", xv}, {"xt", xt}, {"ev", ev}, {"et", et}})
        w.add_f32(name,
                  {static_cast<std::uint64_t>(m.rows()), static_cast<std::uint64_t>(m.cols())},
                  row_major(m));
    w.write(p.string());
    const auto j = nlohmann::json::parse(
        compatbench::test::run_command("/usr/bin/python3 " + std::string(COMPATBENCH_SOURCE_DIR) +
                                       "/tests/checks/cca_check.py " + p.string() + " 4"));
    const CsaModel m = fit_csa(xv, xt, {.dim = 4});
    const auto rho = j["rho"].get<std::vector<double>>();
    ASSERT_EQ(m.rho.size(), 4);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(m.rho[i], rho[static_cast<std::size_t>(i)], 1e-5) << i;
    EXPECT_GT(m.rho[0], 0.8);  // the shared latent is found
    const MatD sim = csa_similarity(m, ev, et);
    const auto want = j["sim"].get<std::vector<std::vector<double>>>();
    for (int c = 0; c < 7; ++c)
        for (int i = 0; i < 7; ++i)
            EXPECT_NEAR(sim(c, i), want[static_cast<std::size_t>(c)][static_cast<std::size_t>(i)],
                        1e-5);
}

TEST(Csa, DimDefaultsToTheSmallerWidthAndErrorsAreClear) {
    const auto [xv, xt] = paired(200, 1);
    EXPECT_EQ(fit_csa(xv, xt).rho.size(), 5);
    EXPECT_THROW(fit_csa(xv, xt.topRows(100)), std::invalid_argument);
    const CsaModel m = fit_csa(xv, xt);
    EXPECT_THROW(m.embed_vision(xt), std::invalid_argument);
}

TEST(Recall, HandMadeCasesWithTies) {
    // 3 images, 2 captions each (caption c belongs to image c / 2); captions x images.
    const std::vector<int> owner = {0, 0, 1, 1, 2, 2};
    MatD sim(6, 3);
    // image 0: its caption 1 ties with foreign caption 4 at the top -> caption 1 has the
    // lower index and ranks first: hit at k = 1.
    // image 1: foreign captions 0 and 5 score higher than its own (rank 2): hit at k = 3 only.
    // image 2: its caption 4 ties with foreign caption 2, which has the lower index: rank 1.
    sim << 0.1, 0.9, 0.0,  //
        0.8, 0.2, 0.1,     //
        0.2, 0.5, 0.7,     //
        0.3, 0.4, 0.1,     //
        0.8, 0.1, 0.7,     //
        0.0, 0.95, 0.2;
    const int ks[] = {1, 2, 3, 6};
    const auto r = recall_at_k(sim, owner, ks);
    EXPECT_DOUBLE_EQ(r[0], 1.0 / 3);  // image 0
    EXPECT_DOUBLE_EQ(r[1], 2.0 / 3);  // + image 2
    EXPECT_DOUBLE_EQ(r[2], 1.0);
    EXPECT_DOUBLE_EQ(r[3], 1.0);
    EXPECT_THROW(recall_at_k(sim, {0, 0, 1, 1, 2}, ks), std::invalid_argument);
    EXPECT_THROW(recall_at_k(sim, {0, 0, 1, 1, 1, 1}, ks),
                 std::invalid_argument);  // image 2 uncaptioned
}

TEST(LinearAdapter, LearnsTheSharedLatentAndIsSeeded) {
    const auto [xv, xt] = paired(2000, 5, 0.1f);
    std::vector<int> owner(2000);
    for (int i = 0; i < 2000; ++i) owner[static_cast<std::size_t>(i)] = i;
    LinearAdapterParams p{
        .dim = 8, .epochs = 10, .batch = 128, .lr = 3e-3, .temperature = 0.1, .seed = 9};
    const auto a = fit_linear_adapter(xv, xt, owner, p);
    EXPECT_EQ(a.steps, 10 * (2000 / 128));
    const auto [ev, et] = paired(300, 77, 0.1f);
    std::vector<int> eo(300);
    for (int i = 0; i < 300; ++i) eo[static_cast<std::size_t>(i)] = i;
    const int ks[] = {1, 10};
    const auto r = recall_at_k(linear_adapter_similarity(a, ev, et), eo, ks);
    const auto untrained =
        recall_at_k(linear_adapter_similarity(
                        fit_linear_adapter(xv, xt, owner, {.dim = 8, .epochs = 0}), ev, et),
                    eo, ks);
    EXPECT_GT(r[1], untrained[1] + 0.1);
    EXPECT_GT(r[1], 0.2);  // chance is 10/300
    const auto again = fit_linear_adapter(xv, xt, owner, p);
    EXPECT_EQ(again.w_v, a.w_v);
}
