// What the advice verbs (`advise align`, `advise merge`) share: their manifests read, paths
// in them resolved, numbers and cells written.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "config/yaml_check.h"

namespace compatbench {

// A manifest's YAML (ConfigError naming the file when it does not parse).
YAML::Node load_manifest_yaml(const std::string& path);

// A path of a manifest, relative to its folder; a path in a run's output folder ({out}) is
// refused at `key`, with `instead` (what to give on the command line).
std::string manifest_path(const YamlChecker& yc, const YAML::Node& node, const std::string& key,
                          const std::string& value, const std::string& manifest,
                          const std::string& instead);

// Writes `j` to `path` (std::runtime_error naming the file when it cannot).
void write_json_file(const std::string& path, const nlohmann::json& j);

// Writes the rows of `rows` (an array of objects, all with the same keys) as the table
// `group` of a new HDF5 file at `path`, one dataset per key: text as strings (arrays of text
// joined by "+"), numbers as f64 (null: NaN), booleans as i64.
void write_h5_table(const std::string& path, const std::string& group, const nlohmann::json& rows);

// A number, null when not finite; a CSV cell of a JSON value (empty for null, a string bare).
nlohmann::json finite_or_null(double v);
std::string csv_cell(const nlohmann::json& v);

}  // namespace compatbench
