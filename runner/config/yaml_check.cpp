#include "config/yaml_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/value.h"

namespace compatbench {

namespace {
std::string located(const std::string& file, const YAML::Mark& mark) {
    if (mark.is_null()) return file;
    return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

const char* type_name(KeyType type) {
    switch (type) {
        case KeyType::integer:
            return "an integer";
        case KeyType::real:
            return "a number";
        case KeyType::string:
            return "a string";
        case KeyType::boolean:
            return "true or false";
        case KeyType::list:
            return "a list";
        case KeyType::map:
            return "a map";
        case KeyType::scalar_or_list:
            return "a scalar or a list";
        case KeyType::any:
            return "a value";
    }
    return "a value";
}

std::string format_number(double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    return std::to_string(v);
}
}  // namespace

ConfigError::ConfigError(const std::string& file, const YAML::Mark& mark, const std::string& key,
                         const std::string& reason)
    : std::runtime_error(located(file, mark) + ": " + key + ": " + reason) {}

ConfigError::ConfigError(const std::string& file, const std::string& key, const std::string& reason)
    : std::runtime_error(file + ": " + key + ": " + reason) {}

namespace {
// The positions of the maps and lists walked (`walked`) and of those being walked (`open`):
// an alias is the node it names, walked once; one used inside itself is refused (any walk
// of it, the config hash's included, would not end).
struct Walk {
    const std::string& file;
    std::set<int> walked, open;
};

void refuse_repeats_under(const YAML::Node& node, const std::string& path, Walk& w, int depth) {
    if (depth > 200) throw ConfigError(w.file, node.Mark(), path, "nested deeper than 200 levels");
    if (!node.IsSequence() && !node.IsMap()) return;
    const int at = node.Mark().pos;
    if (w.open.count(at))
        throw ConfigError(w.file, node.Mark(), path, "an anchor is used inside itself");
    if (!w.walked.insert(at).second) return;
    w.open.insert(at);
    if (node.IsSequence()) {
        for (std::size_t i = 0; i < node.size(); ++i)
            refuse_repeats_under(node[i], index_path(path, i), w, depth + 1);
    } else {
        std::map<std::string, YAML::Mark> keys;
        for (const auto& kv : node) {
            const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "(a non-scalar key)";
            const auto [first, fresh] = keys.emplace(key, kv.first.Mark());
            if (!fresh)
                throw ConfigError(w.file, kv.first.Mark(), join_path(path, key),
                                  "the key is given twice in one map (first at line " +
                                      std::to_string(first->second.line + 1) +
                                      "): remove one of them");
            refuse_repeats_under(kv.second, join_path(path, key), w, depth + 1);
        }
    }
    w.open.erase(at);
}
}  // namespace

void refuse_repeated_keys(const YAML::Node& root, const std::string& file) {
    Walk w{file, {}, {}};
    refuse_repeats_under(root, "", w, 0);
}

std::string join_path(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
}

std::string index_path(const std::string& parent, std::size_t index) {
    return parent + "[" + std::to_string(index) + "]";
}

void YamlChecker::fail(const YAML::Node& node, const std::string& path,
                       const std::string& reason) const {
    throw ConfigError(file_, node.Mark(), path.empty() ? "(top level)" : path, reason);
}

void YamlChecker::check_map(const YAML::Node& node, const std::string& path,
                            const std::vector<KeyRule>& rules) const {
    check_keys(node, path, rules, false);
}

void YamlChecker::check_known_keys(const YAML::Node& node, const std::string& path,
                                   const std::vector<KeyRule>& rules) const {
    check_keys(node, path, rules, true);
}

void YamlChecker::check_keys(const YAML::Node& node, const std::string& path,
                             const std::vector<KeyRule>& rules, bool others_allowed) const {
    if (!node.IsMap()) fail(node, path, "expected a map of keys");
    for (const auto& entry : node) {
        const std::string key = entry.first.as<std::string>();
        auto rule = std::find_if(rules.begin(), rules.end(),
                                 [&](const KeyRule& r) { return r.name == key; });
        if (rule == rules.end()) {
            if (others_allowed) continue;
            std::string allowed;
            for (const auto& r : rules) allowed += (allowed.empty() ? "" : ", ") + r.name;
            fail(entry.first, join_path(path, key),
                 "unknown key '" + key + "' (allowed here: " + allowed + ")");
        }
        check_value(entry.second, join_path(path, key), *rule);
    }
    for (const auto& rule : rules) {
        if (rule.required && !node[rule.name]) {
            fail(node, join_path(path, rule.name), "missing required key '" + rule.name + "'");
        }
    }
}

void YamlChecker::check_value(const YAML::Node& value, const std::string& path,
                              const KeyRule& rule) const {
    const auto wrong = [&]() {
        fail(value, path, std::string("expected ") + type_name(rule.type));
    };
    switch (rule.type) {
        case KeyType::integer:
        case KeyType::real: {
            if (!value.IsScalar()) wrong();
            const double v = rule.type == KeyType::integer
                                 ? static_cast<double>(as_int(value, path))
                                 : as_real(value, path);
            if (v < rule.min || v > rule.max) {
                fail(value, path,
                     "value " + value.Scalar() + " is out of range [" + format_number(rule.min) +
                         ", " + format_number(rule.max) + "]");
            }
            break;
        }
        case KeyType::string: {
            if (!value.IsScalar()) wrong();
            if (!rule.choices.empty() && std::find(rule.choices.begin(), rule.choices.end(),
                                                   value.Scalar()) == rule.choices.end()) {
                std::string allowed;
                for (const auto& c : rule.choices) allowed += (allowed.empty() ? "" : ", ") + c;
                fail(value, path, "'" + value.Scalar() + "' is not one of: " + allowed);
            }
            break;
        }
        case KeyType::boolean:
            as_bool(value, path);
            break;
        case KeyType::list:
            if (!value.IsSequence()) wrong();
            break;
        case KeyType::map:
            if (!value.IsMap()) wrong();
            break;
        case KeyType::scalar_or_list:
            if (!value.IsScalar() && !value.IsSequence()) wrong();
            break;
        case KeyType::any:
            break;
    }
}

std::int64_t YamlChecker::as_int(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, path, "expected an integer");
    const Scalar s = Scalar::parse(node.Scalar());
    if (s.kind != Scalar::Kind::integer) {
        fail(node, path, "expected an integer, got '" + node.Scalar() + "'");
    }
    return s.integer;
}

double YamlChecker::as_real(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, path, "expected a number");
    const Scalar s = Scalar::parse(node.Scalar());
    if (!s.is_number() || !std::isfinite(s.as_double())) {
        fail(node, path, "expected a finite number, got '" + node.Scalar() + "'");
    }
    return s.as_double();
}

std::string YamlChecker::as_string(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, path, "expected a string");
    return node.Scalar();
}

std::optional<bool> parse_bool(const std::string& s) {
    if (s == "true" || s == "True" || s == "yes") return true;
    if (s == "false" || s == "False" || s == "no") return false;
    return std::nullopt;
}

bool YamlChecker::as_bool(const YAML::Node& node, const std::string& path) const {
    if (node.IsScalar())
        if (const auto b = parse_bool(node.Scalar())) return *b;
    fail(node, path, "expected true or false");
}

}  // namespace compatbench
