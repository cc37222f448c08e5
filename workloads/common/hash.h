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
std::uint64_t splitmix64(std::uint64_t x);

// The seed of task `task_id` in an experiment with seed `experiment_seed`.
std::uint64_t task_seed(std::uint64_t experiment_seed, std::string_view task_id);

// A uniform double in [0, 1) from 53 bits of `bits`.
double unit_double(std::uint64_t bits);

// 16 lowercase hex digits.
std::string_view hex64(std::uint64_t value, char (&buffer)[17]);

}  // namespace compatbench
