#include "app/advice_io.h"

#include "formats/json_file.h"
#include "store/table_file.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace compatbench {

YAML::Node load_manifest_yaml(const std::string& path) {
    try {
        YAML::Node root = YAML::LoadFile(path);
        refuse_repeated_keys(root, path);
        return root;
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
    formats::write_text_file(path, j.dump(1) + "\n");
}

namespace {
Value cell_of(const nlohmann::json& v) {
    if (v.is_boolean()) return static_cast<std::int64_t>(v.get<bool>());
    if (v.is_null()) return std::nan("");
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) return v.get<std::string>();
    std::string joined;
    for (const auto& e : v) {
        if (!joined.empty()) joined += '+';
        joined += e.get<std::string>();
    }
    return joined;
}
ColumnType type_of(const Value& v) {
    if (std::holds_alternative<std::string>(v)) return ColumnType::str;
    return std::holds_alternative<std::int64_t>(v) ? ColumnType::i64 : ColumnType::f64;
}
}  // namespace

void write_h5_table(const std::string& path, const std::string& group, const nlohmann::json& rows) {
    TableFile file(path);
    file.add_group(group);
    if (rows.empty()) return;
    TableData table = TableData::make(group, {});
    for (const auto& [key, first] : rows.front().items()) {
        std::vector<Value> cells;
        for (const auto& r : rows) cells.push_back(cell_of(r.at(key)));
        ColumnSpec spec{key, type_of(cell_of(first)), 0};
        for (const auto& c : cells)
            if (spec.type == ColumnType::f64 && !std::holds_alternative<double>(c))
                spec.type = type_of(c);
        table.add_column(spec);
        table.values.back() = std::move(cells);
    }
    file.write(table);
}

nlohmann::json finite_or_null(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::string csv_cell(const nlohmann::json& v) {
    if (v.is_null()) return "";
    return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace compatbench
