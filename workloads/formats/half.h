// IEEE half (F16) and bfloat16 (BF16) <-> float32, bit-exact, round-to-nearest-even.
#pragma once

#include <cstdint>
#include <cstring>

namespace compatbench::formats {

float bf16_to_f32(std::uint16_t bits);
// Round to nearest, ties to even; NaN stays NaN (quiet), infinities stay infinite. Inline
// and branch-light, so that writing a merged BF16 tensor vectorises.
inline std::uint16_t f32_to_bf16(float value) {
    std::uint32_t u;
    std::memcpy(&u, &value, 4);
    const bool nan = (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0;
    const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(nan ? (u >> 16) | 0x0040u : (u + rounding) >> 16);
}

float f16_to_f32(std::uint16_t bits);
// Round to nearest, ties to even; overflow gives infinity, underflow subnormals or zero.
std::uint16_t f32_to_f16(float value);

}  // namespace compatbench::formats
