// Shared by the merge operators' unit tests: one tensor, its values in memory, merged.
#pragma once

#include <span>
#include <vector>

#include "merging/operators.h"

namespace compatbench::merging::testing {

// `models[i]` are the θ_i of a tensor named "w", one row of all its values (DELLA's ranks),
// `last_dim` long rows for Model Stock's filter_wise and Arcee Fusion (0: one row).
inline std::vector<float> merged(const MergeParams& p, const std::vector<float>& base,
                                 const std::vector<std::vector<float>>& models,
                                 std::size_t last_dim = 0) {
    std::vector<std::span<const float>> views(models.begin(), models.end());
    std::vector<float> out(base.size());
    TensorScope s;
    s.name = "w";
    s.row_length = base.size();
    s.last_dim = last_dim;
    merge_tensor(p, s, base, views, out);
    return out;
}

}  // namespace compatbench::merging::testing
