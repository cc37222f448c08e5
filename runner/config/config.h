// The experiment config: YAML, validated completely before any work starts.
//
//   experiment: {name: demo, seed: 42}
//   runner:     {retries: 1, timeout: 0, on_signal: finish, progress_interval: 10, ...}
//   tasks:      [{name: prep, kind: noop, count: 100}, {name: work, kind: sleep, ...}]
//   analyses:   [{name: corr, kind: correlation, study: demo, input: work, ...}]
//
// The key reference is docs/config.md.
//
// This layer parses and checks the YAML into values and knows no task or analysis kind:
// parse_config_text gives each group's and analysis's `kind` as a name, its kind keys
// unchecked, and nothing the YAML does not say. experiment/experiment.h binds the kinds
// (load_config, parse_config: a TaskGroup per group, kind/task_group.h).
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/yaml_check.h"
#include "core/value.h"

namespace compatbench {

enum class SignalPolicy { finish, abandon };

// Scheduling knobs: they do not change any result, so they are not part of the config hash.
struct RunnerSettings {
    int retries = 0;       // extra attempts of a failed task
    double timeout = 0.0;  // seconds per attempt of a command task; 0 = none
    SignalPolicy on_signal = SignalPolicy::finish;
    double progress_interval = 10.0;  // seconds between progress lines
    double fsync_interval = 0.02;     // seconds: ledger group-commit window
    double row_flush_interval = 2.0;  // seconds between a rank's buffered HDF5 row writes
    double log_limit_mb = 16.0;       // MB of a command task's log kept (its head and tail)
    double min_free_mb = 64.0;        // MB the output folder's file system must have at start
    double stall_timeout = 120.0;     // seconds a collective results.h5 step may leave the file
                                      // unchanged before its rank ends the job; 0 = no limit
    // Placement (docs/gpus.md). `devices`: the GPUs of each node, by host name ("*": every
    // node), split among the node's ranks; empty: read from the environment.
    std::vector<std::pair<std::string, std::vector<std::string>>> devices;
    int threads = 0;                     // threads per rank for commands; 0: from SLURM or cores
    bool cpu_tasks_on_gpu_ranks = true;  // false: ranks holding GPUs run GPU tasks only
    bool server_per_task = false;        // servers: per_task: a fresh server for every task
    // Task costs remembered across runs (exec/cost_cache.h): a file (relative to the config's
    // folder), "none", or empty for the default.
    std::string cost_cache;
};

// One `tasks:` entry: a group of tasks of one kind, expanded over `count` or `grid`.
struct GroupSpec {
    std::string name;
    std::string kind_name;
    std::string table;  // results.h5 group holding one row per task
    std::vector<std::pair<std::string, std::vector<Scalar>>> grid;  // ordered
    std::int64_t count = -1;                                        // -1: no count
    std::string id_template;                                        // "" = default ids
    std::vector<std::pair<std::string, YAML::Mark>> after;
    int retries = 0;
    double timeout = 0.0;
    std::uint64_t log_limit = 16000000;  // bytes of a command task's log kept (runner's)
    double cost = 1.0;  // relative cost hint: larger first; plan's critical path (1, or
                        // kCommandCost for a group running a command, when not given)
    bool cost_given = false;
    bool print = false;  // print the group's table on the console at the end of a run
    int gpus = 0;        // devices each task needs; it runs only on a rank holding that many
    bool server_per_task = false;  // the runner's `servers: per_task`
    YAML::Mark mark;
    YAML::Mark id_mark;    // where `id:` is, when given
    nlohmann::json entry;  // the whole entry (the cost memory's fingerprint)
    // The entry, for its kind to read when the group is bound; empty after that (the kind
    // keeps what it needs in the group's settings, kind/task_group.h).
    YAML::Node node;
    std::filesystem::path config_dir;  // the config file's folder, absolute ({config_dir})
};

struct AnalysisSpec {
    std::string name;
    std::string kind_name;
    std::string study;  // written under /<study>/analysis/
    std::string input;  // the task group whose rows it reads
    YAML::Node node;
    YAML::Mark mark;
};

// What the config says besides its groups and analyses, parsed or bound alike.
struct ConfigHeader {
    std::string path;
    std::string text;
    std::string name;
    std::uint64_t seed = 0;
    std::string hash;  // 16 hex digits over everything but `runner:`
    RunnerSettings runner;
};

// The config as its YAML says, every kind still a name (experiment/experiment.h binds them).
struct ParsedConfig : ConfigHeader {
    std::vector<GroupSpec> groups;
    std::vector<AnalysisSpec> analyses;
};

// Parses and checks everything but the kinds. Throws ConfigError (one line:
// file:line:col: key: reason). `seed` replaces experiment.seed (a seed-replicate job array
// runs one config under several seeds); the config hash then covers the seed given. `path`
// names the text in errors.
ParsedConfig parse_config_text(const std::string& text, const std::string& path,
                               std::optional<std::uint64_t> seed = {});
// The text of the config file `path` (ConfigError when it cannot be read).
std::string read_config_file(const std::string& path);

// The keys every `tasks:` entry, and every `analyses:` entry, may have whatever its kind.
const std::vector<KeyRule>& group_key_rules();
const std::vector<KeyRule>& analysis_key_rules();

// A device list: "0,1", [0, 1] or "" (none); names checked, no repeats.
std::vector<std::string> parse_device_list(const YamlChecker& yc, const YAML::Node& node,
                                           const std::string& path);
// The same from a command-line text ("0,1"); throws std::invalid_argument naming the reason.
std::vector<std::string> parse_device_text(const std::string& text);

// YAML -> JSON with scalars as their text (used for the config hash and the ledger).
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace compatbench
