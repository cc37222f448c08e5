// Task kind `encoder_subset`: the encoder-roles study (methods.md §4). One task per non-empty
// subset U of the pool's encoders and per seed: a model built from scratch on U (training-
// time removal, TR), scored on every benchmark; the same seed's full-pool model evaluated
// with the encoders outside U zeroed (inference-time masking, IM); and the effective rank
// (§1.5) of each encoder's pre-projector features on the probe split.
//
// Zoo (`evaluate: native`): the pool is a zoo_encoder group; the model is zoo::SubsetModel
// on the 16 benchmarks. The full-pool task of each seed runs first and stores its weights
// under artifacts/encoders/<group>/replicate<r>.safetensors for the IM evaluations.
//
//   - name: subsets
//     kind: encoder_subset
//     table: encoders/subsets
//     pool: pool                  # a zoo_encoder group (5 encoders: 31 subsets)
//     seeds: 3                    # replicates per subset (key column `replicate`)
//     steps: 300                  # batch, lr, encoder_lr_scale, proj_dim as well
//     eval_split: coco            # probe_split: probe, probe: 1024 rows
//
// Real models (`evaluate: command`): the user's script trains and scores one subset:
//     encoders: [convnext, eva02, clip, pix2struct, sam]
//     benchmarks: {General: [gqa, ...], Knowledge: [...], OCR&Chart: [...], Vision-Centric: [...]}
//     command: "python3 train_subset.py --encoders {encoders} --mask {mask} --seed {seed}
//     --replicate {replicate}
//               --out {workdir} --result {result}"
// It writes {result}: {"<benchmark>": score, ...}; optionally {workdir}/im.json (the same
// keys: the full-pool model scored with the encoders outside the subset zeroed) and
// {workdir}/features.safetensors (one tensor per encoder name: its pre-projector features on
// a probe set, rows = samples, as many for each) for the effective ranks. Missing optional
// files give NaN. A command that names {pool_workdir} (the workdir of the same replicate's
// full-pool task) runs after that task, as the native path does, and can read its model.
#include <cmath>

#include "catalog/zoo_common.h"
#include "commands/shell_task.h"
#include "core/text_template.h"
#include "formats/matrix.h"
#include "formats/safetensors.h"
#include "kind/group_keys.h"
#include "roles/analysis.h"
#include "similarity/similarity.h"
#include "zoo/roles.h"

namespace compatbench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "OCR&Chart" -> "ocr_chart"
std::string column_name(const std::string& label) {
    std::string out;
    for (char c : label) {
        if (std::isalnum(static_cast<unsigned char>(c))) {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        } else if (!out.empty() && out.back() != '_') {
            out += '_';
        }
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    return out;
}

struct Bench {
    std::string name, category;
};

// The benchmarks in output order (category by category) and the encoder names, from the
// entry: the zoo's 16 and the pool group's models, or the `benchmarks` and `encoders` keys.
struct Layout {
    std::vector<Bench> benches;
    std::vector<std::string> categories;
    std::vector<std::string> encoders;
};

Layout layout_of(const TaskGroup& group, const std::vector<TaskGroup>& earlier,
                 const YamlChecker& yc) {
    Layout l;
    const std::string base = "tasks." + group.name;
    if (evaluates_by_command(group)) {
        const YAML::Node b = group.node["benchmarks"];
        if (!b || !b.IsMap())
            yc.fail(group.node, base + ".benchmarks",
                    "evaluate: command needs 'benchmarks': {category: [names]}");
        for (const auto& c : b) {
            const std::string cat = c.first.Scalar();
            l.categories.push_back(cat);
            for (std::size_t i = 0; i < c.second.size(); ++i)
                l.benches.push_back(
                    {yc.as_string(c.second[i], index_path(base + ".benchmarks." + cat, i)), cat});
        }
        l.encoders = string_list_key(group, "encoders", yc, {});
        if (l.encoders.empty())
            yc.fail(group.node, base + ".encoders", "evaluate: command needs 'encoders'");
        if (!group.node["command"])
            yc.fail(group.node, base + ".command", "evaluate: command needs a 'command'");
    } else {
        for (const auto& b : zoo::pool_benchmarks(zoo::WorldSpec{})) {
            l.benches.push_back({b.name, b.category});
            if (std::find(l.categories.begin(), l.categories.end(), b.category) ==
                l.categories.end())
                l.categories.push_back(b.category);
        }
        if (!group.node["pool"])
            yc.fail(group.node, base + ".pool",
                    "evaluate: native needs 'pool' (a zoo_encoder group)");
        const TaskGroup& pool = earlier_group(group, "pool", earlier, "zoo_encoder", yc);
        for (const auto& m : pool.listed)
            if (m.params.at("modality_label").text == "pool")
                l.encoders.push_back(m.key("name").text);
        if (l.encoders.empty())
            yc.fail(group.node["pool"], base + ".pool",
                    "group '" + pool.name + "' has no model of modality pool");
    }
    if (l.encoders.size() > 16)
        yc.fail(group.node, base, "at most 16 encoders (subsets are bitmasks)");
    return l;
}

// The id of one subset's task: <group>/r<replicate>/mask<mask>.
std::string subset_id(const std::string& group, std::int64_t replicate, unsigned mask) {
    return group + "/r" + std::to_string(replicate) + "/mask" + std::to_string(mask);
}

// The group's keys, parsed once (TaskKind::bind).
struct Settings final : KindSettings {
    Layout layout;
    bool command = false;  // evaluate: command
    CommandKeys command_keys;
    std::int64_t seeds = 3;  // replicates of every subset
    zoo::SubsetSpec train;   // steps, batch, lr, encoder_lr_scale, proj_dim
    std::string eval_split, probe_split;
    std::int64_t probe = 1024;  // rows of the probe split for the effective rank
};

bool reads_pool_workdir(const Settings& s) {
    return s.command && TextTemplate::parse(s.command_keys.command, {}, true).uses("pool_workdir");
}

class EncoderSubsetTask final : public TaskKind {
  public:
    std::string_view name() const override { return "encoder_subset"; }
    std::vector<KeyRule> keys() const override {
        return with_command_keys(
            {{.name = "pool", .type = KeyType::string},
             {.name = "seeds", .type = KeyType::integer, .min = 1, .max = 1000},
             {.name = "steps", .type = KeyType::integer, .min = 1, .max = 1e7},
             {.name = "batch", .type = KeyType::integer, .min = 2, .max = 1e6},
             {.name = "lr", .type = KeyType::real, .min = 0, .max = 10},
             {.name = "encoder_lr_scale", .type = KeyType::real, .min = 0, .max = 10},
             {.name = "proj_dim", .type = KeyType::integer, .min = 1, .max = 1e5},
             {.name = "eval_split", .type = KeyType::string},
             {.name = "probe_split", .type = KeyType::string},
             {.name = "probe", .type = KeyType::integer, .min = 2, .max = 1e7},
             {.name = "evaluate", .type = KeyType::string, .choices = {"native", "command"}},
             {.name = "command", .type = KeyType::string},
             {.name = "encoders", .type = KeyType::list},
             {.name = "benchmarks", .type = KeyType::map}});
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group,
                                             const std::vector<TaskGroup>& earlier,
                                             const YamlChecker& yc) const override {
        auto s = std::make_shared<Settings>();
        const Params keys(group.params);
        s->command = evaluates_by_command(group);
        s->command_keys = bind_command_keys(group, yc, s->command);
        s->layout = layout_of(group, earlier, yc);
        s->seeds = keys.integer("seeds", 3);
        s->train.steps = static_cast<int>(keys.integer("steps", s->train.steps));
        s->train.batch = static_cast<int>(keys.integer("batch", s->train.batch));
        s->train.lr = keys.real("lr", s->train.lr);
        s->train.encoder_lr_scale = keys.real("encoder_lr_scale", s->train.encoder_lr_scale);
        s->train.proj_dim = static_cast<int>(keys.integer("proj_dim", s->train.proj_dim));
        s->eval_split = keys.text("eval_split", "coco");
        s->probe_split = keys.text("probe_split", "probe");
        s->probe = keys.integer("probe", 1024);
        return s;
    }
    std::vector<ColumnSpec> outputs(const TaskGroup& group, const YamlChecker&) const override {
        const Layout& l = settings_of<Settings>(group).layout;
        std::vector<ColumnSpec> out;
        for (const auto& b : l.benches) out.push_back({b.name, ColumnType::f64, 0});
        for (const auto& c : l.categories) out.push_back({column_name(c), ColumnType::f64, 0});
        out.push_back({"average", ColumnType::f64, 0});
        for (const auto& c : l.categories)
            out.push_back({"im_" + column_name(c), ColumnType::f64, 0});
        out.push_back({"im_average", ColumnType::f64, 0});
        for (const auto& e : l.encoders) out.push_back({"erank_" + e, ColumnType::f64, 0});
        out.push_back({"params", ColumnType::i64, 0});
        out.push_back({"train_loss", ColumnType::f64, 0});
        return out;
    }
    bool lists_tasks() const override { return true; }
    bool runs_command(const TaskGroup& group) const override { return evaluates_by_command(group); }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        const Settings& s = settings_of<Settings>(group);
        const Layout& l = s.layout;
        const int pool_size = static_cast<int>(l.encoders.size());
        if (pool_size < 1) yc.fail(group.node, "tasks." + group.name, "an empty encoder pool");
        const unsigned full = (1u << pool_size) - 1;
        const std::int64_t seeds = s.seeds;
        const TaskGroup* pool =
            s.command ? nullptr : &earlier_group(group, "pool", earlier, "zoo_encoder", yc);
        const auto id_of = [&](std::int64_t seed, unsigned mask) {
            return subset_id(group.name, seed, mask);
        };
        std::vector<ListedTask> out;
        for (std::int64_t seed = 1; seed <= seeds; ++seed) {
            // The full pool first: the other subsets of the seed read it for IM.
            for (unsigned step = 0; step < full; ++step) {
                const unsigned mask = full - step;
                ListedTask t;
                t.suffix = id_of(seed, mask).substr(group.name.size() + 1);
                std::string members;
                int size = 0;
                for (int i = 0; i < pool_size; ++i)
                    if (mask & (1u << i)) {
                        members +=
                            (members.empty() ? "" : "+") + l.encoders[static_cast<std::size_t>(i)];
                        ++size;
                    }
                t.keys = {{"mask", Scalar::parse(std::to_string(mask))},
                          {"encoders", Scalar::parse(members)},
                          {"size", Scalar::parse(std::to_string(size))},
                          {"replicate", Scalar::parse(std::to_string(seed))}};
                t.params["full_mask"] = Scalar::parse(std::to_string(full));
                if (pool) {
                    t.params["world_group"] = pool->listed.front().params.at("world_group");
                    for (const auto& m : pool->listed)
                        if (m.params.at("modality_label").text == "pool")
                            t.after.push_back(pool->name + "/" + m.suffix);
                }
                if ((pool || reads_pool_workdir(s)) && mask != full)
                    t.after.push_back(id_of(seed, full));
                out.push_back(std::move(t));
            }
        }
        return out;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const Settings& s = ctx.settings<Settings>();
        const std::vector<std::string>& pool = s.layout.encoders;
        const auto mask = static_cast<unsigned>(ctx.params.at("mask").integer);
        const auto full = static_cast<unsigned>(ctx.params.at("full_mask").integer);
        std::vector<double> scores, im, erank(pool.size(), kNaN);
        const std::vector<Bench>& benches = s.layout.benches;
        const std::vector<std::string>& categories = s.layout.categories;
        std::int64_t params = 0;
        double train_loss = kNaN;
        if (s.command)
            run_command(ctx, s, scores, im, erank);
        else
            run_native(ctx, s, mask, full, scores, im, erank, params, train_loss);
        // Category means and the average, for TR and IM.
        Row row;
        for (double score : scores) row.emplace_back(score);
        std::vector<std::string> bench_category;
        for (const auto& b : benches) bench_category.push_back(b.category);
        const auto summarise = [&](const std::vector<double>& v) {
            return roles::category_means(v, bench_category, categories);
        };
        for (double c : summarise(scores)) row.emplace_back(c);
        for (double c : summarise(im)) row.emplace_back(c);
        for (double e : erank) row.emplace_back(e);
        row.emplace_back(params);
        row.emplace_back(train_loss);
        return row;
    }

  private:
    static fs::path full_model(const TaskContext& ctx) {
        return ctx.out_dir / "artifacts" / "encoders" / ctx.group.name /
               ("replicate" + ctx.params.at("replicate").text + ".safetensors");
    }

    static void run_native(const TaskContext& ctx, const Settings& settings, unsigned mask,
                           unsigned full, std::vector<double>& scores, std::vector<double>& im,
                           std::vector<double>& erank, std::int64_t& params, double& train_loss) {
        const std::vector<std::string>& pool = settings.layout.encoders;
        const ZooPaths paths{ctx.out_dir};
        const ZooWorld zw = load_zoo_world(ctx);
        const auto& spec = zw.world.spec();
        const zoo::Split train = zw.split("train");
        const zoo::Split eval = zw.split(settings.eval_split);
        const zoo::Split probe = zw.split(settings.probe_split);
        const auto rows = std::min<Eigen::Index>(settings.probe, probe.images.rows());
        const auto benchmarks = zoo::pool_benchmarks(spec);
        zoo::SubsetSpec s = settings.train;
        s.seed = ctx.seed;
        const auto build = [&](unsigned m, std::uint64_t seed) {
            std::vector<zoo::Encoder> encs;
            const auto slots = zoo::mask_members(m, static_cast<int>(pool.size()));
            for (int i : slots)
                encs.push_back(read_model(paths, pool[static_cast<std::size_t>(i)]));
            return zoo::SubsetModel(std::move(encs), slots, s.proj_dim, benchmarks, seed);
        };
        zoo::SubsetModel model = build(mask, s.seed);
        zoo::TrainSummary summary;
        cancellable(ctx, [&] {
            model.train(train, spec, s, summary, &ctx.cancel);
            return 0;
        });
        train_loss = summary.final_loss;
        params = static_cast<std::int64_t>(model.parameter_count());
        scores = model.evaluate(eval, spec);
        const auto ranks = model.block_erank(probe.images.topRows(rows));
        for (std::size_t e = 0; e < ranks.size(); ++e)
            erank[static_cast<std::size_t>(model.slots()[e])] = ranks[e];
        const fs::path file = full_model(ctx);
        if (mask == full) {
            formats::SafetensorsWriter w;
            for (const auto& p : model.params()) w.add_f32(p.name, p.shape, zoo::param_values(p));
            w.set_metadata("format", "compatbench");
            w.set_metadata("mask", std::to_string(mask));
            fs::create_directories(file.parent_path());
            w.write(file.string());
            im = scores;
        } else {
            zoo::SubsetModel whole = build(full, 0);
            const auto f = formats::SafetensorsFile::open(file.string());
            for (auto& p : whole.params()) zoo::set_param_values(p, f.read_f32(f.at(p.name)));
            im = whole.evaluate(eval, spec, full & ~mask);
        }
    }

    static void run_command(const TaskContext& ctx, const Settings& s, std::vector<double>& scores,
                            std::vector<double>& im, std::vector<double>& erank) {
        const std::vector<Bench>& benches = s.layout.benches;
        const std::vector<std::string>& pool = s.layout.encoders;
        std::vector<ColumnSpec> cols;
        for (const auto& b : benches) cols.push_back({b.name, ColumnType::f64, 0});
        const fs::path workdir = ctx.out_dir / "work" / task_file_stem(ctx.id);
        fs::remove(workdir / "im.json");
        fs::remove(workdir / "features.safetensors");
        const std::string pool_task =
            subset_id(ctx.group.name, ctx.params.at("replicate").integer,
                      static_cast<unsigned>(ctx.params.at("full_mask").integer));
        const Row r = run_shell_task(
            ctx, s.command_keys,
            {{"pool_workdir", (ctx.out_dir / "work" / task_file_stem(pool_task)).string()}}, cols);
        for (const auto& v : r) scores.push_back(std::get<double>(v));
        if (fs::exists(workdir / "im.json")) {
            const nlohmann::json j = formats::read_json(workdir / "im.json");
            for (const auto& b : benches) {
                if (!j.contains(b.name) || !j.at(b.name).is_number())
                    throw std::runtime_error((workdir / "im.json").string() + ": no number '" +
                                             b.name + "'");
                im.push_back(j.at(b.name).get<double>());
            }
        }
        const fs::path feats = workdir / "features.safetensors";
        if (fs::exists(feats)) {
            const auto f = formats::SafetensorsFile::open(feats.string());
            std::string first;  // the first encoder's tensor: every other has its rows
            for (std::size_t e = 0; e < pool.size(); ++e) {
                const auto* t = f.find(pool[e]);
                if (!t) continue;
                if (t->shape.size() != 2)
                    throw formats::FormatError(feats.string() + ": tensor '" + pool[e] +
                                               "' must be 2-D (samples x features)");
                if (first.empty()) first = pool[e];
                if (t->shape[0] != f.at(first).shape[0])
                    throw formats::FormatError(feats.string() + ": tensor '" + pool[e] + "' has " +
                                               std::to_string(t->shape[0]) + " rows, '" + first +
                                               "' " + std::to_string(f.at(first).shape[0]) +
                                               ": one probe set for every encoder");
                const MatF m = formats::read_matrix(f, *t);
                erank[e] = similarity::effective_rank(m.cast<double>(), true);
            }
        }
    }
};
}  // namespace

const TaskKind& encoder_subset_task() {
    static const EncoderSubsetTask kind;
    return kind;
}

}  // namespace compatbench
