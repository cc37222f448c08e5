// The shell part of command tasks, shared by the kinds that can run a user's command
// (command, encoder_subset with `evaluate: command`, merge_pair with a command evaluation).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/yaml_check.h"
#include "core/child_process.h"
#include "core/text_template.h"
#include "core/value.h"

namespace compatbench {

struct TaskContext;
struct TaskGroup;

// The keys of every kind that runs a user's command:
//   env: {NAME: value, ...}   variables set for the command, over the runner's own (docs/gpus.md)
//   server: "python3 serve.py" a long-lived server runs the tasks; `command` is then their
//                             arguments (docs/servers.md)
std::vector<KeyRule> command_keys();
// A group's command keys, parsed once when it is bound (bind_command_keys).
struct CommandKeys {
    std::string command;  // the template (a served group's: the task's arguments); "" if none
    bool served = false;  // a `server:` runs the tasks; otherwise each spawns its command
    std::string server;   // the `server:` template
    std::vector<std::pair<std::string, std::string>> env;  // `env:`, in the entry's order
    bool keep_background = false;  // `keep_background: true` (the command kind's)
};
// Checks the group's command keys (ConfigError via `checker`): names, values, and no
// CUDA_VISIBLE_DEVICES (the runner sets it from `gpus:`); refused when the group runs no
// command. Returns them parsed.
CommandKeys bind_command_keys(const TaskGroup& group, const YamlChecker& checker,
                              bool runs_command);
// `keys` with command_keys() appended.
std::vector<KeyRule> with_command_keys(std::vector<KeyRule> keys);
// The group's `outputs: {name: float | int | uint | str | str:N}`: the columns its command's
// result file gives (none without the key).
std::vector<ColumnSpec> parse_outputs(const TaskGroup& group, const YamlChecker& checker);
// Whether a group that can evaluate natively or by a command says `evaluate: command`.
bool evaluates_by_command(const TaskGroup& group);

// What a command's environment gets over the rank's: CUDA_VISIBLE_DEVICES as exactly the
// task's devices (empty for none); OMP_NUM_THREADS and its like as the rank's threads,
// unless the rank's environment sets them; then the group's `env:`.
EnvOverrides command_environment(const TaskContext& context, const CommandKeys& keys);

// Runs the group's command (placeholders: the task's parameters, {id}, {seed}, {attempt},
// {result}, {workdir}, {out}, `extra`, and `lists`: several words each) as a command task does:
// /bin/sh in its own process group (or a request to the group's server), log under
// <out>/logs/tasks/, the group's timeout, cancellation; then reads one value per column from
// the JSON result file. Throws with the log's tail on failure.
Row run_shell_task(const TaskContext& context, const CommandKeys& keys,
                   const std::map<std::string, std::string>& extra,
                   const std::vector<ColumnSpec>& columns,
                   const std::map<std::string, std::vector<std::string>>& lists = {});

// Throws std::invalid_argument naming the first placeholder of `command_template` that
// run_shell_task would find no value for, given the extra names `more_names`: a check to
// make before expensive work whose result the command reads.
void check_shell_template(const TaskContext& context, const std::string& command_template,
                          const std::vector<std::string>& more_names);

}  // namespace compatbench
