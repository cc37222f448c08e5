// Validation helpers for YAML configs: every error names file, line, column, key, reason.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace compatbench {

// A config error, formatted as "<file>:<line>:<column>: <key>: <reason>" (1-based).
class ConfigError : public std::runtime_error {
  public:
    ConfigError(const std::string& file, const YAML::Mark& mark, const std::string& key,
                const std::string& reason);
    ConfigError(const std::string& file, const std::string& key, const std::string& reason);
};

enum class KeyType { integer, real, string, boolean, list, map, scalar_or_list, any };

// What one key of a YAML map may hold, written with named fields:
//   {.name = "density", .type = KeyType::real, .required = true, .min = 0, .max = 1}
struct KeyRule {
    std::string name;
    KeyType type = KeyType::any;
    bool required = false;
    double min = -1e308;  // inclusive bounds for integer/real keys
    double max = 1e308;
    std::vector<std::string> choices = {};  // allowed values of a string key (empty: any)
};

// Reads and checks YAML nodes of one config file.
class YamlChecker {
  public:
    explicit YamlChecker(std::string file) : file_(std::move(file)) {}
    const std::string& file() const { return file_; }

    // `node` at `path` must be a map whose keys all have a rule, with every required key
    // present and every value of its rule's type, range and choices.
    void check_map(const YAML::Node& node, const std::string& path,
                   const std::vector<KeyRule>& rules) const;
    // The same for the keys that have a rule; other keys are left for a later check (a
    // task group's kind keys, checked once the kind is bound).
    void check_known_keys(const YAML::Node& node, const std::string& path,
                          const std::vector<KeyRule>& rules) const;
    void check_value(const YAML::Node& value, const std::string& path, const KeyRule& rule) const;

    std::int64_t as_int(const YAML::Node& node, const std::string& path) const;
    double as_real(const YAML::Node& node, const std::string& path) const;
    std::string as_string(const YAML::Node& node, const std::string& path) const;
    bool as_bool(const YAML::Node& node, const std::string& path) const;

    [[noreturn]] void fail(const YAML::Node& node, const std::string& path,
                           const std::string& reason) const;

  private:
    void check_keys(const YAML::Node& node, const std::string& path,
                    const std::vector<KeyRule>& rules, bool others_allowed) const;
    std::string file_;
};

// A YAML boolean's text as the checker reads it (true/True/yes, false/False/no).
std::optional<bool> parse_bool(const std::string& text);

// yaml-cpp keeps both entries of a map that repeats a key, and node[key] finds the first:
// every YAML file read (configs, manifests, mergekit configs) is refused there instead,
// naming the file, the line of the repeat and the key's path.
void refuse_repeated_keys(const YAML::Node& root, const std::string& file);

std::string join_path(const std::string& parent, const std::string& key);
std::string index_path(const std::string& parent, std::size_t index);

}  // namespace compatbench
