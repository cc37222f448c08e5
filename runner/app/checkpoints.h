// Checks shared by `screen` and `merge`: every model has the base's tensor with its shape
// and dtype; tensors are assigned to ranks largest first, each to the least-loaded rank.
#pragma once

#include <string>
#include <vector>

#include "formats/safetensors.h"
#include "merging/merging.h"

namespace compatbench {

// FormatError naming the model file and the tensor when a model lacks `name` or differs.
void check_like_base(const formats::Checkpoint& base,
                     const std::vector<formats::Checkpoint>& models, const std::string& name);

// The interference sums (methods.md §3.1) of tensor `name` across the models, streamed.
merging::InterferenceSums tensor_interference(const formats::Checkpoint& base,
                                              const std::vector<formats::Checkpoint>& models,
                                              const std::string& name);

// The rank of each tensor (sizes in elements), the same on every rank.
std::vector<int> assign_ranks(const std::vector<std::uint64_t>& sizes, int ranks);

}  // namespace compatbench
