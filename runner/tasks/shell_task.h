// The shell part of command tasks, shared by the kinds that can run a user's command
// (command, encoder_subset with `evaluate: command`, merge_pair with a command evaluation).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/text_template.h"
#include "core/value.h"

namespace compatbench {

struct TaskContext;

// Runs `command_template` (placeholders: the task's parameters, {id}, {seed}, {attempt},
// {result}, {workdir}, {out}, `extra`, and `lists`: several words each) as a command task does:
// /bin/sh in its own process group, log under <out>/logs/tasks/, the group's timeout, cancellation;
// then reads one value per column from the JSON result file. Throws with the log's tail on failure.
Row run_shell_task(const TaskContext& context, const std::string& command_template,
                   const std::map<std::string, std::string>& extra,
                   const std::vector<ColumnSpec>& columns,
                   const std::map<std::string, std::vector<std::string>>& lists = {});

// Throws std::invalid_argument naming the first placeholder of `command_template` that
// run_shell_task would find no value for, given the extra names `more_names`: a check to
// make before expensive work whose result the command reads.
void check_shell_template(const TaskContext& context, const std::string& command_template,
                          const std::vector<std::string>& more_names);

}  // namespace compatbench
