// The experiment: a config with every task and analysis kind bound. The config layer parses
// and checks the YAML into values and knows no kind; here each group finds its kind in the
// task registry, which checks the group's own keys, lists its tasks and declares its output
// columns, and each analysis finds its kind, which checks its input groups' columns.
#pragma once

#include <optional>
#include <string>

#include "config/config.h"
#include "kind/task_group.h"

namespace compatbench {

class AnalysisKind;

// An analysis bound to its kind, checked against its input groups' columns.
struct Analysis : AnalysisSpec {
    const AnalysisKind* kind = nullptr;
};

// The experiment's config with every kind bound: what the run, the graph and the results
// file work from.
struct Config : ConfigHeader {
    std::vector<TaskGroup> groups;
    std::vector<Analysis> analyses;
};

// Reads, parses and binds the config file `path`. Throws ConfigError (one line:
// file:line:col: key: reason). `seed` replaces experiment.seed.
Config load_config(const std::string& path, std::optional<std::uint64_t> seed = {});
// Same, from text already in memory (`path` names it in errors).
Config parse_config(const std::string& text, const std::string& path,
                    std::optional<std::uint64_t> seed = {});

}  // namespace compatbench
