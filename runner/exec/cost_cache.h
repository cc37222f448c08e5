// Task costs remembered across runs and output folders (docs/config.md `runner.cost_cache`),
// so that the ETA of a run whose groups ran before, in another folder, starts from what they
// cost then (exec/cost_model.h).
//   - One JSON file, by default $XDG_CACHE_HOME/compatbench/costs.json (else
//     ~/.cache/compatbench/costs.json); `runner.cost_cache` names another file or `none`, and
//     COMPATBENCH_COST_CACHE does the same from the environment.
//   - A group is known by its fingerprint: its kind and its keys, but not those that leave a
//     task's cost alone (name, table, cost, after, retries, timeout, print), so that the
//     same group in another config, seed or folder is found.
//   - Only the coordinator reads it (at start) and writes it (at the end of a run), under an
//     exclusive lock, to a temporary file renamed over the old one; each group's entry is the
//     mean of its tasks in the newest run that finished any.
//   - A cache that cannot be read or written costs a warning, never the run.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "exec/cost_model.h"
#include "experiment/experiment.h"

namespace compatbench {

struct RememberedCost {
    double seconds = 0.0;     // mean seconds per task
    std::size_t samples = 0;  // tasks it was measured on
    std::string group;        // the group's name then (for a reader of the file)
    std::string host;         // where
    double updated = 0.0;     // seconds since the epoch
};

// The group's fingerprint: 16 hex digits.
std::string group_fingerprint(const TaskGroup& group);

// The cache file the config asks for; empty: none.
std::filesystem::path cost_cache_path(const RunnerSettings& runner,
                                      const std::filesystem::path& config_dir);

// The entries of `path` by fingerprint; none when the file is absent. Throws
// std::runtime_error naming the file and the reason when it cannot be read or parsed.
std::map<std::string, RememberedCost> load_cost_cache(const std::filesystem::path& path);

// Adds or replaces `entries` (by fingerprint) in `path`, keeping the others; creates the
// folder. Throws std::runtime_error naming the file and the reason.
void store_cost_cache(const std::filesystem::path& path,
                      const std::map<std::string, RememberedCost>& entries);

// The cost memory of a run. recall_costs reads the cache the config asks for into `model`
// (what its groups cost in earlier runs elsewhere) and returns the file ("" when none);
// remember_costs writes the groups `model` measured, on `host`, to that file. A cache that
// cannot be read or written costs a warning.
std::filesystem::path recall_costs(const Config& config, CostModel& model);
void remember_costs(const std::filesystem::path& path, const Config& config, const CostModel& model,
                    const std::string& host);

}  // namespace compatbench
