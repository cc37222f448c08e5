// A task kind: what one `tasks:` entry of a config runs. One adapter file per kind
// (runner/tasks/<kind>.cpp), listed once in runner/tasks/registry.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/yaml_check.h"
#include "core/resources.h"
#include "core/value.h"
#include "kind/task_group.h"

namespace compatbench {

class ServerPool;

// What a task sees while it runs: its identity, parameters, seed and where to write.
struct TaskContext {
    const std::string& id;
    const TaskGroup& group;
    std::map<std::string, Scalar> params;  // the group's scalar keys + the grid point
    const std::map<std::string, std::vector<Scalar>>& lists;  // list parameters (listed tasks)
    std::uint64_t seed;
    int attempt;  // 1-based
    int rank;
    std::filesystem::path out_dir;
    const std::atomic<bool>& cancel;  // set when the run abandons tasks in flight
    std::uint64_t experiment_seed;    // the config's (or --seed's): what a replicate varies
    const RankResources* resources;   // what the rank holds (nullptr: nothing, one thread)
    ServerPool* servers;              // the rank's command servers (commands/command_server.h)

    // The devices this task is given: the first `gpus:` of its rank's.
    std::vector<std::string> devices() const;

    // The task's scalar parameters (its group's keys and its grid point or listing).
    Params scalars() const { return Params(params); }
    const Scalar* find(const std::string& key) const { return scalars().find(key); }
    double real(const std::string& key, double fallback) const {
        return scalars().real(key, fallback);
    }
    bool flag(const std::string& key) const { return scalars().flag(key); }
    std::int64_t integer(const std::string& key, std::int64_t fallback) const {
        return scalars().integer(key, fallback);
    }
    // The settings its kind bound for its group (settings_of).
    template <class S>
    const S& settings() const {
        return settings_of<S>(group);
    }
    // A list parameter as texts or ints (std::invalid_argument naming a missing key or a
    // value that is not an int).
    std::vector<std::string> texts(const std::string& key) const;
    std::vector<int> integers(const std::string& key) const;
};

// Thrown by a task that was cancelled (it is then neither done nor failed).
struct TaskCancelled {};

enum class TaskStatus { done, failed, cancelled };

struct TaskOutcome {
    TaskStatus status = TaskStatus::failed;
    Row outputs;  // one value per output column when done
    std::string error;
    double start = 0.0;     // seconds since the epoch
    double duration = 0.0;  // seconds
};

class TaskKind {
  public:
    virtual ~TaskKind() = default;
    virtual std::string_view name() const = 0;
    // Kind-specific keys of a `tasks:` entry (besides name, kind, count, grid, ...).
    virtual std::vector<KeyRule> keys() const = 0;
    // The group's settings: its keys parsed once, after they are checked against keys() and
    // before its tasks are listed and its outputs declared (both may read them); nullptr for a
    // kind that keeps none. `earlier` holds the groups before it. Throws ConfigError (via
    // `checker`) for a bad key.
    virtual std::shared_ptr<const KindSettings> bind(const TaskGroup& /*group*/,
                                                     const std::vector<TaskGroup>& /*earlier*/,
                                                     const YamlChecker& /*checker*/) const {
        return nullptr;
    }
    // The output columns of a group; may read the group's own keys (checked by `keys()`).
    virtual std::vector<ColumnSpec> outputs(const TaskGroup& group,
                                            const YamlChecker& checker) const = 0;

    // Kinds that list their own tasks return true and implement list_tasks().
    virtual bool lists_tasks() const { return false; }
    // The group's tasks from its keys; `earlier` holds the groups before it in the config.
    // Throws ConfigError (via `checker`) for bad keys.
    virtual std::vector<ListedTask> list_tasks(const TaskGroup& /*group*/,
                                               const std::vector<TaskGroup>& /*earlier*/,
                                               const YamlChecker& /*checker*/) const {
        return {};
    }

    // Whether the group's tasks run a user's command (a spawned or served process), whose
    // cost the runner cannot know from the config. The cost model estimates such groups from
    // each other (exec/cost_model.h).
    virtual bool runs_command(const TaskGroup& /*group*/) const { return false; }

    // The files a done task leaves for the tasks after it. A resumed run reruns a done task
    // one of whose files is missing or damaged (damaged_artifact below).
    virtual std::vector<std::filesystem::path> artifacts(const TaskContext& /*context*/) const {
        return {};
    }

    // Runs one attempt: times it, turns exceptions into a failed outcome, and checks the
    // outputs against the group's columns. Never throws.
    TaskOutcome run(const TaskContext& context) const;

  protected:
    virtual Row run_(const TaskContext& context) const = 0;
};

// Why a done task's files cannot serve the tasks after it, "" when they can: one is
// missing or empty, a safetensors file's header or size is wrong, a JSON file is not JSON.
std::string damaged_artifact(const TaskKind& kind, const TaskContext& context);

}  // namespace compatbench
