// Task kind `kway_merge`: the PRISM study on the model library (methods.md §3). One task is
// one merge of K fine-tunes of a backbone with one operator of §3.2 at one coefficient c (and
// κ for the PRISM family), with the interference statistics of the K task vectors (§3.1), the
// operator's update norm and kept coordinates, and its evaluation: each member's task through
// the merged encoder with the member's own head, against the fine-tune and the base (§3.3).
//
// Each backbone's tasks are put in a fixed order drawn from the backbone's name; a K-way
// merge takes the first K of them, so a backbone's K = 2..8 merges are nested.
//
//   - name: prism_merges
//     kind: kway_merge
//     table: prism/merges
//     finetunes: finetunes          # a zoo_finetune group
//     k: [2, 3, 4, 5, 6, 7, 8]
//     methods: [task_arithmetic, ties, dare, slerp, model_stock, prism, prism_hard,
//               norm_matched]       # SLERP only for K = 2; SLERP and Model Stock at c = 1
//     coefs: [0.3, 0.5, 0.7, 1.0]
//     kappas: [0.25, 0.5, 1, 2, 3]  # the κ sweep of prism, prism_hard and norm_matched,
//     kappa_coef: 1.0               #   at this coefficient
//     scope: ["*"]                  # tensor-name patterns merged (default: every tensor)
//     density: 0.2                  # TIES; drop: 0.5 (DARE); rho_gate, keep_floor (PRISM)
//     checkpoints: true             # merge the fine-tunes' checkpoints (drift study)
//     eval_split: flickr
//
// `finetunes` may instead name a `checkpoint_set` group (a user's or the PyTorch library's
// safetensors fine-tunes, with `checkpoints: {step: path}` in its manifest for the drift
// study). Its merges are streamed into a safetensors checkpoint and evaluated by a command
// (commands/merge_command.h), with {finetuned} and {tasks} the K members' checkpoints and tasks,
// in merge order, as K words each:
//     evaluate: command
//     command: "python3 eval.py --checkpoint {checkpoint} --base {base_checkpoint}
//               --finetuned {finetuned} --tasks {tasks} --out {result}"
// writing acc_i, ft_acc_i and base_acc_i for i = 1..K: the merge's accuracy on member i's
// task with its head, the fine-tune's, and the base's with the same head. Such a group may
// also take
//     outputs: {all_acc: float}     # more of the command's values, as columns after these
//     destructive_se: 2             # destructive: below the base by more than 2 standard
//                                   #   errors (the command's diff_se, of merged − base; the
//                                   #   columns diff_se and margin, (merged − base)/diff_se,
//                                   #   0 where the merge scores as the base)
//     pairs: all                    # K = 2: every pair of fine-tunes, not the first two
//     order: [math, code, ...]      # the nested order, by task (else drawn from the name)
//     keep_floors: [0.001, 0.01]    # the PRISM family at each keep floor (key keep_floor)
//     floor_kernels: true           # the keep floor holds for convolution kernels (N-D
//                                   #   tensors, N > 2) too, not only for matrices
//     backbones: [cnn_sup]          # only these backbones' merges (default: every one)
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <sstream>

#include "catalog/zoo_common.h"
#include "commands/merge_command.h"
#include "commands/shell_task.h"
#include "common/hash.h"
#include "kind/group_keys.h"
#include "merging/evaluation.h"
#include "merging/model_merge.h"
#include "tasks/kway_sweep.h"

namespace compatbench {

namespace {

// The group's keys, parsed once (TaskKind::bind).
struct Settings final : KindSettings {
    merging::MergeParams merge;  // density, drop, rho_gate, keep_floor and floor_kernels
    std::vector<std::string> scope;
    std::string eval_split;
    std::optional<double> destructive_se;  // destructive by the margin (evaluate: command)
    MergeCommandKeys command_keys;
};

class KwayMergeTask final : public TaskKind {
  public:
    std::string_view name() const override { return "kway_merge"; }
    std::vector<KeyRule> keys() const override {
        return with_command_keys(
            {{.name = "finetunes", .type = KeyType::string, .required = true},
             {.name = "k", .type = KeyType::list},
             {.name = "methods", .type = KeyType::list},
             {.name = "coefs", .type = KeyType::list},
             {.name = "kappas", .type = KeyType::list},
             {.name = "kappa_coef", .type = KeyType::real, .min = 0, .max = 100},
             {.name = "scope", .type = KeyType::list},
             {.name = "density", .type = KeyType::real, .min = 0, .max = 1},
             {.name = "drop", .type = KeyType::real, .min = 0, .max = 0.999},
             {.name = "rho_gate", .type = KeyType::real, .min = 0, .max = 1},
             {.name = "keep_floor", .type = KeyType::real, .min = 0, .max = 1},
             {.name = "keep_floors", .type = KeyType::list},
             {.name = "floor_kernels", .type = KeyType::boolean},
             {.name = "backbones", .type = KeyType::list},
             {.name = "pairs", .type = KeyType::string, .choices = {"nested", "all"}},
             {.name = "order", .type = KeyType::list},
             {.name = "outputs", .type = KeyType::map},
             {.name = "destructive_se", .type = KeyType::real, .min = 0, .max = 100},
             {.name = "checkpoints", .type = KeyType::boolean},
             {.name = "eval_split", .type = KeyType::string},
             {.name = "evaluate", .type = KeyType::string, .choices = {"native", "command"}},
             {.name = "command", .type = KeyType::string},
             {.name = "keep_merged", .type = KeyType::boolean},
             {.name = "shard_mb", .type = KeyType::real, .min = 0.001, .max = 1e9}});
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group, const std::vector<TaskGroup>&,
                                             const YamlChecker& yc) const override {
        auto s = std::make_shared<Settings>();
        const Params keys(group.params);
        s->command_keys = bind_merge_command_keys(group, yc, evaluates_by_command(group));
        s->merge.density = keys.real("density", s->merge.density);
        s->merge.drop = keys.real("drop", s->merge.drop);
        s->merge.rho_gate = keys.real("rho_gate", s->merge.rho_gate);
        s->merge.keep_floor = keys.real("keep_floor", s->merge.keep_floor);
        s->merge.floor_kernels = keys.flag("floor_kernels");
        s->scope = string_list_key(group, "scope", yc, {});
        s->eval_split = keys.text("eval_split", "flickr");
        if (keys.has("destructive_se")) s->destructive_se = keys.real("destructive_se", 2.0);
        return s;
    }
    std::vector<ColumnSpec> outputs(const TaskGroup& group, const YamlChecker& yc) const override {
        std::vector<ColumnSpec> out;
        for (const char* c :
             {"interference", "dispersion", "rho", "sign_conflict", "screen_score", "merged_mean",
              "ft_mean", "base_mean", "retention", "update_pct", "keep_fraction", "lambda_mean"})
            out.push_back({c, ColumnType::f64, 0});
        out.push_back({"destructive", ColumnType::i64, 0});
        const bool command = evaluates_by_command(group);
        for (const char* key : {"outputs", "destructive_se"})
            if (group.node[key] && !command)
                yc.fail(group.node[key], "tasks." + group.name + "." + key,
                        "applies to merges evaluated by a command (evaluate: command)");
        if (group.node["keep_floor"] && group.node["keep_floors"])
            yc.fail(group.node["keep_floors"], "tasks." + group.name + ".keep_floors",
                    "give 'keep_floor' or 'keep_floors', not both");
        if (settings_of<Settings>(group).destructive_se)
            for (const char* c : {"diff_se", "margin"}) out.push_back({c, ColumnType::f64, 0});
        for (const auto& c : parse_outputs(group, yc)) {
            if (std::any_of(out.begin(), out.end(),
                            [&](const ColumnSpec& o) { return o.name == c.name; }))
                yc.fail(group.node["outputs"][c.name], "tasks." + group.name + ".outputs." + c.name,
                        "a column the merge writes itself");
            out.push_back(c);
        }
        return out;
    }
    bool lists_tasks() const override { return true; }
    bool runs_command(const TaskGroup& group) const override { return evaluates_by_command(group); }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        return list_kway_merges(group, earlier, yc);
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        if (ctx.params.count("base_checkpoint")) return run_checkpoints(ctx);
        const ZooPaths paths{ctx.out_dir};
        const std::string backbone = ctx.params.at("backbone").text;
        const std::vector<std::string> models = ctx.texts("member_models");
        const ZooWorld zw = load_zoo_world(ctx);
        const zoo::Split split = zw.split(ctx.settings<Settings>().eval_split);  // before the merge
        Loaded m = read_members(paths, backbone, models);
        const merging::MemorySource source = tensors_of(m, models);

        // Pass 1: interference over the in-scope tensors (§3.1), the ρ PRISM's gate reads.
        merging::ModelMerge merge(merge_params(ctx), ctx.settings<Settings>().scope);
        for (std::size_t t = 0; t < source.size(); ++t) merge.measure(source, t);
        if (merge.sums().count == 0)
            throw std::invalid_argument("the scope matches no tensor of " + backbone);
        // Pass 2: the merge, tensor by tensor, into a copy of the backbone.
        zoo::Encoder merged = read_model(paths, backbone);
        auto pm = merged.params();
        const double rho = merging::ModelMerge::rho_of(merge.sums());
        for (std::size_t t = 0; t < source.size(); ++t)
            zoo::set_param_values(pm[t], merge.merge(source, t, rho));
        return row_of(merge.sums(), merge.totals(),
                      evaluate(ctx, paths, zw, split, m, merged, models), ctx);
    }

  private:
    static Row row_of(const merging::InterferenceSums& sums, const merging::MergeTotals& totals,
                      const merging::MergeScores& s, const TaskContext& ctx) {
        const int k = static_cast<int>(ctx.texts("member_tasks").size());
        return {sums.mean_interference(),
                sums.mean_dispersion(),
                sums.rho(),
                sums.sign_conflict(),
                merging::screening_score(sums.mean_interference(), k, ctx.real("coef", 1.0)),
                s.merged,
                s.finetuned,
                s.base,
                s.retention,
                totals.update_pct(),
                totals.keep_fraction(),
                totals.lambda_mean(),
                static_cast<std::int64_t>(s.destructive)};
    }

    // A checkpoint_set's merge: streamed to safetensors and scored by the group's command;
    // then, with `destructive_se`, destructive by its margin, and the group's `outputs`.
    static Row run_checkpoints(const TaskContext& ctx) {
        const Settings& settings = ctx.settings<Settings>();
        const std::vector<std::string> members = ctx.texts("member_checkpoints");
        const std::size_t k = members.size();
        const bool by_margin = settings.destructive_se.has_value();
        std::vector<ColumnSpec> cols;
        for (const std::string prefix : {"acc_", "ft_acc_", "base_acc_"})
            for (std::size_t i = 1; i <= k; ++i)
                cols.push_back({prefix + std::to_string(i), ColumnType::f64, 0});
        if (by_margin) cols.push_back({"diff_se", ColumnType::f64, 0});
        const std::size_t extra_at = cols.size();
        // The group's `outputs`: its columns after those the merge writes itself.
        const auto& outs = ctx.group.outputs;
        const auto own_end =
            std::find_if(outs.begin(), outs.end(),
                         [](const ColumnSpec& c) { return c.name == "destructive"; }) +
            (by_margin ? 3 : 1);
        cols.insert(cols.end(), own_end, outs.end());
        const CommandMerge m =
            merge_and_evaluate(ctx, settings.command_keys, merge_params(ctx), settings.scope,
                               ctx.params.at("base_checkpoint").text, members, {}, cols,
                               {{"tasks", ctx.texts("member_tasks")}});
        std::vector<double> acc;
        for (std::size_t c = 0; c < 3 * k; ++c) acc.push_back(std::get<double>(m.result[c]));
        const auto part = [&](std::size_t p) { return std::span(acc).subspan(p * k, k); };
        merging::MergeScores scores = merging::merge_scores(part(0), part(1), part(2));
        Row row;
        if (by_margin) {
            const double se = std::get<double>(m.result[3 * k]);
            scores = merging::with_margin(scores, se, *settings.destructive_se);
            row = row_of(m.sums, m.totals, scores, ctx);
            // A merge whose every item scores as the base's: no margin (0, not 0/0).
            const double diff = scores.merged - scores.base;
            row.insert(row.end(), {se, diff == 0.0 ? 0.0 : diff / se});
        } else {
            row = row_of(m.sums, m.totals, scores, ctx);
        }
        row.insert(row.end(), m.result.begin() + static_cast<std::ptrdiff_t>(extra_at),
                   m.result.end());
        return row;
    }

    // The group's parameters with the task's operator, coefficient, κ and keep floor (the
    // task's own with `keep_floors`, else the group's).
    static merging::MergeParams merge_params(const TaskContext& ctx) {
        merging::MergeParams mp = ctx.settings<Settings>().merge;
        mp.method = merging::method_from_name(ctx.params.at("method").text);
        mp.coef = ctx.real("coef", 1.0);
        mp.kappa = ctx.real("kappa", 1.0);
        mp.keep_floor = ctx.real("keep_floor", mp.keep_floor);
        mp.seed = ctx.seed;
        return mp;
    }

    // The backbone and its fine-tunes (with their sidecars), as read from the library.
    struct Loaded {
        zoo::Encoder base;
        std::vector<zoo::Encoder> finetunes;
        std::vector<nlohmann::json> sidecars;
    };
    static Loaded read_members(const ZooPaths& paths, const std::string& backbone,
                               const std::vector<std::string>& models) {
        Loaded m{read_model(paths, backbone), {}, std::vector<nlohmann::json>(models.size())};
        for (std::size_t i = 0; i < models.size(); ++i)
            m.finetunes.push_back(read_model(paths, models[i], &m.sidecars[i]));
        return m;
    }

    // Every parameter in file order (row-major), as `compatbench merge` sees the same
    // tensors: order matters to DARE's masks and to TIES's ties.
    static merging::MemorySource tensors_of(Loaded& m, const std::vector<std::string>& models) {
        const auto p0 = m.base.params();
        std::vector<merging::MemorySource::Tensor> tensors(p0.size());
        for (std::size_t t = 0; t < p0.size(); ++t)
            tensors[t] = {p0[t].name,
                          p0[t].shape.size() == 2,
                          zoo::param_values(p0[t]),
                          {},
                          p0[t].shape.size() > 2};
        for (std::size_t i = 0; i < m.finetunes.size(); ++i) {
            const auto pf = m.finetunes[i].params();
            if (pf.size() != p0.size())
                throw std::invalid_argument(models[i] + " has " + std::to_string(pf.size()) +
                                            " parameters, its backbone " +
                                            std::to_string(p0.size()));
            for (std::size_t t = 0; t < p0.size(); ++t) {
                if (pf[t].size != p0[t].size || pf[t].name != p0[t].name)
                    throw std::invalid_argument(models[i] + ": parameter " + pf[t].name +
                                                " differs from its backbone's " + p0[t].name);
                tensors[t].models.push_back(zoo::param_values(pf[t]));
            }
        }
        return merging::MemorySource(std::move(tensors));
    }

    // Evaluation (§3.3): each member's task through the merged encoder and the base, with the
    // member's own head; the fine-tune's accuracy from its sidecar when it holds one for
    // this split, else computed.
    static merging::MergeScores evaluate(const TaskContext& ctx, const ZooPaths& paths,
                                         const ZooWorld& zw, const zoo::Split& split, Loaded& m,
                                         zoo::Encoder& merged,
                                         const std::vector<std::string>& models) {
        const std::string split_name = ctx.settings<Settings>().eval_split;
        const auto& spec = zw.world.spec();
        const auto all_tasks = zoo::latent_tasks(spec);
        const std::vector<std::string> members = ctx.texts("member_tasks");
        const zoo::Mat z_merged = merged.encode(split.images);
        const zoo::Mat z_base = m.base.encode(split.images);
        std::vector<double> a, f, b;
        for (std::size_t i = 0; i < models.size(); ++i) {
            if (ctx.cancel.load()) throw TaskCancelled{};
            const auto& task = zoo::find_latent_task(all_tasks, members.at(i));
            const auto labels = zoo::task_labels(task, split.scenes, spec);
            nn::Linear<float> head = read_head(paths.model(models[i]));
            a.push_back(nn::accuracy<float>(head.forward(z_merged), labels));
            b.push_back(nn::accuracy<float>(head.forward(z_base), labels));
            const std::string cached = "task_accuracy_" + split_name;
            f.push_back(m.sidecars[i].contains(cached)
                            ? m.sidecars[i].at(cached).get<double>()
                            : zoo::task_accuracy(m.finetunes[i], head, task, split, spec));
        }
        return merging::merge_scores(a, f, b);
    }
};
}  // namespace

const TaskKind& kway_merge_task() {
    static const KwayMergeTask kind;
    return kind;
}

}  // namespace compatbench
