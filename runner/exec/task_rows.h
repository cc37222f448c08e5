// The run's side of results.h5 (store/results_file.h knows only its schema): the schema of a
// config's task graph, each task's row of its group's table, and its names in /tasks.
#pragma once

#include <cstddef>

#include "core/table.h"
#include "graph/task_graph.h"
#include "store/results_file.h"

namespace compatbench {

// Every task table of the graph at its full size, and /tasks' rows and text widths.
ResultsSchema results_schema(const Config& config, const TaskGraph& graph);
// Task i's id, kind and group (views into `config` and `graph`, which must outlive it).
TaskNamer task_names(const Config& config, const TaskGraph& graph);

// Buffers the row of task `index`: its key columns (id, seed, grid point or listing) from the
// graph, then `outputs`.
void stage_task_row(ResultsFile& results, const Config& config, const TaskGraph& graph,
                    std::size_t index, const Row& outputs);
// The row of a task that did not finish: its keys, and the blank value of each output (NaN,
// INT64_MIN, UINT64_MAX, "").
void stage_unfinished_row(ResultsFile& results, const Config& config, const TaskGraph& graph,
                          std::size_t index);

}  // namespace compatbench
