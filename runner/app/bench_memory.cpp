// `compatbench bench memory`: this machine's single-core memory read bandwidth (a vectorised
// sum over a buffer much larger than the caches), the yardstick of `screen`'s throughput.
#include <chrono>
#include <cstdio>
#include <vector>

#include "app/verbs.h"
#include "common/eigen.h"
#include "exec/signals.h"

namespace compatbench {

int verb_bench_memory(std::size_t megabytes, int repeats) {
    const std::size_t n = megabytes * 1024 * 1024 / sizeof(float);
    std::vector<float> buffer(n);
    for (std::size_t i = 0; i < n; ++i) buffer[i] = static_cast<float>(i & 1023);
    const Eigen::Map<const Eigen::ArrayXf> a(buffer.data(), static_cast<Eigen::Index>(n));
    double best = 1e300, sink = 0.0;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        sink += static_cast<double>(a.sum());
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double gbs = static_cast<double>(n * sizeof(float)) / 1e9 / best;
    std::printf("memory read bandwidth, 1 core: %.2f GB/s (%zu MB, best of %d; checksum %.3g)\n",
                gbs, megabytes, repeats, sink);
    return kExitOk;
}

}  // namespace compatbench
