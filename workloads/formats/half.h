// IEEE half (F16) and bfloat16 (BF16) <-> float32, bit-exact, round-to-nearest-even.
#pragma once

#include <cstdint>

namespace compatbench::formats {

float bf16_to_f32(std::uint16_t bits);
// Round to nearest, ties to even; NaN stays NaN (quiet), infinities stay infinite.
std::uint16_t f32_to_bf16(float value);

float f16_to_f32(std::uint16_t bits);
// Round to nearest, ties to even; overflow gives infinity, underflow subnormals or zero.
std::uint16_t f32_to_f16(float value);

}  // namespace compatbench::formats
