#include "exec/task_rows.h"

#include <algorithm>

namespace compatbench {

ResultsSchema results_schema(const Config& config, const TaskGraph& graph) {
    ResultsSchema schema;
    schema.tables = graph.tables();
    schema.tasks = graph.tasks().size();
    for (const auto& t : graph.tasks()) schema.id_width = std::max(schema.id_width, t.id.size());
    for (const auto& g : config.groups) {
        schema.kind_width = std::max(schema.kind_width, g.kind_name.size());
        schema.group_width = std::max(schema.group_width, g.name.size());
    }
    return schema;
}

TaskNamer task_names(const Config& config, const TaskGraph& graph) {
    return [&config, &graph](std::size_t i) {
        const Task& task = graph.tasks()[i];
        const TaskGroup& g = config.groups[task.group];
        return TaskNames{task.id, g.kind_name, g.name};
    };
}

void stage_task_row(ResultsFile& results, const Config& config, const TaskGraph& graph,
                    std::size_t index, const Row& outputs) {
    const Task& task = graph.tasks()[index];
    Row row = graph.key_row(config, index);
    row.insert(row.end(), outputs.begin(), outputs.end());
    results.stage(graph.group_table(task.group), task.row, std::move(row));
}

void stage_unfinished_row(ResultsFile& results, const Config& config, const TaskGraph& graph,
                          std::size_t index) {
    Row blank;
    for (const auto& column : config.groups[graph.tasks()[index].group].outputs)
        blank.push_back(fill_value(column.type));
    stage_task_row(results, config, graph, index, blank);
}

}  // namespace compatbench
