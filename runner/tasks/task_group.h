// A task group bound to its kind (experiment/experiment.h binds them): what the YAML said
// (config/config.h GroupSpec), and what the kind made of it: its scalar keys, its listed
// tasks and its output columns. The kinds' interface (tasks/task_kind.h) is written in it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"

namespace compatbench {

class TaskKind;

// A task that a kind lists itself (instead of `count` or `grid`): the id is
// "<group>/<suffix>", `keys` become the table's key columns (the same names, in the same
// order, for every task of the group), `params` are added to the group's scalar keys,
// `lists` are its list parameters, and `after` names tasks (exact ids) it depends on.
struct ListedTask {
    std::string suffix;
    std::vector<std::pair<std::string, Scalar>> keys;
    std::map<std::string, Scalar> params;
    std::map<std::string, std::vector<Scalar>> lists;
    std::vector<std::string> after;

    // The key column `name`; std::logic_error when the task has none (a kind's bug).
    const Scalar& key(std::string_view name) const;
};

struct TaskGroup : GroupSpec {
    const TaskKind* kind = nullptr;
    std::map<std::string, Scalar> params;  // the kind's scalar keys
    std::vector<ListedTask> listed;        // tasks a listing kind made (TaskKind::lists_tasks)
    std::vector<ColumnSpec> outputs;       // the kind's output columns
    bool runs_command = false;  // its tasks run a user's command (TaskKind::runs_command)
};

// The cost hint of a group that gives none and runs a command: seconds a task, until the
// run has measured some command (exec/cost_model.h). A command is not a noop: starting an
// interpreter alone takes a good part of a second.
inline constexpr double kCommandCost = 5.0;

// The columns of the group's results.h5 table: task_id, seed, one column per count, grid or
// listed key, then the kind's outputs; `id_width` is the byte width of task_id (0 when not
// yet known).
std::vector<ColumnSpec> table_columns(const TaskGroup& group, std::size_t id_width = 0);

}  // namespace compatbench
