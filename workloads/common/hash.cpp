#include "common/hash.h"

namespace compatbench {

std::uint64_t fnv1a64(std::string_view text, std::uint64_t basis) {
    std::uint64_t h = basis;
    for (unsigned char c : text) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

std::uint64_t task_seed(std::uint64_t experiment_seed, std::string_view task_id) {
    return splitmix64(fnv1a64(task_id) ^ splitmix64(experiment_seed));
}

std::string_view hex64(std::uint64_t value, char (&buffer)[17]) {
    static constexpr char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; --i) {
        buffer[i] = digits[value & 0xf];
        value >>= 4;
    }
    buffer[16] = '\0';
    return {buffer, 16};
}

}  // namespace compatbench
