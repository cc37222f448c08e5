// The results.h5 table of a task group: task_id, seed, one column per grid key, then the
// kind's outputs.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace compatbench {

struct TableLayout {
    std::string path;  // e.g. "demo/work" -> /demo/work/<column>
    std::vector<ColumnSpec> columns;
    std::size_t rows = 0;
};

// The group's columns; `id_width` is the byte width of task_id (0 when not yet known).
std::vector<ColumnSpec> table_columns(const GroupSpec& group, std::size_t id_width = 0);

}  // namespace compatbench
