#include "analyses/column_args.h"

#include <algorithm>

namespace compatbench {

std::vector<std::string> column_args(const AnalysisSpec& spec, const std::string& key,
                                     const std::vector<ColumnSpec>& columns, bool numeric,
                                     const YamlChecker& checker) {
    const std::string path = "analyses." + spec.name + "." + key;
    const YAML::Node node = spec.node[key];
    std::vector<std::pair<std::string, YAML::Node>> names;
    if (!node) checker.fail(spec.node, path, "missing required key '" + key + "'");
    if (node.IsScalar()) {
        names.emplace_back(node.Scalar(), node);
    } else {
        if (node.size() == 0) checker.fail(node, path, "expected at least one column name");
        for (std::size_t i = 0; i < node.size(); ++i) {
            names.emplace_back(checker.as_string(node[i], index_path(path, i)), node[i]);
        }
    }
    std::vector<std::string> out;
    for (const auto& [name, where] : names) {
        auto it = std::find_if(columns.begin(), columns.end(),
                               [&](const ColumnSpec& c) { return c.name == name; });
        if (it == columns.end()) {
            std::string known;
            for (const auto& c : columns) known += (known.empty() ? "" : ", ") + c.name;
            checker.fail(where, path,
                         "no column '" + name + "' in table " + spec.input + " (" + known + ")");
        }
        if (numeric && it->type == ColumnType::str) {
            checker.fail(where, path, "column '" + name + "' holds strings, not numbers");
        }
        out.push_back(name);
    }
    return out;
}

}  // namespace compatbench
