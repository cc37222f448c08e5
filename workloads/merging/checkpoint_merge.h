// A model merge written as a safetensors checkpoint (methods.md §3.2), streamed: each tensor
// of the base is merged a block at a time into its place in the output (or, when not
// floating point, copied), so memory stays at a few blocks per input whatever the model size.
// `compatbench merge` spreads the tensors over ranks; a merge task writes them all.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "formats/layout.h"
#include "merging/model_merge.h"

namespace compatbench::merging {

// The output's layout, not yet planned: every tensor of the base at its place, merged
// (floating-point) ones in `out_dtype` when given, the others in their own dtype.
formats::CheckpointLayout merged_layout(const CheckpointSource& source,
                                        std::optional<formats::DType> out_dtype = {});

// Every tensor of `source`, in order: what a merge task writes.
std::vector<std::size_t> all_tensors(const CheckpointSource& source);

// Pass 2 into a planned and created layout: each tensor of `tensors` (indices into the
// source) merged with the merge's ρ, or the base's bytes when not floating point;
// `after_tensor` runs after each merged tensor (to sample memory, or cancel).
void write_merged(ModelMerge& merge, const CheckpointSource& source, double rho,
                  const formats::CheckpointLayout& layout, std::span<const std::size_t> tensors,
                  const std::function<void()>& after_tensor = {});

}  // namespace compatbench::merging
