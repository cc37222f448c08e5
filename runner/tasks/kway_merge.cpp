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
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/hash.h"
#include "merging/model_merge.h"
#include "tasks/compass_common.h"
#include "tasks/zoo_common.h"

namespace compatbench {

namespace {

const std::vector<std::string>& kAllMethods = merging::method_names();

bool prism_family(const std::string& m) {
    return merging::reads_merge_rho(merging::method_from_name(m));
}

std::string real_label(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

// A real list key (`coefs: [0.3, 1.0]` or `coefs: 1.0`), each within [lo, hi].
std::vector<double> real_list_key(const GroupSpec& group, const std::string& key,
                                  const YamlChecker& yc, std::vector<double> fallback, double lo,
                                  double hi) {
    const YAML::Node node = group.node[key];
    if (!node) return fallback;
    const std::string path = "tasks." + group.name + "." + key;
    std::vector<double> out;
    const auto take = [&](const YAML::Node& n, const std::string& p) {
        const double v = yc.as_real(n, p);
        if (!(v >= lo && v <= hi))
            yc.fail(n, p, "must be within [" + real_label(lo) + ", " + real_label(hi) + "]");
        out.push_back(v);
    };
    if (node.IsSequence()) {
        for (std::size_t i = 0; i < node.size(); ++i) take(node[i], index_path(path, i));
    } else {
        take(node, path);
    }
    if (out.empty()) yc.fail(node, path, "must not be empty");
    return out;
}

// A fine-tune group's models of one backbone: names and tasks, in the group's order.
struct Members {
    std::string backbone;
    std::vector<std::string> models, tasks, task_ids;
};

std::vector<Members> backbones_of(const GroupSpec& fts) {
    std::vector<Members> backbones;
    for (const auto& t : fts.listed) {
        const std::string bb = t.params.at("base").text;
        if (backbones.empty() || backbones.back().backbone != bb)
            backbones.push_back({bb, {}, {}, {}});
        backbones.back().models.push_back(t.keys.front().second.text);
        backbones.back().tasks.push_back(t.params.at("task").text);
        backbones.back().task_ids.push_back(fts.name + "/" + t.suffix);
    }
    return backbones;
}

// A fixed order of a backbone's fine-tunes, drawn from its name: its K-way merges take the
// first K, so they are nested.
std::vector<std::size_t> merge_order(const Members& bb) {
    std::vector<std::size_t> order(bb.models.size());
    std::iota(order.begin(), order.end(), 0);
    std::uint64_t state = fnv1a64("kway/" + bb.backbone);
    for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[splitmix64(state++) % i]);
    return order;
}

// What a group sweeps: K, operators, coefficients, κ, and the checkpoints merged.
struct Sweep {
    std::vector<int> ks;
    std::vector<std::string> methods;
    std::vector<double> coefs, kappas;
    double kappa_coef = 1.0;
    std::vector<int> steps = {0};  // 0: the final fine-tunes
    std::int64_t final_steps = 200;
};

Sweep read_sweep(const GroupSpec& group, const GroupSpec& fts, const YamlChecker& yc) {
    const std::string base = "tasks." + group.name;
    Sweep w;
    w.ks = int_list_key(group, "k", yc, {2, 3, 4, 5, 6, 7, 8}, 2, 64);
    w.methods = string_list_key(group, "methods", yc, kAllMethods);
    for (std::size_t i = 0; i < w.methods.size(); ++i)
        if (std::find(kAllMethods.begin(), kAllMethods.end(), w.methods[i]) == kAllMethods.end())
            yc.fail(group.node["methods"][i], index_path(base + ".methods", i),
                    "unknown merge method '" + w.methods[i] + "'");
    w.coefs = real_list_key(group, "coefs", yc, {0.3, 0.5, 0.7, 1.0}, 0, 100);
    w.kappas = real_list_key(group, "kappas", yc, {0.25, 0.5, 1, 2, 3}, 0, 100);
    if (group.params.count("kappa_coef")) w.kappa_coef = group.params.at("kappa_coef").as_double();
    string_list_key(group, "scope", yc, {});  // checked here, read by each task
    if (group.params.count("checkpoints") && group.params.at("checkpoints").text == "true") {
        const auto& lists = fts.listed.front().lists;
        if (!lists.count("checkpoint_steps"))
            yc.fail(group.node["checkpoints"], base + ".checkpoints",
                    "group '" + fts.name + "' writes no checkpoints (its 'checkpoints' key)");
        w.steps = ints_of(lists.at("checkpoint_steps"));
    }
    if (fts.params.count("steps")) w.final_steps = fts.params.at("steps").integer;
    return w;
}

// One merge's members: the first K fine-tunes in the backbone's order, at checkpoint `step`.
struct Merge {
    std::string label;  // the `members` key column: "t1,t2"
    std::vector<std::string> tasks, models, after;
};
Merge merge_of(const Members& bb, const std::vector<std::size_t>& order, int k, int step) {
    Merge m;
    for (int i = 0; i < k; ++i) {
        const std::size_t f = order[static_cast<std::size_t>(i)];
        append_csv(m.label, bb.tasks[f]);
        m.tasks.push_back(bb.tasks[f]);
        m.models.push_back(step > 0 ? bb.models[f] + ".step" + std::to_string(step) : bb.models[f]);
        m.after.push_back(bb.task_ids[f]);  // the fine-tunes (after their backbone)
    }
    return m;
}

// The tasks of one merge: each operator at each coefficient (SLERP only for K = 2; SLERP
// and Model Stock at c = 1), and the κ sweep of the PRISM family at `kappa_coef`.
void add_merges(std::vector<ListedTask>& out, const Sweep& w, const Members& bb, int step, int k,
                const Merge& merge, const Scalar& world_group) {
    const auto add = [&](const std::string& method, double coef, double kappa) {
        ListedTask t;
        t.suffix = bb.backbone;
        if (step > 0) t.suffix += "/step" + std::to_string(step);
        t.suffix += "/k" + std::to_string(k) + "/" + method + "/c" + real_label(coef);
        if (prism_family(method)) t.suffix += "/kappa" + real_label(kappa);
        t.keys = {{"backbone", Scalar::parse(bb.backbone)},
                  {"step", Scalar::parse(std::to_string(step > 0 ? step : w.final_steps))},
                  {"k", Scalar::parse(std::to_string(k))},
                  {"members", Scalar::parse(merge.label)},
                  {"method", Scalar::parse(method)},
                  {"coef", Scalar::parse(real_label(coef))},
                  {"kappa", Scalar::parse(real_label(prism_family(method) ? kappa : 0.0))}};
        t.lists["member_models"] = list_of(merge.models);
        t.lists["member_tasks"] = list_of(merge.tasks);
        t.params["world_group"] = world_group;
        t.after = merge.after;
        out.push_back(std::move(t));
    };
    for (const auto& method : w.methods) {
        if (method == "slerp" && k != 2) continue;
        if (method == "slerp" || method == "model_stock") {
            add(method, 1.0, 1.0);
            continue;
        }
        for (double c : w.coefs) add(method, c, 1.0);
        if (!prism_family(method)) continue;
        for (double kappa : w.kappas)
            if (kappa != 1.0) add(method, w.kappa_coef, kappa);
    }
}

class KwayMergeTask final : public TaskKind {
  public:
    std::string_view name() const override { return "kway_merge"; }
    std::vector<KeyRule> keys() const override {
        return {{"finetunes", KeyType::string, true, 0, 0, {}},
                {"k", KeyType::list, false, 0, 0, {}},
                {"methods", KeyType::list, false, 0, 0, {}},
                {"coefs", KeyType::list, false, 0, 0, {}},
                {"kappas", KeyType::list, false, 0, 0, {}},
                {"kappa_coef", KeyType::real, false, 0, 100, {}},
                {"scope", KeyType::list, false, 0, 0, {}},
                {"density", KeyType::real, false, 0, 1, {}},
                {"drop", KeyType::real, false, 0, 0.999, {}},
                {"rho_gate", KeyType::real, false, 0, 1, {}},
                {"keep_floor", KeyType::real, false, 0, 1, {}},
                {"checkpoints", KeyType::boolean, false, 0, 0, {}},
                {"eval_split", KeyType::string, false, 0, 0, {}}};
    }
    std::vector<ColumnSpec> outputs(const GroupSpec&, const YamlChecker&) const override {
        std::vector<ColumnSpec> out;
        for (const char* c :
             {"interference", "dispersion", "rho", "sign_conflict", "screen_score", "merged_mean",
              "ft_mean", "base_mean", "retention", "update_pct", "keep_fraction", "lambda_mean"})
            out.push_back({c, ColumnType::f64, 0});
        out.push_back({"destructive", ColumnType::i64, 0});
        return out;
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const GroupSpec& group,
                                       const std::vector<GroupSpec>& earlier,
                                       const YamlChecker& yc) const override {
        const std::string base = "tasks." + group.name;
        const GroupSpec& fts = earlier_group(group, "finetunes", earlier, "zoo_finetune", yc);
        const Sweep sweep = read_sweep(group, fts, yc);
        const Scalar& world_group = fts.listed.front().params.at("world_group");
        std::vector<ListedTask> out;
        for (const auto& bb : backbones_of(fts)) {
            const auto order = merge_order(bb);
            for (int step : sweep.steps) {
                for (int k : sweep.ks) {
                    if (static_cast<std::size_t>(k) > order.size())
                        yc.fail(group.node["k"], base + ".k",
                                "K = " + std::to_string(k) + " but backbone '" + bb.backbone +
                                    "' has " + std::to_string(order.size()) + " fine-tunes");
                    add_merges(out, sweep, bb, step, k, merge_of(bb, order, k, step), world_group);
                }
            }
        }
        if (out.empty()) yc.fail(group.node, base, "lists no merge");
        return out;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const ZooPaths paths{ctx.out_dir};
        const std::string backbone = ctx.params.at("backbone").text;
        const std::vector<std::string> models = ctx.texts("member_models");
        const int k = static_cast<int>(models.size());
        const ZooWorld zw = load_zoo_world(ctx);
        const zoo::Split split = zw.split(eval_split(ctx));  // fails before the merge, not after
        Loaded m = read_members(paths, backbone, models);
        const merging::MemorySource source = tensors_of(m, models);

        // Pass 1: interference over the in-scope tensors (§3.1), the ρ PRISM's gate reads.
        merging::ModelMerge merge(merge_params(ctx), scope_of(ctx));
        for (std::size_t t = 0; t < source.size(); ++t) merge.measure(source, t);
        if (merge.sums().count == 0)
            throw std::invalid_argument("the scope matches no tensor of " + backbone);
        // Pass 2: the merge, tensor by tensor, into a copy of the backbone.
        zoo::Encoder merged = read_model(paths, backbone);
        auto pm = merged.params();
        const double rho = merging::ModelMerge::rho_of(merge.sums());
        for (std::size_t t = 0; t < source.size(); ++t)
            set_param_values(pm[t], merge.merge(source, t, rho));

        const Accuracy acc = evaluate(ctx, paths, zw, split, m, merged, models);
        const auto& sums = merge.sums();
        const auto& totals = merge.totals();
        return {sums.mean_interference(),
                sums.mean_dispersion(),
                sums.rho(),
                sums.sign_conflict(),
                merging::screening_score(sums.mean_interference(), k, merge.params().coef),
                acc.merged,
                acc.finetuned,
                acc.base,
                acc.retention,
                totals.update_pct(),
                totals.keep_fraction(),
                totals.lambda_mean(),
                static_cast<std::int64_t>(acc.merged < acc.base)};
    }

  private:
    static std::string eval_split(const TaskContext& ctx) {
        return ctx.params.count("eval_split") ? ctx.params.at("eval_split").text : "flickr";
    }

    static merging::MergeParams merge_params(const TaskContext& ctx) {
        merging::MergeParams mp;
        mp.method = merging::method_from_name(ctx.params.at("method").text);
        mp.coef = ctx.real("coef", 1.0);
        mp.kappa = ctx.real("kappa", 1.0);
        mp.density = ctx.real("density", mp.density);
        mp.drop = ctx.real("drop", mp.drop);
        mp.rho_gate = ctx.real("rho_gate", mp.rho_gate);
        mp.keep_floor = ctx.real("keep_floor", mp.keep_floor);
        mp.seed = ctx.seed;
        return mp;
    }

    static std::vector<std::string> scope_of(const TaskContext& ctx) {
        std::vector<std::string> scope;
        if (const YAML::Node s = ctx.group.node["scope"])
            for (const auto& e : s) scope.push_back(e.Scalar());
        return scope;
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
            tensors[t] = {p0[t].name, p0[t].shape.size() == 2, param_values(p0[t]), {}};
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
                tensors[t].models.push_back(param_values(pf[t]));
            }
        }
        return merging::MemorySource(std::move(tensors));
    }

    struct Accuracy {
        double merged = 0, finetuned = 0, base = 0, retention = 0;  // means over the members
    };
    // Evaluation (§3.3): each member's task through the merged encoder and the base, with the
    // member's own head; the fine-tune's accuracy from its sidecar when it holds one for
    // this split, else computed.
    static Accuracy evaluate(const TaskContext& ctx, const ZooPaths& paths, const ZooWorld& zw,
                             const zoo::Split& split, Loaded& m, zoo::Encoder& merged,
                             const std::vector<std::string>& models) {
        const std::string split_name = eval_split(ctx);
        const auto& spec = zw.world.spec();
        const auto all_tasks = zoo::latent_tasks(spec);
        const std::vector<std::string> members = ctx.texts("member_tasks");
        const zoo::Mat z_merged = merged.encode(split.images);
        const zoo::Mat z_base = m.base.encode(split.images);
        Accuracy acc;
        for (std::size_t i = 0; i < models.size(); ++i) {
            if (ctx.cancel.load()) throw TaskCancelled{};
            const auto& task = zoo::find_latent_task(all_tasks, members.at(i));
            const auto labels = zoo::task_labels(task, split.scenes, spec);
            nn::Linear<float> head = read_head(paths.model(models[i]));
            const double a = nn::accuracy<float>(head.forward(z_merged), labels);
            const double b = nn::accuracy<float>(head.forward(z_base), labels);
            const std::string cached = "task_accuracy_" + split_name;
            const double f = m.sidecars[i].contains(cached)
                                 ? m.sidecars[i].at(cached).get<double>()
                                 : zoo::task_accuracy(m.finetunes[i], head, task, split, spec);
            acc.merged += a;
            acc.base += b;
            acc.finetuned += f;
            acc.retention += a / f;
        }
        const double kk = static_cast<double>(models.size());
        acc.merged /= kk;
        acc.finetuned /= kk;
        acc.base /= kk;
        acc.retention /= kk;
        return acc;
    }
};
}  // namespace

const TaskKind& kway_merge_task() {
    static const KwayMergeTask kind;
    return kind;
}

}  // namespace compatbench
