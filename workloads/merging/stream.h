// Streaming interference statistics (methods.md §3.1) straight from checkpoint tensors of
// any float dtype (F32, F16, BF16, F64): a tensor is read (formats::TensorReader) and, when
// not BF16 or F32 throughout, converted a chunk at a time, so memory stays at a few chunks
// whatever the model size.
#pragma once

#include <span>

#include "formats/safetensors.h"
#include "merging/interference.h"

namespace compatbench::merging {

struct TensorRef {
    const formats::SafetensorsFile* file = nullptr;
    const formats::TensorInfo* info = nullptr;
};

// The sums of I, D and C over the coordinates of one tensor, τ_i = model_i - base. Every
// reference must have the base's element count (std::invalid_argument otherwise).
InterferenceSums stream_interference(const TensorRef& base, std::span<const TensorRef> models);

}  // namespace compatbench::merging
