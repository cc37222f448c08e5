#include "app/advice_io.h"

#include <cmath>
#include <fstream>
#include <stdexcept>

namespace compatbench {

YAML::Node load_manifest_yaml(const std::string& path) {
    try {
        return YAML::LoadFile(path);
    } catch (const YAML::Exception& e) {
        throw ConfigError(path, "", e.what());
    }
}

std::string manifest_path(const YamlChecker& yc, const YAML::Node& node, const std::string& key,
                          const std::string& value, const std::string& manifest,
                          const std::string& instead) {
    if (value.find("{out}") != std::string::npos)
        yc.fail(node, key, "a path in a run's output folder ({out}): give " + instead);
    const std::filesystem::path p(value);
    return p.is_absolute() ? value : (std::filesystem::path(manifest).parent_path() / p).string();
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
    std::ofstream out(path);
    out << j.dump(1) << "\n";
    if (!out) throw std::runtime_error(path + ": cannot write");
}

nlohmann::json finite_or_null(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::string csv_cell(const nlohmann::json& v) {
    if (v.is_null()) return "";
    return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace compatbench
