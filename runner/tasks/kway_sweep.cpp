#include "tasks/kway_sweep.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "common/hash.h"
#include "config/yaml_check.h"
#include "kind/group_keys.h"
#include "merging/model_merge.h"

namespace compatbench {

namespace {

const std::vector<std::string>& kAllMethods = merging::method_names();

bool prism_family(const std::string& m) {
    return merging::reads_merge_rho(merging::method_from_name(m));
}

// The shortest text that reads back as exactly v (6 significant digits when they do): two
// values that differ are never one label, one task id or one parameter.
std::string real_label(double v) {
    for (int digits = 6;; ++digits) {
        std::ostringstream s;
        s << std::setprecision(digits) << v;
        if (digits >= 17 || std::stod(s.str()) == v) return s.str();
    }
}

// A real list key (`coefs: [0.3, 1.0]` or `coefs: 1.0`), each within [lo, hi].
std::vector<double> real_list_key(const TaskGroup& group, const std::string& key,
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

bool is_checkpoint_set(const TaskGroup& fts) { return fts.kind->name() == "checkpoint_set"; }

// A fine-tune group's models of one backbone: names and tasks, in the group's order, and for
// a checkpoint_set their checkpoints (final, and earlier ones by step).
struct Members {
    std::string backbone, base_checkpoint;
    std::vector<std::string> models, tasks, task_ids, checkpoints;
    std::vector<std::map<int, std::string>> saved;
};

std::vector<Members> backbones_of(const TaskGroup& fts) {
    std::vector<Members> backbones;
    for (const auto& t : fts.listed) {
        const std::string bb = t.params.at("base").text;
        auto it = std::find_if(backbones.begin(), backbones.end(),
                               [&](const Members& m) { return m.backbone == bb; });
        if (it == backbones.end())
            it = backbones.insert(backbones.end(), Members{bb, {}, {}, {}, {}, {}, {}});
        Members& m = *it;
        m.models.push_back(t.key("name").text);
        m.tasks.push_back(t.params.at("task").text);
        m.task_ids.push_back(fts.name + "/" + t.suffix);
        if (!is_checkpoint_set(fts)) continue;
        m.base_checkpoint = t.params.at("base_checkpoint").text;
        m.checkpoints.push_back(t.params.at("checkpoint").text);
        m.saved.emplace_back();
        if (!t.lists.count("checkpoint_steps")) continue;
        const auto steps = ints_of(t.lists.at("checkpoint_steps"));
        for (std::size_t i = 0; i < steps.size(); ++i)
            m.saved.back()[steps[i]] = t.lists.at("step_checkpoints")[i].text;
    }
    return backbones;
}

// What a group sweeps: K, operators, coefficients, κ, and the checkpoints merged.
struct Sweep {
    std::vector<int> ks;
    std::vector<std::string> methods;
    std::vector<double> coefs, kappas;
    double kappa_coef = 1.0;
    std::vector<int> steps = {0};  // 0: the final fine-tunes
    std::int64_t final_steps = 200;
    bool all_pairs = false;              // `pairs: all`: K = 2 merges every pair, not the first two
    std::vector<std::string> order;      // `order`: the nested order by task (else drawn)
    std::vector<double> keep_floors;     // `keep_floors`: the PRISM family swept over floors
    std::vector<std::string> backbones;  // `backbones`: only these (empty: every one)
};

// A boolean key of the group: set and true.
bool flag_of(const TaskGroup& group, const std::string& key) {
    return group.params.count(key) && parse_bool(group.params.at(key).text).value_or(false);
}

// A fixed order of a backbone's fine-tunes, the group's `order` of tasks or else drawn from
// the backbone's name: its K-way merges take the first K, so they are nested.
std::vector<std::size_t> merge_order(const Members& bb, const Sweep& w, const TaskGroup& group,
                                     const YamlChecker& yc) {
    for (const auto& task : bb.tasks)  // tasks name the members of pairs and of the order
        if ((w.all_pairs || !w.order.empty()) &&
            std::count(bb.tasks.begin(), bb.tasks.end(), task) > 1)
            yc.fail(group.node[w.all_pairs ? "pairs" : "order"],
                    "tasks." + group.name + (w.all_pairs ? ".pairs" : ".order"),
                    "backbone '" + bb.backbone + "' has two fine-tunes of task '" + task +
                        "': its merges would share a name");
    if (!w.order.empty()) {
        std::vector<std::size_t> order;
        for (const auto& task : w.order) {
            const auto it = std::find(bb.tasks.begin(), bb.tasks.end(), task);
            if (it == bb.tasks.end() || std::count(w.order.begin(), w.order.end(), task) > 1)
                yc.fail(group.node["order"], "tasks." + group.name + ".order",
                        "'" + task + "' is not one task of backbone '" + bb.backbone +
                            "' (the order lists each of its fine-tunes' tasks once)");
            order.push_back(static_cast<std::size_t>(it - bb.tasks.begin()));
        }
        if (order.size() != bb.tasks.size())
            yc.fail(group.node["order"], "tasks." + group.name + ".order",
                    "lists " + std::to_string(order.size()) + " tasks, backbone '" + bb.backbone +
                        "' has " + std::to_string(bb.tasks.size()) + " fine-tunes");
        return order;
    }
    std::vector<std::size_t> order(bb.models.size());
    std::iota(order.begin(), order.end(), 0);
    std::uint64_t state = fnv1a64("kway/" + bb.backbone);
    for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[splitmix64(state++) % i]);
    return order;
}

// A checkpoint_set's final checkpoints' `steps` (0 when its manifest gives none): one value
// for all, the `step` key of their merges.
std::int64_t manifest_steps(const TaskGroup& group, const TaskGroup& fts, const YamlChecker& yc) {
    std::set<std::int64_t> steps;
    for (const auto& t : fts.listed)
        steps.insert(t.params.count("steps") ? t.params.at("steps").integer : 0);
    if (steps.size() > 1)
        yc.fail(group.node["finetunes"], "tasks." + group.name + ".finetunes",
                "the fine-tunes of '" + fts.name +
                    "' give different 'steps' (or some none) in their manifest: one value is "
                    "needed, the step of the final checkpoints' merges");
    return *steps.begin();
}

Sweep read_sweep(const TaskGroup& group, const TaskGroup& fts, const YamlChecker& yc) {
    const std::string base = "tasks." + group.name;
    Sweep w;
    w.ks = int_list_key(group, "k", yc, {2, 3, 4, 5, 6, 7, 8}, 2, 64);
    w.methods = string_list_key(group, "methods", yc, merging::default_method_names());
    for (std::size_t i = 0; i < w.methods.size(); ++i)
        if (std::find(kAllMethods.begin(), kAllMethods.end(), w.methods[i]) == kAllMethods.end())
            yc.fail(group.node["methods"][i], index_path(base + ".methods", i),
                    "unknown merge method '" + w.methods[i] + "'");
    w.coefs = real_list_key(group, "coefs", yc, {0.3, 0.5, 0.7, 1.0}, 0, 100);
    w.kappas = real_list_key(group, "kappas", yc, {0.25, 0.5, 1, 2, 3}, 0, 100);
    if (group.params.count("kappa_coef")) w.kappa_coef = group.params.at("kappa_coef").as_double();
    if (flag_of(group, "checkpoints")) {
        const auto& lists = fts.listed.front().lists;
        if (!lists.count("checkpoint_steps"))
            yc.fail(group.node["checkpoints"], base + ".checkpoints",
                    "group '" + fts.name + "' writes no checkpoints (its 'checkpoints' key)");
        w.steps = ints_of(lists.at("checkpoint_steps"));
    }
    w.all_pairs = group.params.count("pairs") && group.params.at("pairs").text == "all";
    if (w.all_pairs && std::find(w.ks.begin(), w.ks.end(), 2) == w.ks.end())
        yc.fail(group.node["pairs"], base + ".pairs",
                "'all' lists the K = 2 merges, and 'k' has no 2");
    w.order = string_list_key(group, "order", yc, {});
    w.keep_floors = real_list_key(group, "keep_floors", yc, {}, 0, 1);
    for (std::size_t i = 0; i < w.keep_floors.size(); ++i)
        if (std::count(w.keep_floors.begin(), w.keep_floors.end(), w.keep_floors[i]) > 1)
            yc.fail(group.node["keep_floors"][i], index_path(base + ".keep_floors", i),
                    "given twice");
    for (const auto& [key, set] :
         {std::pair<const char*, bool>{"keep_floors", !w.keep_floors.empty()},
          {"floor_kernels", flag_of(group, "floor_kernels")}})
        if (set && std::none_of(w.methods.begin(), w.methods.end(), prism_family))
            yc.fail(group.node[key], base + "." + key,
                    "sets the PRISM family's keep floor, and 'methods' names none of it");
    if (fts.params.count("steps")) w.final_steps = fts.params.at("steps").integer;
    if (is_checkpoint_set(fts)) w.final_steps = manifest_steps(group, fts, yc);
    w.backbones = string_list_key(group, "backbones", yc, {});
    const auto all = backbones_of(fts);
    for (std::size_t i = 0; i < w.backbones.size(); ++i) {
        if (std::none_of(all.begin(), all.end(),
                         [&](const Members& bb) { return bb.backbone == w.backbones[i]; }))
            yc.fail(group.node["backbones"][i], index_path(base + ".backbones", i),
                    "'" + w.backbones[i] + "' is not one backbone of '" + fts.name + "'");
        if (std::count(w.backbones.begin(), w.backbones.end(), w.backbones[i]) > 1)
            yc.fail(group.node["backbones"][i], index_path(base + ".backbones", i),
                    "'" + w.backbones[i] + "' is listed twice");
    }
    return w;
}

// One merge's members: the first K fine-tunes in the backbone's order, at checkpoint `step`.
// For a checkpoint_set, their checkpoints: a member without one at `step` fails the config.
struct Merge {
    std::string label;  // the `members` key column: "t1,t2"
    std::vector<std::string> tasks, models, after, checkpoints;
};
Merge merge_of(const Members& bb, const std::vector<std::size_t>& order, int k, int step,
               const TaskGroup& group, const YamlChecker& yc) {
    Merge m;
    for (int i = 0; i < k; ++i) {
        const std::size_t f = order[static_cast<std::size_t>(i)];
        append_csv(m.label, bb.tasks[f]);
        m.tasks.push_back(bb.tasks[f]);
        m.models.push_back(step > 0 ? bb.models[f] + ".step" + std::to_string(step) : bb.models[f]);
        m.after.push_back(bb.task_ids[f]);  // the fine-tunes (after their backbone)
        if (bb.checkpoints.empty()) continue;
        if (step == 0) {
            m.checkpoints.push_back(bb.checkpoints[f]);
        } else if (bb.saved[f].count(step)) {
            m.checkpoints.push_back(bb.saved[f].at(step));
        } else {
            yc.fail(group.node["checkpoints"], "tasks." + group.name + ".checkpoints",
                    "fine-tune '" + bb.models[f] + "' has no checkpoint at step " +
                        std::to_string(step) + " (its manifest's 'checkpoints')");
        }
    }
    return m;
}

// The tasks of one merge: each operator at each coefficient (SLERP only for K = 2; SLERP
// and Model Stock at c = 1), and the κ sweep of the PRISM family at `kappa_coef`; with
// `keep_floors`, the PRISM family at each floor (a `keep_floor` key column). `pair`: the
// members' tasks in the task's name (`pairs: all`), else empty.
void add_merges(std::vector<ListedTask>& out, const Sweep& w, const Members& bb, int step, int k,
                const Merge& merge, const Scalar& world_group, const std::string& pair) {
    const auto add_at = [&](const std::string& method, double coef, double kappa, double floor) {
        ListedTask t;
        t.suffix = bb.backbone;
        if (step > 0) t.suffix += "/step" + std::to_string(step);
        t.suffix += "/k" + std::to_string(k);
        if (!pair.empty()) t.suffix += "/" + pair;
        t.suffix += "/" + method + "/c" + real_label(coef);
        if (prism_family(method)) t.suffix += "/kappa" + real_label(kappa);
        if (floor >= 0) t.suffix += "/floor" + real_label(floor);
        t.keys = {{"backbone", Scalar::parse(bb.backbone)},
                  {"step", Scalar::parse(std::to_string(step > 0 ? step : w.final_steps))},
                  {"k", Scalar::parse(std::to_string(k))},
                  {"members", Scalar::parse(merge.label)},
                  {"method", Scalar::parse(method)},
                  {"coef", Scalar::parse(real_label(coef))},
                  {"kappa", Scalar::parse(real_label(prism_family(method) ? kappa : 0.0))}};
        if (!w.keep_floors.empty()) {
            t.keys.push_back({"keep_floor", Scalar::parse(real_label(std::max(floor, 0.0)))});
            if (floor >= 0) t.params["keep_floor"] = Scalar::parse(real_label(floor));
        }
        t.lists["member_models"] = list_of(merge.models);
        t.lists["member_tasks"] = list_of(merge.tasks);
        if (merge.checkpoints.empty()) {
            t.params["world_group"] = world_group;
        } else {
            t.lists["member_checkpoints"] = list_of(merge.checkpoints);
            t.params["base_checkpoint"] = Scalar::parse(bb.base_checkpoint);
        }
        t.after = merge.after;
        out.push_back(std::move(t));
    };
    const auto add = [&](const std::string& method, double coef, double kappa) {
        if (w.keep_floors.empty() || !prism_family(method)) return add_at(method, coef, kappa, -1);
        for (double floor : w.keep_floors) add_at(method, coef, kappa, floor);
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

// The `finetunes` group: a zoo_finetune group (evaluated natively) or a checkpoint_set
// (evaluated by the group's command).
const TaskGroup& finetune_group(const TaskGroup& group, const std::vector<TaskGroup>& earlier,
                                const YamlChecker& yc) {
    const std::string base = "tasks." + group.name;
    const std::string name = yc.as_string(group.node["finetunes"], base + ".finetunes");
    const bool command =
        group.params.count("evaluate") && group.params.at("evaluate").text == "command";
    for (const auto& g : earlier) {
        if (g.name != name) continue;
        if (is_checkpoint_set(g) && !(command && group.node["command"]))
            yc.fail(group.node, base + ".evaluate",
                    "the merges of checkpoint_set '" + name +
                        "' are evaluated by a command: 'evaluate: command' and a 'command'");
        if (g.kind->name() == "zoo_finetune" && command)
            yc.fail(group.node["evaluate"], base + ".evaluate",
                    "the model library's fine-tunes ('" + name + "') are evaluated natively");
        if (is_checkpoint_set(g) || g.kind->name() == "zoo_finetune") return g;
    }
    yc.fail(group.node["finetunes"], base + ".finetunes",
            "no earlier zoo_finetune or checkpoint_set group named '" + name + "'");
}

}  // namespace

std::vector<ListedTask> list_kway_merges(const TaskGroup& group,
                                         const std::vector<TaskGroup>& earlier,
                                         const YamlChecker& yc) {
    const std::string base = "tasks." + group.name;
    const TaskGroup& fts = finetune_group(group, earlier, yc);
    const Sweep sweep = read_sweep(group, fts, yc);
    const Scalar world_group =
        is_checkpoint_set(fts) ? Scalar{} : fts.listed.front().params.at("world_group");
    std::vector<ListedTask> out;
    for (const auto& bb : backbones_of(fts)) {
        if (!sweep.backbones.empty() && std::find(sweep.backbones.begin(), sweep.backbones.end(),
                                                  bb.backbone) == sweep.backbones.end())
            continue;
        const auto order = merge_order(bb, sweep, group, yc);
        for (int step : sweep.steps) {
            for (int k : sweep.ks) {
                if (static_cast<std::size_t>(k) > order.size())
                    yc.fail(group.node["k"], base + ".k",
                            "K = " + std::to_string(k) + " but backbone '" + bb.backbone +
                                "' has " + std::to_string(order.size()) + " fine-tunes");
                if (k != 2 || !sweep.all_pairs) {
                    add_merges(out, sweep, bb, step, k, merge_of(bb, order, k, step, group, yc),
                               world_group, "");
                    continue;
                }
                for (std::size_t i = 0; i < order.size(); ++i)  // every pair, in the order
                    for (std::size_t j = i + 1; j < order.size(); ++j) {
                        const std::vector<std::size_t> two = {order[i], order[j]};
                        add_merges(out, sweep, bb, step, 2, merge_of(bb, two, 2, step, group, yc),
                                   world_group, bb.tasks[order[i]] + "+" + bb.tasks[order[j]]);
                    }
            }
        }
    }
    if (out.empty()) yc.fail(group.node, base, "lists no merge");
    return out;
}

}  // namespace compatbench
