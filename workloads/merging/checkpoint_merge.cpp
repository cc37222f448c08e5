#include "merging/checkpoint_merge.h"

#include <numeric>

namespace compatbench::merging {

formats::CheckpointLayout merged_layout(const CheckpointSource& source,
                                        std::optional<formats::DType> out_dtype) {
    formats::CheckpointLayout layout;
    for (std::size_t i = 0; i < source.size(); ++i) {
        const auto& t = source.info(i);
        const formats::DType merged = out_dtype ? *out_dtype : source.result_dtype(i);
        layout.add(source.name(i), source.mergeable(i) ? merged : t.dtype, t.shape);
    }
    return layout;
}

std::vector<std::size_t> all_tensors(const CheckpointSource& source) {
    std::vector<std::size_t> all(source.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    return all;
}

void write_merged(ModelMerge& merge, const CheckpointSource& source, double rho,
                  const formats::CheckpointLayout& layout, std::span<const std::size_t> tensors,
                  const std::function<void()>& after_tensor) {
    for (const std::size_t i : tensors) {
        const auto& t = source.info(i);
        if (!source.mergeable(i)) {
            layout.write(i, source.base_file(i).raw(t));
            continue;
        }
        formats::TensorWriter writer(layout, i);
        merge.merge(source, i, rho,
                    [&](std::size_t, std::span<const float> merged) { writer.append(merged); });
        writer.finish();
        if (after_tensor) after_tensor();
    }
}

}  // namespace compatbench::merging
