// The results.h5 table of a task group: task_id, seed, one column per grid key, then the
// kind's outputs (tasks/task_group.h: table_columns).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/value.h"

namespace compatbench {

struct TableLayout {
    std::string path;  // e.g. "demo/work" -> /demo/work/<column>
    std::vector<ColumnSpec> columns;
    std::size_t rows = 0;
};

}  // namespace compatbench
