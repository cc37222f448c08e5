// Before the run: an analysis's cluster column that is a key column of its input group must
// hold two or more values over the group's tasks (methods.md §5.2), or the config is refused
// naming the key. A column that tasks output is judged at the end, with its reason.
#include <algorithm>
#include <set>

#include "analyses/inference.h"
#include "graph/task_graph.h"

namespace compatbench {

void TaskGraph::check_cluster_columns(const Config& config) const {
    for (const Analysis& a : config.analyses) {
        std::size_t g = 0;
        while (g < config.groups.size() && config.groups[g].name != a.input) ++g;
        if (g == config.groups.size() || group_begin(g) == group_end(g)) continue;
        const auto& columns = table_of_group(g).columns;
        const std::size_t keys = key_row(config, group_begin(g)).size();
        for (const auto& c : cluster_columns(a)) {
            const auto at = std::find_if(columns.begin(), columns.end(),
                                         [&](const ColumnSpec& s) { return s.name == c.column; });
            const auto col = static_cast<std::size_t>(at - columns.begin());
            if (at == columns.end() || col >= keys) continue;  // an output: judged at the end
            std::set<std::string> values;
            for (std::size_t i = group_begin(g); i < group_end(g) && values.size() < 2; ++i) {
                for (auto& part : split_list(value_to_string(key_row(config, i)[col]), c.split))
                    values.insert(std::move(part));
            }
            if (values.size() < 2)
                throw ConfigError(config.path, a.node["clusters"].Mark(), c.path,
                                  "column '" + c.column + "' of group '" + a.input +
                                      "' holds one value ('" + *values.begin() +
                                      "') over its tasks: fewer than two clusters to resample");
        }
    }
}

}  // namespace compatbench
