#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "formats/half.h"

using namespace compatbench::formats;

namespace {
std::uint32_t bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float from_bits(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace

TEST(Half, EveryF16RoundTrips) {
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = f16_to_f32(static_cast<std::uint16_t>(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
            continue;
        }
        ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
    }
    EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
}

TEST(Half, F16RoundsToNearestEven) {
    EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // below the midpoint to 65536
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // the tie rounds to even: infinity
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even (1.0)
    EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even
    EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal: tie -> 0
    EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
    EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_f16(1e-10f), 0x0000);
}

TEST(BFloat16, EveryBF16RoundTrips) {
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = bf16_to_f32(static_cast<std::uint16_t>(h));
        if (std::isnan(f)) continue;
        ASSERT_EQ(f32_to_bf16(f), h) << std::hex << h;
    }
}

TEST(BFloat16, RoundsToNearestEven) {
    EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // tie, even below
    EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // tie, even above
    EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);  // above the tie
    EXPECT_EQ(f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to infinity
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(from_bits(0x7f800001u)))));  // NaN kept
    EXPECT_EQ(bits(bf16_to_f32(0xbf80)), 0xbf800000u);
}
