// The dtypes of safetensors and float32 conversions both ways (declared in safetensors.h).
#include <cstring>

#include "formats/half.h"
#include "formats/safetensors.h"

namespace compatbench::formats {

namespace {

struct DTypeEntry {
    DType dtype;
    const char* name;
    std::size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {DType::BOOL, "BOOL", 1}, {DType::U8, "U8", 1},     {DType::I8, "I8", 1},
    {DType::I16, "I16", 2},   {DType::U16, "U16", 2},   {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},   {DType::I64, "I64", 8},   {DType::U64, "U64", 8},
    {DType::F16, "F16", 2},   {DType::BF16, "BF16", 2}, {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},
};

}  // namespace

const char* dtype_name(DType dtype) {
    for (const auto& e : kDTypes) {
        if (e.dtype == dtype) return e.name;
    }
    return "?";
}

std::size_t dtype_size(DType dtype) {
    for (const auto& e : kDTypes) {
        if (e.dtype == dtype) return e.size;
    }
    return 0;
}

bool dtype_is_float(DType dtype) {
    return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 ||
           dtype == DType::F64;
}

DType dtype_from_name(const std::string& name) {
    for (const auto& e : kDTypes) {
        if (name == e.name) return e.dtype;
    }
    std::string known;
    for (const auto& e : kDTypes) known += (known.empty() ? "" : ", ") + std::string(e.name);
    throw FormatError("unsupported dtype '" + name + "' (readable: " + known + ")");
}

void to_f32(DType dtype, const std::uint8_t* src, std::size_t count, float* out) {
    switch (dtype) {
        case DType::F32:
            std::memcpy(out, src, count * 4);
            return;  // little-endian host
        case DType::BF16:
            // Inline and branch-free (a shift into the high half), so that it vectorises:
            // screening streams gigabytes through here.
            for (std::size_t i = 0; i < count; ++i) {
                std::uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);  // little-endian host
                const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
                std::memcpy(out + i, &u, 4);
            }
            return;
        case DType::F16:
            for (std::size_t i = 0; i < count; ++i) {
                out[i] = f16_to_f32(static_cast<std::uint16_t>(src[2 * i] | (src[2 * i + 1] << 8)));
            }
            return;
        case DType::F64:
            for (std::size_t i = 0; i < count; ++i) {
                double d;
                std::memcpy(&d, src + 8 * i, 8);
                out[i] = static_cast<float>(d);
            }
            return;
        default:
            throw FormatError(std::string("cannot convert ") + dtype_name(dtype) + " to float32");
    }
}

void from_f32(DType dtype, std::span<const float> values, std::uint8_t* out) {
    switch (dtype) {
        case DType::F32:
            std::memcpy(out, values.data(), values.size() * 4);
            return;
        case DType::BF16:
        case DType::F16:
            for (std::size_t i = 0; i < values.size(); ++i) {
                const std::uint16_t h =
                    dtype == DType::BF16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
                out[2 * i] = static_cast<std::uint8_t>(h & 0xff);
                out[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
            }
            return;
        case DType::F64:
            for (std::size_t i = 0; i < values.size(); ++i) {
                const double d = values[i];
                std::memcpy(out + 8 * i, &d, 8);
            }
            return;
        default:
            throw FormatError(std::string("cannot store float32 values as ") + dtype_name(dtype));
    }
}

std::vector<std::uint8_t> from_f32(DType dtype, std::span<const float> values) {
    std::vector<std::uint8_t> out(values.size() * dtype_size(dtype));
    from_f32(dtype, values, out.data());
    return out;
}

}  // namespace compatbench::formats
