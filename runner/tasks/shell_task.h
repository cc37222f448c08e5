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
// {result}, {workdir}, {out}, and `extra`) as a command task does: /bin/sh in its own
// process group, log under <out>/logs/tasks/, the group's timeout, cancellation; then reads
// one value per column from the JSON result file. Throws with the log's tail on failure.
Row run_shell_task(const TaskContext& context, const std::string& command_template,
                   const std::map<std::string, std::string>& extra,
                   const std::vector<ColumnSpec>& columns);

}  // namespace compatbench
