// The coordinator's analyses: each runs once every group it reads has finished (done,
// failed or skipped), on the done rows of those groups; and the tables of groups with
// `print: true`, printed at the end of a run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analyses/analysis_kind.h"
#include "core/table.h"
#include "exec/task_book.h"

namespace compatbench {

class AnalysisRunner {
  public:
    AnalysisRunner(const Config& config, const TaskGraph& graph);

    // Runs every analysis not yet run whose groups have finished in `book`. An analysis that
    // throws is logged and its tables are missing; the run goes on.
    void run_ready(const TaskBook& book);
    // The tables of the analyses run so far: (study, table).
    std::vector<std::pair<std::string, TableData>> take_tables() { return std::move(tables_); }

  private:
    std::size_t group_index(const std::string& name) const;
    // The done rows of group `g`, appended to `storage` (reserved by the caller).
    AnalysisInput input(const TaskBook& book, std::size_t g, std::vector<Row>& storage) const;
    // Runs `spec` on its input group and its `extra` input groups.
    void run(const TaskBook& book, const Analysis& spec, const std::vector<std::string>& extra);

    const Config& config_;
    const TaskGraph& graph_;
    std::vector<bool> done_;
    std::vector<std::pair<std::string, TableData>> tables_;
};

// One table per results.h5 table with a printing group: the done rows of those groups.
std::vector<TableData> printed_tables(const Config& config, const TaskGraph& graph,
                                      const TaskBook& book);

}  // namespace compatbench
