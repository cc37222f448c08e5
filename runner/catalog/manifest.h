// A manifest a task group names (feature_set, checkpoint_set): a YAML file of paths.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"

namespace compatbench {

namespace fs = std::filesystem;

// A manifest file named by the `manifest` key of `group` (relative to the config file's
// folder), loaded and checked against `rules`; its own paths are relative to its folder,
// except those written {out}/..., which lie in the run's output folder ("@out/...", opened
// through catalog_path when a task runs).
struct Manifest {
    fs::path dir;
    YAML::Node root;
    YamlChecker checker;  // errors name the manifest file
    std::string resolve(const std::string& path) const;
};
Manifest load_manifest(const GroupSpec& group, const YamlChecker& checker,
                       const std::vector<KeyRule>& rules);

}  // namespace compatbench
