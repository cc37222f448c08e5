// What a rank holds for its tasks (docs/gpus.md): its host, its devices (GPUs, as
// CUDA_VISIBLE_DEVICES names them) and the threads a command may use. Read once at start
// (exec/placement.h); a task gets the first `gpus:` of its rank's devices, since a rank runs
// one task at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace compatbench {

struct RankResources {
    std::string host;
    std::vector<std::string> devices;
    int threads = 1;
    std::string
        source;  // where the devices were read: config, --devices, CUDA_VISIBLE_DEVICES, ...
};

// The devices a task that needs `gpus` of them gets on a rank holding `held`: the first ones.
inline std::vector<std::string> task_devices(const std::vector<std::string>& held, int gpus) {
    const auto n =
        std::min<std::size_t>(held.size(), static_cast<std::size_t>(gpus < 0 ? 0 : gpus));
    return {held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n)};
}

// "0,1" (empty for none).
inline std::string join_devices(const std::vector<std::string>& devices) {
    std::string s;
    for (const auto& d : devices) {
        if (!s.empty()) s += ',';
        s += d;
    }
    return s;
}

}  // namespace compatbench
