#include "tasks/registry.h"

namespace compatbench {

// One adapter file per kind defines its accessor.
const TaskKind& command_task();
const TaskKind& fail_task();
const TaskKind& noop_task();
const TaskKind& sleep_task();
const TaskKind& zoo_encoder_task();
const TaskKind& zoo_features_task();
const TaskKind& zoo_finetune_task();
const TaskKind& zoo_world_task();

std::span<const TaskKind* const> task_kinds() {
    static const TaskKind* const kinds[] = {
        &command_task(),     &fail_task(),         &noop_task(),         &sleep_task(),
        &zoo_encoder_task(), &zoo_features_task(), &zoo_finetune_task(), &zoo_world_task(),
    };
    return kinds;
}

const TaskKind* find_task_kind(std::string_view name) {
    for (const TaskKind* kind : task_kinds()) {
        if (kind->name() == name) return kind;
    }
    return nullptr;
}

}  // namespace compatbench
