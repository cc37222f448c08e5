#include "app/checkpoints.h"

#include <algorithm>
#include <numeric>

#include "merging/stream.h"

namespace compatbench {

void check_like_base(const formats::Checkpoint& base,
                     const std::vector<formats::Checkpoint>& models, const std::string& name) {
    const auto& t = base.info(name);
    for (const auto& m : models) {
        const auto names = m.names();
        if (!std::binary_search(names.begin(), names.end(), name))
            throw formats::FormatError(m.path() + ": no tensor '" + name + "' (the base " +
                                       base.path() + " has it)");
        const auto& mt = m.info(name);
        if (mt.shape != t.shape)
            throw formats::FormatError(m.path() + ": tensor '" + name +
                                       "' differs in shape from the base " + base.path());
        if (mt.dtype != t.dtype)
            throw formats::FormatError(m.path() + ": tensor '" + name + "' is " +
                                       formats::dtype_name(mt.dtype) + ", the base's is " +
                                       formats::dtype_name(t.dtype));
    }
}

merging::InterferenceSums tensor_interference(const formats::Checkpoint& base,
                                              const std::vector<formats::Checkpoint>& models,
                                              const std::string& name) {
    const merging::TensorRef b{&base.file_of(name), &base.info(name)};
    std::vector<merging::TensorRef> refs;
    for (const auto& m : models) refs.push_back({&m.file_of(name), &m.info(name)});
    return merging::stream_interference(b, refs);
}

std::vector<int> assign_ranks(const std::vector<std::uint64_t>& sizes, int ranks) {
    std::vector<std::size_t> order(sizes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
    std::vector<std::uint64_t> load(static_cast<std::size_t>(ranks), 0);
    std::vector<int> owner(sizes.size(), 0);
    for (std::size_t i : order) {
        const auto r =
            static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        owner[i] = static_cast<int>(r);
        load[r] += sizes[i];
    }
    return owner;
}

}  // namespace compatbench
