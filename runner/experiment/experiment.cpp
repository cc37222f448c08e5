#include "experiment/experiment.h"

#include "analyses/analysis_kind.h"
#include "tasks/registry.h"

namespace compatbench {

namespace {

std::vector<KeyRule> concat(std::vector<KeyRule> a, const std::vector<KeyRule>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// "a, b, c": the names of a registry's kinds, for an error message.
template <class Kinds>
std::string known_names(const Kinds& kinds) {
    std::string known;
    for (const auto* k : kinds) known += (known.empty() ? "" : ", ") + std::string(k->name());
    return known;
}

// A grid axis over a kind key must be over a numeric one (the others are bound once for the
// group: TaskKind::bind) and hold numbers in that key's range.
void check_grid(const YamlChecker& yc, const TaskGroup& g, const std::vector<KeyRule>& rules) {
    for (const auto& [key, values] : g.grid) {
        const YAML::Node axis = g.node["grid"][key];
        const std::string apath = join_path(join_path("tasks." + g.name, "grid"), key);
        for (const auto& rule : rules) {
            if (rule.name != key) continue;
            if (rule.type != KeyType::integer && rule.type != KeyType::real)
                yc.fail(axis, apath,
                        "a grid varies only the numeric keys of kind '" + g.kind_name + "'; '" +
                            key + "' is set once for the group");
            for (const auto& v : values) {
                if ((rule.type == KeyType::integer && v.kind != Scalar::Kind::integer) ||
                    (rule.type == KeyType::real && !v.is_number()))
                    yc.fail(axis, apath, "'" + v.text + "' is not a number");
                if ((rule.type == KeyType::integer || rule.type == KeyType::real) &&
                    (v.as_double() < rule.min || v.as_double() > rule.max))
                    yc.fail(axis, apath, "value " + v.text + " is out of range");
            }
        }
    }
}

// The group's kind checks its keys, lists its tasks (if it lists its own) and declares its
// output columns; `earlier` are the groups above it, already bound.
TaskGroup bind_group(const YamlChecker& yc, GroupSpec spec, const std::vector<TaskGroup>& earlier) {
    TaskGroup g;
    static_cast<GroupSpec&>(g) = std::move(spec);
    const std::string gpath = "tasks." + g.name;
    g.kind = find_task_kind(g.kind_name);
    if (!g.kind)
        yc.fail(
            g.node["kind"], join_path(gpath, "kind"),
            "unknown task kind '" + g.kind_name + "' (known: " + known_names(task_kinds()) + ")");
    const std::vector<KeyRule> rules = g.kind->keys();
    yc.check_map(g.node, gpath, concat(group_key_rules(), rules));
    for (const auto& rule : rules) {
        const YAML::Node v = g.node[rule.name];
        if (v && v.IsScalar()) g.params[rule.name] = Scalar::parse(v.Scalar());
    }
    if (g.kind->lists_tasks() && (g.node["count"] || g.node["grid"]))
        yc.fail(g.node["count"] ? g.node["count"] : g.node["grid"], gpath,
                "kind '" + g.kind_name + "' lists its own tasks: no 'count' or 'grid'");
    check_grid(yc, g, rules);
    g.settings = g.kind->bind(g, earlier, yc);
    if (g.kind->lists_tasks()) {
        g.listed = g.kind->list_tasks(g, earlier, yc);
        if (g.listed.empty()) yc.fail(g.node, gpath, "the entry lists no tasks");
    }
    g.outputs = g.kind->outputs(g, yc);  // may read the listed tasks
    g.runs_command = g.kind->runs_command(g);
    if (!g.cost_given && g.runs_command) g.cost = kCommandCost;
    g.node.reset();  // no YAML outlives binding: the kind keeps what it read
    return g;
}

// The analysis's kind checks its keys, its extra input groups and their columns.
Analysis bind_analysis(const YamlChecker& yc, AnalysisSpec spec, const GroupColumns& columns) {
    Analysis a;
    static_cast<AnalysisSpec&>(a) = std::move(spec);
    const std::string apath = "analyses." + a.name;
    a.kind = find_analysis_kind(a.kind_name);
    if (!a.kind)
        yc.fail(a.node["kind"], join_path(apath, "kind"),
                "unknown analysis kind '" + a.kind_name +
                    "' (known: " + known_names(analysis_kinds()) + ")");
    yc.check_map(a.node, apath, concat(analysis_key_rules(), a.kind->keys()));
    for (const auto& extra : a.kind->extra_inputs(a)) {
        if (!columns.count(extra))
            yc.fail(a.node, apath,
                    "no task group named '" + extra + "' (an input of the analysis)");
    }
    a.kind->check(a, columns.at(a.input), columns, yc);
    return a;
}

}  // namespace

Config parse_config(const std::string& text, const std::string& path,
                    std::optional<std::uint64_t> seed) {
    ParsedConfig parsed = parse_config_text(text, path, seed);
    const YamlChecker yc(path);
    Config c{static_cast<const ConfigHeader&>(parsed), {}, {}};
    for (auto& g : parsed.groups) c.groups.push_back(bind_group(yc, std::move(g), c.groups));
    GroupColumns columns;
    for (const auto& g : c.groups) columns[g.name] = table_columns(g);
    for (auto& a : parsed.analyses) c.analyses.push_back(bind_analysis(yc, std::move(a), columns));
    return c;
}

Config load_config(const std::string& path, std::optional<std::uint64_t> seed) {
    return parse_config(read_config_file(path), path, seed);
}

}  // namespace compatbench
