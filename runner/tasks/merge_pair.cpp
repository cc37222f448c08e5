// Task kind `merge_pair`: one task-arithmetic merge of two fine-tunes of one backbone
// (methods.md §3.2) with the interference statistics of their task vectors (§3.1), streamed
// tensor by tensor, and its evaluation on both tasks against the fine-tunes and the base
// (§3.3: retention, destructive).
//
// The pairs are those of a `pair_similarity` group with `pairs: same_base`. Evaluation is
// `native` for the model library (encoder + each fine-tune's own head on `eval_split`), or
// `command`: the merged checkpoint is written as safetensors (sharded past `shard_mb`) and a
// user's script evaluates it, e.g.
//   command: "python3 eval.py --checkpoint {checkpoint} --tasks {task_a} {task_b}
//             --finetuned {a_checkpoint} {b_checkpoint} --base {base_checkpoint}
//             --out {result}"
// writing {"acc_a", "acc_b", "ft_acc_a", "ft_acc_b", "base_acc_a", "base_acc_b"}.
//
//   - {name: merges, kind: merge_pair, table: merging/merges, similarity: merge_grid,
//      coef: 1.0, normalize: mean, evaluate: native, eval_split: flickr}
#include <cmath>

#include "catalog/feature_catalog.h"
#include "catalog/zoo_common.h"
#include "commands/merge_command.h"
#include "commands/shell_task.h"
#include "formats/safetensors.h"
#include "kind/group_keys.h"
#include "merging/evaluation.h"
#include "merging/model_merge.h"

namespace compatbench {

namespace {

const std::vector<std::string> kAccuracies = {"acc_a",    "acc_b",      "ft_acc_a",
                                              "ft_acc_b", "base_acc_a", "base_acc_b"};

// The merge's weights, tensor by tensor, in the base's tensor order (the model library's
// native evaluation holds them in memory: its models are small).
struct Merged {
    std::vector<std::string> names;
    std::vector<std::vector<float>> values;
    merging::InterferenceSums sums;
};

// The group's keys, parsed once (TaskKind::bind).
struct Settings final : KindSettings {
    merging::MergeParams merge;  // task arithmetic at `coef`, with `normalize`
    bool command = false;        // evaluate: command
    MergeCommandKeys command_keys;
    std::string eval_split;
};

// Task arithmetic of the two fine-tunes (§3.2) with the interference of their task vectors
// (§3.1), tensor by tensor, into memory.
Merged merge_in_memory(const TaskContext& ctx) {
    const auto path = [&](const char* key) {
        return catalog_path(ctx.params.at(key).text, ctx.out_dir).string();
    };
    const auto base = formats::Checkpoint::open(path("base_checkpoint"));
    std::vector<formats::Checkpoint> pair;
    pair.push_back(formats::Checkpoint::open(path("a_checkpoint")));
    pair.push_back(formats::Checkpoint::open(path("b_checkpoint")));
    const merging::CheckpointSource source(base, pair, {}, /*any_float_dtype=*/true);
    merging::ModelMerge merge(ctx.settings<Settings>().merge, {});
    Merged m;
    for (std::size_t i = 0; i < source.size(); ++i) {
        if (!source.mergeable(i)) continue;
        if (ctx.cancel.load()) throw TaskCancelled{};
        merge.measure(source, i);
        m.values.push_back(merge.merge(source, i, 1.0));
        m.names.push_back(source.name(i));
    }
    if (m.names.empty())
        throw formats::FormatError(base.path() + ": no floating-point tensor to merge");
    m.sums = merge.sums();
    return m;
}

// The six accuracies on the model library: merged, fine-tuned and base encoder, each with
// the fine-tune's own head of the task.
std::vector<double> evaluate_native(const TaskContext& ctx, const Merged& merged) {
    const ZooPaths paths{ctx.out_dir};
    const ZooWorld zw = load_zoo_world(ctx);
    const zoo::Split split = zw.split(ctx.settings<Settings>().eval_split);
    const auto tasks = zoo::latent_tasks(zw.world.spec());
    const std::string base_name = ctx.params.at("backbone").text;
    zoo::Encoder base = read_model(paths, base_name);
    zoo::Encoder merged_enc = read_model(paths, base_name);
    for (auto& p : merged_enc.params()) {
        const auto it = std::find(merged.names.begin(), merged.names.end(), p.name);
        if (it == merged.names.end()) continue;
        // File order (row-major), not Eigen's column-major memory.
        zoo::set_param_values(p,
                              merged.values[static_cast<std::size_t>(it - merged.names.begin())]);
    }
    std::vector<double> acc(6);
    for (int side = 0; side < 2; ++side) {
        const std::string model = ctx.params.at(side ? "model_b" : "model_a").text;
        const auto& task =
            zoo::find_latent_task(tasks, ctx.params.at(side ? "task_b" : "task_a").text);
        zoo::Encoder ft = read_model(paths, model);
        nn::Linear<float> head = read_head(paths.model(model));
        const auto& spec = zw.world.spec();
        acc[static_cast<std::size_t>(side)] =
            zoo::task_accuracy(merged_enc, head, task, split, spec);
        acc[static_cast<std::size_t>(2 + side)] = zoo::task_accuracy(ft, head, task, split, spec);
        acc[static_cast<std::size_t>(4 + side)] = zoo::task_accuracy(base, head, task, split, spec);
    }
    return acc;
}

class MergePairTask final : public TaskKind {
  public:
    std::string_view name() const override { return "merge_pair"; }
    std::vector<KeyRule> keys() const override {
        return with_command_keys(
            {{.name = "similarity", .type = KeyType::string, .required = true},
             {.name = "coef", .type = KeyType::real, .min = 0, .max = 1e6},
             {.name = "normalize", .type = KeyType::string, .choices = {"mean", "sum"}},
             {.name = "evaluate", .type = KeyType::string, .choices = {"native", "command"}},
             {.name = "command", .type = KeyType::string},
             {.name = "eval_split", .type = KeyType::string},
             {.name = "keep_merged", .type = KeyType::boolean},
             {.name = "shard_mb", .type = KeyType::real, .min = 0.001, .max = 1e9}});
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group, const std::vector<TaskGroup>&,
                                             const YamlChecker& yc) const override {
        auto s = std::make_shared<Settings>();
        const Params keys(group.params);
        s->command = evaluates_by_command(group);
        if (s->command && !group.node["command"])
            yc.fail(group.node, "tasks." + group.name + ".command",
                    "evaluate: command needs a 'command' template");
        s->command_keys = bind_merge_command_keys(group, yc, s->command);
        s->merge.coef = keys.real("coef", 1.0);
        s->merge.normalize = keys.text("normalize", "mean") == "sum" ? merging::Normalize::sum
                                                                     : merging::Normalize::mean;
        s->eval_split = keys.text("eval_split", "flickr");
        return s;
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        std::vector<ColumnSpec> out = {{"interference", ColumnType::f64, 0},
                                       {"dispersion", ColumnType::f64, 0},
                                       {"rho", ColumnType::f64, 0},
                                       {"sign_conflict", ColumnType::f64, 0},
                                       {"screen_score", ColumnType::f64, 0}};
        for (const auto& a : kAccuracies) out.push_back({a, ColumnType::f64, 0});
        for (const char* c : {"retention", "merged_mean", "base_mean"})
            out.push_back({c, ColumnType::f64, 0});
        out.push_back({"destructive", ColumnType::i64, 0});
        return out;
    }
    bool lists_tasks() const override { return true; }
    bool runs_command(const TaskGroup& group) const override { return evaluates_by_command(group); }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        const TaskGroup& grid = earlier_group(group, "similarity", earlier, "pair_similarity", yc);
        std::vector<ListedTask> out;
        for (const auto& g : grid.listed) {
            if (g.keys.front().first != "model_a")
                yc.fail(
                    group.node["similarity"], "tasks." + group.name + ".similarity",
                    "group '" + grid.name + "' does not list fine-tune pairs (pairs: same_base)");
            ListedTask t;
            t.suffix = g.suffix;
            t.keys = g.keys;
            t.params = g.params;
            // The pair's grid task too: no merge of a pair whose ease could not be computed.
            t.after = {g.params.at("a_features_task").text, g.params.at("b_features_task").text,
                       grid.name + "/" + g.suffix};
            out.push_back(std::move(t));
        }
        return out;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const Settings& settings = ctx.settings<Settings>();
        merging::InterferenceSums sums;
        std::vector<double> acc;
        if (settings.command) {
            std::vector<ColumnSpec> cols;
            for (const auto& c : kAccuracies) cols.push_back({c, ColumnType::f64, 0});
            const auto path = [&](const char* key) {
                return catalog_path(ctx.params.at(key).text, ctx.out_dir).string();
            };
            const CommandMerge m = merge_and_evaluate(
                ctx, settings.command_keys, settings.merge, {},
                ctx.params.at("base_checkpoint").text,
                {ctx.params.at("a_checkpoint").text, ctx.params.at("b_checkpoint").text},
                {{"a_checkpoint", path("a_checkpoint")}, {"b_checkpoint", path("b_checkpoint")}},
                cols);
            sums = m.sums;
            for (const auto& v : m.result) acc.push_back(std::get<double>(v));
        } else {
            const Merged merged = merge_in_memory(ctx);
            sums = merged.sums;
            acc = evaluate_native(ctx, merged);
        }
        const double a[2] = {acc[0], acc[1]}, f[2] = {acc[2], acc[3]}, b[2] = {acc[4], acc[5]};
        const merging::MergeScores s = merging::merge_scores(a, f, b);
        Row row = {sums.mean_interference(), sums.mean_dispersion(), sums.rho(),
                   sums.sign_conflict(),
                   merging::screening_score(sums.mean_interference(), 2, settings.merge.coef)};
        for (double v : acc) row.emplace_back(v);
        row.emplace_back(s.retention);
        row.emplace_back(s.merged);
        row.emplace_back(s.base);
        row.emplace_back(static_cast<std::int64_t>(s.destructive));
        return row;
    }
};
}  // namespace

const TaskKind& merge_pair_task() {
    static const MergePairTask kind;
    return kind;
}

}  // namespace compatbench
