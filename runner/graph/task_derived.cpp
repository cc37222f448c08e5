// What a task's group and its index `k` give on demand: its parameters, list parameters and
// key columns (graph/task_graph.h), so that a task holds no copy of them.
#include "graph/task_graph.h"

namespace compatbench {

namespace {
// A grid or listing key's value in its column's type.
Value key_value(const Scalar& s, const ColumnSpec& column) {
    switch (column.type) {
        case ColumnType::i64:
            return s.integer;
        case ColumnType::f64:
            return s.as_double();
        default:
            return s.text;
    }
}
}  // namespace

// The k-th point of the group's grid (first axis outermost).
std::vector<const Scalar*> TaskGraph::grid_point(const TaskGroup& g, std::size_t k) {
    std::vector<const Scalar*> point(g.grid.size());
    for (std::size_t a = g.grid.size(); a-- > 0;) {
        const auto& values = g.grid[a].second;
        point[a] = &values[k % values.size()];
        k /= values.size();
    }
    return point;
}

std::map<std::string, Scalar> TaskGraph::params(const Config& config, std::size_t i) const {
    const Task& t = tasks_[i];
    const TaskGroup& g = config.groups[t.group];
    std::map<std::string, Scalar> params = g.params;
    if (g.count >= 0) params["i"] = Scalar::parse(std::to_string(t.k));
    const auto point = grid_point(g, t.k);
    for (std::size_t a = 0; a < point.size(); ++a) params[g.grid[a].first] = *point[a];
    if (!g.listed.empty()) {
        const ListedTask& listed = g.listed[t.k];
        for (const auto& [key, value] : listed.params) params[key] = value;
        for (const auto& [key, value] : listed.keys) params[key] = value;
    }
    return params;
}

const std::map<std::string, std::vector<Scalar>>& TaskGraph::lists(const Config& config,
                                                                   std::size_t i) const {
    static const std::map<std::string, std::vector<Scalar>> none;
    const Task& t = tasks_[i];
    const TaskGroup& g = config.groups[t.group];
    return g.listed.empty() ? none : g.listed[t.k].lists;
}

Row TaskGraph::key_row(const Config& config, std::size_t i) const {
    const Task& t = tasks_[i];
    const TaskGroup& g = config.groups[t.group];
    const std::vector<ColumnSpec>& columns = table_of_group(t.group).columns;
    Row keys;
    keys.reserve(columns.size());
    keys.emplace_back(t.id);
    keys.emplace_back(t.seed);
    if (g.count >= 0) keys.push_back(static_cast<std::int64_t>(t.k));
    const auto point = grid_point(g, t.k);
    for (std::size_t a = 0; a < point.size(); ++a)
        keys.push_back(key_value(*point[a], columns[2 + (g.count >= 0) + a]));
    if (!g.listed.empty())
        for (std::size_t a = 0; a < g.listed[t.k].keys.size(); ++a)
            keys.push_back(key_value(g.listed[t.k].keys[a].second, columns[2 + a]));
    return keys;
}

}  // namespace compatbench
