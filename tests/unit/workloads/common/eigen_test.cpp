#include "common/eigen.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>

namespace compatbench {
namespace {

// Floats over the whole positive range, subnormals included, and a few exact squares.
Eigen::ArrayXf spread_of_floats() {
    std::mt19937 gen(11);
    std::uniform_int_distribution<std::uint32_t> bits(1u, 0x7f7fffffu);
    Eigen::ArrayXf a(4099);
    for (Eigen::Index i = 0; i < a.size() - 3; ++i) a(i) = std::bit_cast<float>(bits(gen));
    a.tail(3) << 4.0f, 0.25f, 1e-40f;
    return a;
}

TEST(ExactMath, FloatSqrtAndRsqrtAreStdSqrtRoundedBitForBit) {
    const Eigen::ArrayXf a = spread_of_floats();
    const Eigen::ArrayXf root = exact_sqrt(a), inv = exact_rsqrt(a + 0.0f);
    for (Eigen::Index i = 0; i < a.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(root(i)),
                  std::bit_cast<std::uint32_t>(std::sqrt(a(i))))
            << "at " << a(i);
        ASSERT_EQ(std::bit_cast<std::uint32_t>(inv(i)),
                  std::bit_cast<std::uint32_t>(1.0f / std::sqrt(a(i))))
            << "at " << a(i);
    }
    EXPECT_EQ(root(a.size() - 3), 2.0f);
    EXPECT_EQ(inv(a.size() - 2), 2.0f);
    EXPECT_GT(root(a.size() - 1), 0.0f);  // a subnormal is not flushed to zero
}

TEST(ExactMath, DoubleArraysAndExpressionsKeepTheirScalarType) {
    const Eigen::ArrayXd d = Eigen::ArrayXd::LinSpaced(5, 1.0, 9.0);
    const Eigen::ArrayXd r = exact_sqrt(d * 4.0);
    for (Eigen::Index i = 0; i < d.size(); ++i) EXPECT_EQ(r(i), std::sqrt(d(i) * 4.0));
    const Eigen::ArrayXd inv = exact_rsqrt(d);
    EXPECT_EQ(inv(0), 1.0);
    EXPECT_EQ(inv(4), 1.0 / 3.0);
}

}  // namespace
}  // namespace compatbench
