// The one explicit list of task kinds (no self-registering statics: a static library's
// unreferenced registrars are dropped by the linker).
#pragma once

#include <span>
#include <string_view>

#include "kind/task_kind.h"

namespace compatbench {

std::span<const TaskKind* const> task_kinds();
const TaskKind* find_task_kind(std::string_view name);

}  // namespace compatbench
