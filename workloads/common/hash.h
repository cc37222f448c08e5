// Stable, platform-independent hashing for seeds and config identity.
//
// A task's seed is task_seed(experiment_seed, task_id) (architecture.md "Tasks and the
// graph"): it depends on nothing but those two values, so a task computes the same bytes on
// any rank, in any order, and across resumes.
#pragma once

#include <cstdint>
#include <string_view>

namespace compatbench {

// FNV-1a, 64 bit, over the bytes of `text`.
std::uint64_t fnv1a64(std::string_view text, std::uint64_t basis = 0xcbf29ce484222325ULL);

// SplitMix64 finaliser: a bijective mixer of 64-bit values.
inline std::uint64_t splitmix64(std::uint64_t x) {  // inline: DARE draws one per coordinate
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// The seed of task `task_id` in an experiment with seed `experiment_seed`.
std::uint64_t task_seed(std::uint64_t experiment_seed, std::string_view task_id);

// A uniform double in [0, 1) from 53 bits of `bits`.
inline double unit_double(std::uint64_t bits) {
    return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// 16 lowercase hex digits.
std::string_view hex64(std::uint64_t value, char (&buffer)[17]);

}  // namespace compatbench
