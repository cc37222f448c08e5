// The merge tasks' evaluation by a command (merge_pair and kway_merge with `evaluate:
// command`): the base and K checkpoints merged (methods.md §3.2) with the interference of
// their task vectors (§3.1), streamed tensor by tensor into a safetensors checkpoint under
// <out>/artifacts/merges/<task>/ (sharded past the group's `shard_mb`), which the group's
// `command` then evaluates; the checkpoint is removed afterwards unless `keep_merged: true`.
// Memory stays at a few blocks per input: the merged model is never held whole.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "commands/shell_task.h"
#include "core/value.h"
#include "merging/model_merge.h"

namespace compatbench {

struct TaskContext;
struct TaskGroup;

// A merge group's keys for an evaluation by a command, parsed once when it is bound.
struct MergeCommandKeys {
    CommandKeys command;
    double shard_mb = 4096;    // `shard_mb`: the merged checkpoint's shard size
    bool keep_merged = false;  // `keep_merged: true` keeps the merged checkpoint
};
// The command keys (bind_command_keys) and the two above.
MergeCommandKeys bind_merge_command_keys(const TaskGroup& group, const YamlChecker& checker,
                                         bool runs_command);

struct CommandMerge {
    merging::InterferenceSums sums;  // over the in-scope tensors
    merging::MergeTotals totals;
    Row result;  // the command's result file, one value per column asked
};

// `base` and `models`: checkpoint paths as the catalog writes them ({out}/... allowed). The
// command sees {checkpoint} (the merged folder), {base_checkpoint}, {finetuned} (the models'
// paths, a word each), the task's parameters, `extra` and `lists` (several words each).
CommandMerge merge_and_evaluate(const TaskContext& ctx, const MergeCommandKeys& keys,
                                const merging::MergeParams& params,
                                const std::vector<std::string>& scope, const std::string& base,
                                const std::vector<std::string>& models,
                                std::map<std::string, std::string> extra,
                                const std::vector<ColumnSpec>& columns,
                                std::map<std::string, std::vector<std::string>> lists = {});

}  // namespace compatbench
