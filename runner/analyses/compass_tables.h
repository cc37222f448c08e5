// The tables of the `compass` analysis (analyses/compass.cpp) from its StudyResult
// (methods.md §1.2, §1.3, §6): each result row written as a table row.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyses/analysis_kind.h"
#include "compass/analysis.h"

namespace compatbench {

// The string columns naming each grid pair (members, families, paradigms; each name once),
// one value per grid row.
using PairColumns = std::vector<std::pair<std::string, std::vector<std::string>>>;

struct CompassTables {
    std::string study;  // "/alignment": where /grid and /pairs go
    PairColumns pair_columns;
    const AnalysisInput& input;          // the evaluated pairs: their other columns join /pairs
    std::set<std::string> not_repeated;  // input columns left out of /pairs
};

// /<study>/grid, ceilings, /<study>/pairs, correlations, regions, kruskal, budget_search,
// budget_curve, lofo, lofo_range, k_sensitivity, metadata_regressor and (with budgets)
// budget, in that order.
std::vector<TableData> compass_tables(const CompassTables& tables, const compass::StudyInput& in,
                                      const compass::StudyResult& r, const AnalysisNote& note);

// The grid column of the ease from the first k neighbours: "ease_k10".
std::string ease_column(int k);

}  // namespace compatbench
