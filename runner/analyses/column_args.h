// Column-name arguments of analyses (`x: score` or `x: [score, ease]`), checked against the
// input table.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace compatbench {

// The names under `key` of the analysis entry; each must be a column of `columns` and,
// when `numeric`, not a string column.
std::vector<std::string> column_args(const AnalysisSpec& spec, const std::string& key,
                                     const std::vector<ColumnSpec>& columns, bool numeric,
                                     const YamlChecker& checker);

}  // namespace compatbench
