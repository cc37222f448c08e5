// A task group bound to its kind (experiment/experiment.h binds them): what the YAML said
// (config/config.h GroupSpec), and what the kind made of it: its scalar keys, its settings,
// its listed tasks and its output columns. The kinds' interface (kind/task_kind.h) is written
// in it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"

namespace compatbench {

class TaskKind;

// Scalar parameters by name, each with the fallback its reader gives: a group's keys (read
// once, when the group is bound) or a task's (the group's keys with its grid point or
// listing).
class Params {
  public:
    explicit Params(const std::map<std::string, Scalar>& map) : map_(map) {}
    const Scalar* find(const std::string& key) const;
    bool has(const std::string& key) const { return find(key) != nullptr; }
    // The number, or `fallback` when the key is absent or not a number.
    double real(const std::string& key, double fallback) const;
    // The integer, or `fallback` when the key is absent or not an integer.
    std::int64_t integer(const std::string& key, std::int64_t fallback) const;
    // A boolean key as the config checker reads it (true/True/yes), false when absent.
    bool flag(const std::string& key) const;
    // The text, or `fallback` when the key is absent.
    std::string text(const std::string& key, const std::string& fallback) const;

  private:
    const std::map<std::string, Scalar>& map_;
};

// What a kind makes of its group's keys when the group is bound (TaskKind::bind): each key
// parsed once, with its default, into a struct of the kind's own that derives from this one.
// The group's tasks read its fields (TaskContext::settings); no YAML is read after binding.
struct KindSettings {
    virtual ~KindSettings() = default;
};

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
    std::map<std::string, Scalar> params;          // the kind's scalar keys
    std::shared_ptr<const KindSettings> settings;  // TaskKind::bind's (nullptr: none)
    std::vector<ListedTask> listed;   // tasks a listing kind made (TaskKind::lists_tasks)
    std::vector<ColumnSpec> outputs;  // the kind's output columns
    bool runs_command = false;        // its tasks run a user's command (TaskKind::runs_command)
};

// The group's settings as the kind `S` bound them; std::logic_error when it bound none of that
// type (a kind's bug).
template <class S>
const S& settings_of(const TaskGroup& group) {
    const auto* s = dynamic_cast<const S*>(group.settings.get());
    if (!s) throw std::logic_error("group '" + group.name + "' has no settings of its kind");
    return *s;
}

// The cost hint of a group that gives none and runs a command: seconds a task, until the
// run has measured some command (exec/cost_model.h). A command is not a noop: starting an
// interpreter alone takes a good part of a second.
inline constexpr double kCommandCost = 5.0;

// The columns of the group's results.h5 table: task_id, seed, one column per count, grid or
// listed key, then the kind's outputs; `id_width` is the byte width of task_id (0 when not
// yet known).
std::vector<ColumnSpec> table_columns(const TaskGroup& group, std::size_t id_width = 0);

}  // namespace compatbench
