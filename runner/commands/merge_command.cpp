#include "commands/merge_command.h"

#include <filesystem>

#include "catalog/feature_catalog.h"
#include "commands/shell_task.h"
#include "formats/staged_folder.h"
#include "kind/task_kind.h"
#include "merging/checkpoint_merge.h"

namespace compatbench {

namespace fs = std::filesystem;

MergeCommandKeys bind_merge_command_keys(const TaskGroup& group, const YamlChecker& checker,
                                         bool runs_command) {
    const Params keys(group.params);
    return {.command = bind_command_keys(group, checker, runs_command),
            .shard_mb = keys.real("shard_mb", 4096),
            .keep_merged = keys.flag("keep_merged")};
}

CommandMerge merge_and_evaluate(const TaskContext& ctx, const MergeCommandKeys& keys,
                                const merging::MergeParams& params,
                                const std::vector<std::string>& scope, const std::string& base,
                                const std::vector<std::string>& models,
                                std::map<std::string, std::string> extra,
                                const std::vector<ColumnSpec>& columns,
                                std::map<std::string, std::vector<std::string>> lists) {
    const std::string& command = keys.command.command;
    std::vector<std::string> names = {"checkpoint", "base_checkpoint", "finetuned"};
    for (const auto& [name, _] : extra) names.push_back(name);
    for (const auto& [name, _] : lists) names.push_back(name);
    check_shell_template(ctx, command, names);  // a typo fails before the merge, not after

    const auto base_ckpt = formats::Checkpoint::open(catalog_path(base, ctx.out_dir).string());
    std::vector<formats::Checkpoint> inputs;
    for (const auto& m : models) {
        lists["finetuned"].push_back(catalog_path(m, ctx.out_dir).string());
        inputs.push_back(formats::Checkpoint::open(lists["finetuned"].back()));
    }
    const merging::CheckpointSource source(base_ckpt, inputs, scope, /*any_float_dtype=*/true);

    // Pass 1: the interference of the in-scope tensors (§3.1), whose ρ PRISM's gate reads.
    merging::ModelMerge merge(params, scope);
    for (std::size_t i = 0; i < source.size(); ++i) {
        if (ctx.cancel.load()) throw TaskCancelled{};
        merge.measure(source, i);
    }
    if (merge.sums().count == 0)
        throw formats::FormatError(base_ckpt.path() + ": no floating-point tensor " +
                                   (scope.empty() ? "to merge" : "in the merge's scope"));
    // Pass 2: the merge, streamed into the output's shards.
    // Written beside its place and moved there only when complete, never over an input.
    const fs::path dir = ctx.out_dir / "artifacts" / "merges" / task_file_stem(ctx.id);
    std::vector<fs::path> input_paths = {base_ckpt.path()};
    for (const auto& m : lists["finetuned"]) input_paths.emplace_back(m);
    formats::StagedFolder::check_clear_of_inputs(dir, input_paths, "the merge folder");
    fs::create_directories(dir.parent_path());
    formats::StagedFolder staged(dir, /*replace=*/true);  // an earlier attempt's, if any
    formats::CheckpointLayout layout = merging::merged_layout(source);
    layout.set_metadata("merge_method", merging::method_name(params.method));
    layout.set_metadata("coef", std::to_string(params.coef));
    layout.set_metadata("normalize", params.normalize == merging::Normalize::sum ? "sum" : "mean");
    layout.set_metadata("format", "pt");
    layout.plan(staged.path().string(), static_cast<std::uint64_t>(keys.shard_mb * 1048576.0));
    layout.create();
    merging::write_merged(merge, source, merging::ModelMerge::rho_of(merge.sums()), layout,
                          merging::all_tensors(source), [&] {
                              if (ctx.cancel.load()) throw TaskCancelled{};
                          });
    staged.commit();

    extra["checkpoint"] = dir.string();
    extra["base_checkpoint"] = catalog_path(base, ctx.out_dir).string();
    const bool keep = keys.keep_merged;
    try {
        CommandMerge out{merge.sums(), merge.totals(),
                         run_shell_task(ctx, keys.command, extra, columns, lists)};
        if (!keep) fs::remove_all(dir);
        return out;
    } catch (...) {  // a failed evaluation leaves no merged model behind either
        if (!keep) fs::remove_all(dir);
        throw;
    }
}

}  // namespace compatbench
