#include "formats/half.h"

#include <cstring>

namespace compatbench::formats {

namespace {
std::uint32_t bits_of(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float float_of(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace

float bf16_to_f32(std::uint16_t bits) { return float_of(static_cast<std::uint32_t>(bits) << 16); }

float f16_to_f32(std::uint16_t bits) {
    const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu;
    std::uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0x1f) return float_of(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
    if (exponent != 0) return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    if (mantissa == 0) return float_of(sign);  // signed zero
    // Subnormal: normalise.
    int e = -1;
    do {
        ++e;
        mantissa <<= 1;
    } while ((mantissa & 0x400u) == 0);
    return float_of(sign | (static_cast<std::uint32_t>(112 - e) << 23) |
                    ((mantissa & 0x3ffu) << 13));
}

std::uint16_t f32_to_f16(float value) {
    const std::uint32_t u = bits_of(value);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or NaN
        return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (abs < 0x38800000u) {
        // Subnormal or zero in half: value = m * 2^-24.
        if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
        const std::uint32_t exponent = abs >> 23;
        const std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
        const std::uint32_t shift = 126u - exponent;  // 14 + (113 - exponent) - 1
        std::uint32_t half = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
        return static_cast<std::uint16_t>(sign | half);
    }
    // Normal: rebias the exponent and round the mantissa to 10 bits.
    std::uint32_t h = ((abs >> 13) - (112u << 10));
    const std::uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
}

}  // namespace compatbench::formats
