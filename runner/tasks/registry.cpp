#include "tasks/registry.h"

namespace compatbench {

// One adapter file per kind defines its accessor.
const TaskKind& align_pair_task();
const TaskKind& checkpoint_set_task();
const TaskKind& command_task();
const TaskKind& fail_task();
const TaskKind& feature_set_task();
const TaskKind& merge_pair_task();
const TaskKind& kway_merge_task();
const TaskKind& encoder_subset_task();
const TaskKind& noop_task();
const TaskKind& pair_similarity_task();
const TaskKind& probe_knn_task();
const TaskKind& sleep_task();
const TaskKind& zoo_encoder_task();
const TaskKind& zoo_features_task();
const TaskKind& zoo_finetune_task();
const TaskKind& zoo_world_task();

std::span<const TaskKind* const> task_kinds() {
    static const TaskKind* const kinds[] = {
        &align_pair_task(),  &checkpoint_set_task(),  &command_task(),      &encoder_subset_task(),
        &fail_task(),        &feature_set_task(),     &kway_merge_task(),   &merge_pair_task(),
        &noop_task(),        &pair_similarity_task(), &probe_knn_task(),    &sleep_task(),
        &zoo_encoder_task(), &zoo_features_task(),    &zoo_finetune_task(), &zoo_world_task(),
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
