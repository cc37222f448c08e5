// The merges a `kway_merge` group lists (tasks/kway_merge.cpp): per backbone of its
// `finetunes` group (zoo_finetune or checkpoint_set), per checkpoint step and per K, each
// operator at each coefficient and the κ sweep of the PRISM family, with the members' models,
// tasks and (for a checkpoint_set) checkpoints as list parameters.
#pragma once

#include <vector>

#include "kind/task_kind.h"

namespace compatbench {

std::vector<ListedTask> list_kway_merges(const TaskGroup& group,
                                         const std::vector<TaskGroup>& earlier,
                                         const YamlChecker& yc);

}  // namespace compatbench
