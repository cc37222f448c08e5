// The task graph: every config group expanded into tasks with stable ids, seeds, and
// dependencies, checked for duplicates and cycles. Every rank builds the same graph from
// the same config, so ranks name tasks by index.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/table.h"
#include "core/text_template.h"
#include "experiment/experiment.h"

namespace compatbench {

// One task, as small as it can be (a run may hold millions, on every rank): its parameters
// and key columns are derived from its group and `k` when asked (TaskGraph::params, lists,
// key_row).
struct Task {
    std::string id;
    std::size_t group = 0;
    std::size_t row = 0;  // row in its group's table (groups sharing a table follow each other)
    std::size_t k = 0;    // its index in the group's grid, count or listing
    std::uint64_t seed = 0;
    std::vector<std::size_t> deps;
    std::vector<std::size_t> dependents;
};

struct CriticalPath {
    double cost = 0.0;               // sum of the cost hints along it
    std::vector<std::size_t> tasks;  // in execution order
};

class TaskGraph {
  public:
    // Throws ConfigError (duplicate id, unknown dependency, cycle, too many tasks). `exclude`:
    // shell patterns of task ids left out of the run with every task that depends on them
    // (e.g. one model family's tasks, for a leave-one-family-out run); a pattern that
    // matches no task is an error.
    static TaskGraph build(const Config& config, const std::vector<std::string>& exclude = {});
    const std::vector<std::string>& excluded() const { return excluded_; }

    const std::vector<Task>& tasks() const { return tasks_; }
    // Tables of results.h5 (groups may share one when their columns agree).
    const std::vector<TableLayout>& tables() const { return tables_; }
    std::size_t group_table(std::size_t g) const { return group_table_[g]; }
    const TableLayout& table_of_group(std::size_t g) const { return tables_[group_table_[g]]; }
    // Tasks of group g are the index range [group_begin(g), group_begin(g + 1)).
    std::size_t group_begin(std::size_t g) const { return group_begin_[g]; }
    std::size_t group_end(std::size_t g) const { return group_begin_[g + 1]; }
    // Stage of each group: 0 for groups without dependencies, else 1 + max over its inputs.
    const std::vector<int>& group_stage() const { return group_stage_; }
    std::optional<std::size_t> find(const std::string& id) const;
    // Task i's parameters: its group's scalar keys, `i` in a counted group, the grid point,
    // and a listed task's own. `config` is the one the graph was built from.
    std::map<std::string, Scalar> params(const Config& config, std::size_t i) const;
    // A listed task's list parameters (none for others).
    const std::map<std::string, std::vector<Scalar>>& lists(const Config& config,
                                                            std::size_t i) const;
    // The key columns of task i's row: task_id, seed, then `i` or the grid values.
    Row key_row(const Config& config, std::size_t i) const;
    CriticalPath critical_path(const Config& config) const;

    static constexpr std::size_t kMaxTasks = 10'000'000;

    // The k-th point of group g's grid (first axis outermost), one value per axis.
    static std::vector<const Scalar*> grid_point(const TaskGroup& g, std::size_t k);

  private:
    static std::size_t count_tasks(const Config& config);
    static std::vector<ColumnSpec> group_columns(const Config& config, const TaskGroup& g);
    static std::optional<TextTemplate> id_template(const Config& config, const TaskGroup& g);
    static Task make_task(const Config& config, std::size_t gi, std::size_t k,
                          const std::optional<TextTemplate>& id_template);
    void index_ids(const Config& config);
    void add_group(const Config& config, std::size_t gi, const std::set<std::string>& skip);
    static std::set<std::string> excluded_ids(const Config& config, const TaskGraph& full,
                                              const std::vector<std::string>& patterns);
    void place_table(const Config& config, const TaskGroup& g, std::vector<ColumnSpec> columns,
                     std::size_t n);
    void link_after(const Config& config, std::size_t gi, const std::string& entry,
                    const YAML::Mark& mark, const std::map<std::string, std::size_t>& groups,
                    std::set<std::size_t>& inputs);
    std::vector<std::set<std::size_t>> link_dependencies(const Config& config);
    void check_acyclic(const Config& config) const;
    void check_file_stems(const Config& config) const;
    // An analysis's cluster column that is a key column of its input group must hold two or
    // more values (or listed models) over the group's tasks (methods.md §5.2).
    void check_cluster_columns(const Config& config) const;
    void assign_stages(const std::vector<std::set<std::size_t>>& group_inputs);

    std::vector<Task> tasks_;
    std::vector<std::string> excluded_;
    std::vector<TableLayout> tables_;
    std::vector<std::size_t> group_begin_;
    std::vector<std::size_t> group_table_;
    std::vector<int> group_stage_;
    std::vector<std::size_t> by_id_;  // task indices in the order of their ids
};

}  // namespace compatbench
