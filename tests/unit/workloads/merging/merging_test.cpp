// methods.md §3.1, §3.2: interference decomposition and task arithmetic on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>

#include "merging/merging.h"
#include "test_support.h"

using namespace compatbench::merging;

TEST(Interference, HandComputedDecomposition) {
    // Coordinate 0: τ = (1, 3): mean 2, mean|τ| 2, mean τ² 5 -> I = 1, D = 1, C = 0.
    // Coordinate 1: τ = (1, -1): mean 0, mean|τ| 1, mean τ² 1 -> I = 1, D = 0, C = 1.
    // Coordinate 2: τ = (0, 0): all zero.
    const std::vector<float> a = {1, 1, 0}, b = {3, -1, 0};
    const std::span<const float> taus[] = {a, b};
    const auto s = interference(taus);
    EXPECT_EQ(s.count, 3u);
    EXPECT_DOUBLE_EQ(s.interference, 2.0);
    EXPECT_DOUBLE_EQ(s.dispersion, 1.0);
    EXPECT_DOUBLE_EQ(s.cancellation, 1.0);
    EXPECT_DOUBLE_EQ(s.mean_interference(), 2.0 / 3);
    EXPECT_DOUBLE_EQ(s.rho(), 0.5);
    EXPECT_DOUBLE_EQ(screening_score(s.mean_interference(), 2, 0.5), 0.5 * std::sqrt(1.0 / 3));
    InterferenceSums total = s;
    total.add(s);
    EXPECT_EQ(total.count, 6u);
    EXPECT_DOUBLE_EQ(total.rho(), 0.5);
    EXPECT_TRUE(std::isnan(InterferenceSums{}.rho()));
}

TEST(Interference, EqualsTheAmbiguityIdentity) {
    // I_j = mean τ² - τ̄² for K = 5 random task vectors (population variance).
    const auto m = compatbench::test::random_matrix(200, 5, 3);
    std::vector<std::vector<float>> cols(5);
    std::vector<std::span<const float>> taus;
    for (int i = 0; i < 5; ++i) {
        cols[static_cast<std::size_t>(i)].assign(m.col(i).data(), m.col(i).data() + 200);
        taus.emplace_back(cols[static_cast<std::size_t>(i)]);
    }
    double want = 0.0;
    for (int j = 0; j < 200; ++j) {
        const double mean = m.row(j).cast<double>().mean();
        want += m.row(j).cast<double>().array().square().mean() - mean * mean;
    }
    const auto s = interference(taus);
    EXPECT_NEAR(s.interference, want, 1e-9);
    EXPECT_NEAR(s.dispersion + s.cancellation, s.interference, 1e-9);
    EXPECT_GT(s.rho(), 0.3);  // random signs cancel a lot
}

TEST(TaskArithmetic, MeanAndSum) {
    const std::vector<float> base = {1, 2}, t1 = {0.5f, -1}, t2 = {1.5f, 1};
    const std::span<const float> taus[] = {t1, t2};
    std::vector<float> out(2);
    task_arithmetic(base, taus, 1.0, Normalize::mean, out);
    EXPECT_EQ(out, (std::vector<float>{2, 2}));
    task_arithmetic(base, taus, 0.3, Normalize::sum, out);
    EXPECT_FLOAT_EQ(out[0], 1.6f);
    EXPECT_FLOAT_EQ(out[1], 2.0f);
    EXPECT_EQ(task_vector(std::vector<float>{3, 1}, base), (std::vector<float>{2, -1}));
    const std::vector<float> short_tau = {1};
    const std::span<const float> bad[] = {t1, short_tau};
    EXPECT_THROW(task_arithmetic(base, bad, 1.0, Normalize::mean, out), std::invalid_argument);
}
