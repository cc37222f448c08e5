#include "config/config.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/hash.h"

namespace compatbench {

namespace {

const std::vector<KeyRule> kTopRules = {
    {.name = "experiment", .type = KeyType::map, .required = true},
    {.name = "runner", .type = KeyType::map},
    {.name = "tasks", .type = KeyType::list, .required = true},
    {.name = "analyses", .type = KeyType::list},
};

const std::vector<KeyRule> kExperimentRules = {
    {.name = "name", .type = KeyType::string, .required = true},
    {.name = "seed", .type = KeyType::integer, .required = true, .min = 0, .max = 9.2e18},
    {.name = "description", .type = KeyType::string},
};

const std::vector<KeyRule> kRunnerRules = {
    {.name = "retries", .type = KeyType::integer, .min = 0, .max = 100},
    {.name = "timeout", .type = KeyType::real, .min = 0, .max = 1e7},
    {.name = "on_signal", .type = KeyType::string, .choices = {"finish", "abandon"}},
    {.name = "progress_interval", .type = KeyType::real, .min = 0.01, .max = 86400},
    {.name = "fsync_interval", .type = KeyType::real, .min = 0, .max = 60},
    {.name = "row_flush_interval", .type = KeyType::real, .min = 0, .max = 3600},
    {.name = "log_limit_mb", .type = KeyType::real, .min = 0.001, .max = 1e6},
    {.name = "min_free_mb", .type = KeyType::real, .min = 0, .max = 1e9},
    {.name = "stall_timeout", .type = KeyType::real, .min = 0, .max = 1e7},
    {.name = "devices", .type = KeyType::any},
    {.name = "threads", .type = KeyType::integer, .min = 0, .max = 4096},
    {.name = "cpu_tasks_on_gpu_ranks", .type = KeyType::boolean},
    {.name = "servers", .type = KeyType::string, .choices = {"keep", "per_task"}},
    {.name = "cost_cache", .type = KeyType::string},
};

// Keys every `tasks:` entry may have, whatever its kind.
const std::vector<KeyRule> kGroupRules = {
    {.name = "name", .type = KeyType::string, .required = true},
    {.name = "kind", .type = KeyType::string, .required = true},
    {.name = "table", .type = KeyType::string},
    {.name = "count", .type = KeyType::integer, .min = 0, .max = 1e8},
    {.name = "grid", .type = KeyType::map},
    {.name = "id", .type = KeyType::string},
    {.name = "after", .type = KeyType::scalar_or_list},
    {.name = "retries", .type = KeyType::integer, .min = 0, .max = 100},
    {.name = "timeout", .type = KeyType::real, .min = 0, .max = 1e7},
    {.name = "cost", .type = KeyType::real, .min = 0, .max = 1e12},
    {.name = "print", .type = KeyType::boolean},
    {.name = "gpus", .type = KeyType::integer, .min = 0, .max = 1024},
};

const std::vector<KeyRule> kAnalysisRules = {
    {.name = "name", .type = KeyType::string, .required = true},
    {.name = "kind", .type = KeyType::string, .required = true},
    {.name = "study", .type = KeyType::string, .required = true},
    {.name = "input", .type = KeyType::string, .required = true},
};

const std::regex kNamePattern("[A-Za-z0-9_][A-Za-z0-9_.\\-]*");
const std::regex kTablePattern("[A-Za-z0-9_][A-Za-z0-9_.\\-]*(/[A-Za-z0-9_][A-Za-z0-9_.\\-]*)*");

// Top-level names the runner owns: meta, tasks, and any <study>/analysis subtree.
bool is_reserved_table(const std::string& path) {
    const std::string top = path.substr(0, path.find('/'));
    if (top == "meta" || top == "tasks") return true;
    const std::string needle = "/analysis";
    const auto at = path.find(needle);
    return at != std::string::npos &&
           (at + needle.size() == path.size() || path[at + needle.size()] == '/');
}

// `grid:` values: a list of scalars, or {range: [start, stop]} / {range: [start, stop, step]}.
std::vector<Scalar> grid_values(const YamlChecker& yc, const YAML::Node& node,
                                const std::string& path) {
    std::vector<Scalar> values;
    if (node.IsSequence()) {
        if (node.size() == 0) yc.fail(node, path, "a grid axis needs at least one value");
        for (std::size_t i = 0; i < node.size(); ++i) {
            if (!node[i].IsScalar()) yc.fail(node[i], index_path(path, i), "expected a scalar");
            values.push_back(Scalar::parse(node[i].Scalar()));
        }
        return values;
    }
    if (node.IsMap() && node["range"] && node.size() == 1) {
        const YAML::Node r = node["range"];
        const std::string rpath = join_path(path, "range");
        if (!r.IsSequence() || r.size() < 2 || r.size() > 3) {
            yc.fail(r, rpath, "expected [start, stop] or [start, stop, step]");
        }
        const std::int64_t start = yc.as_int(r[0], index_path(rpath, 0));
        const std::int64_t stop = yc.as_int(r[1], index_path(rpath, 1));
        const std::int64_t step = r.size() == 3 ? yc.as_int(r[2], index_path(rpath, 2)) : 1;
        if (step <= 0) yc.fail(r, rpath, "step must be positive");
        if (stop <= start) yc.fail(r, rpath, "empty range: stop must exceed start");
        if ((stop - start) / step > 100000000) yc.fail(r, rpath, "range longer than 1e8 values");
        for (std::int64_t v = start; v < stop; v += step)
            values.push_back(Scalar::parse(std::to_string(v)));
        return values;
    }
    yc.fail(node, path, "expected a list of values or {range: [start, stop(, step)]}");
}

// Whether two grid values are one: equal numbers, or equal texts.
bool same_value(const Scalar& a, const Scalar& b) {
    if (a.is_number() && b.is_number()) return a.as_double() == b.as_double();
    return !a.is_number() && !b.is_number() && a.text == b.text;
}

// The `grid:` of a group: each axis's values, in order.
std::vector<std::pair<std::string, std::vector<Scalar>>> parse_grid(const YamlChecker& yc,
                                                                    const YAML::Node& grid,
                                                                    const std::string& gpath) {
    std::vector<std::pair<std::string, std::vector<Scalar>>> out;
    for (const auto& axis : grid) {
        const std::string key = axis.first.as<std::string>();
        const std::string apath = join_path(join_path(gpath, "grid"), key);
        if (!std::regex_match(key, kNamePattern))
            yc.fail(axis.first, apath, "not a valid parameter name");
        out.emplace_back(key, grid_values(yc, axis.second, apath));
        const auto& values = out.back().second;
        for (std::size_t i = 0; i < values.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (same_value(values[i], values[j]))  // 1.0, 1.00 and 1 are one value
                    yc.fail(axis.second, apath,
                            "'" + values[i].text + "' is the value '" + values[j].text +
                                "' again: each grid value makes tasks of its own");
    }
    return out;
}

// `after:` a group name or a list of them, with where each was written.
std::vector<std::pair<std::string, YAML::Mark>> parse_after(const YamlChecker& yc,
                                                            const YAML::Node& after,
                                                            const std::string& gpath) {
    std::vector<std::pair<std::string, YAML::Mark>> out;
    const std::string apath = join_path(gpath, "after");
    if (after.IsScalar()) {
        out.emplace_back(after.Scalar(), after.Mark());
    } else {
        for (std::size_t i = 0; i < after.size(); ++i)
            out.emplace_back(yc.as_string(after[i], index_path(apath, i)), after[i].Mark());
    }
    return out;
}

// A `tasks:` entry's keys common to every kind. The kind's own keys are checked when the
// kind is bound.
GroupSpec parse_group(const YamlChecker& yc, const YAML::Node& node, const std::string& path,
                      const RunnerSettings& runner) {
    if (!node.IsMap()) yc.fail(node, path, "expected a map with at least 'name' and 'kind'");
    GroupSpec g;
    g.node = node;
    g.mark = node.Mark();
    for (const char* key : {"name", "kind"}) {
        if (!node[key])
            yc.fail(node, join_path(path, key), std::string("missing required key '") + key + "'");
    }
    g.name = yc.as_string(node["name"], join_path(path, "name"));
    if (!std::regex_match(g.name, kNamePattern)) {
        yc.fail(node["name"], join_path(path, "name"),
                "'" + g.name + "' is not a valid name (letters, digits, _ . -)");
    }
    const std::string gpath = "tasks." + g.name;
    g.kind_name = yc.as_string(node["kind"], join_path(gpath, "kind"));
    yc.check_known_keys(node, gpath, kGroupRules);
    g.table = node["table"] ? yc.as_string(node["table"], join_path(gpath, "table")) : g.name;
    if (!std::regex_match(g.table, kTablePattern)) {
        yc.fail(node["table"] ? node["table"] : node["name"], join_path(gpath, "table"),
                "'" + g.table +
                    "' is not a usable table path: ASCII letters, digits, _ . - in names "
                    "separated by /");
    }
    if (is_reserved_table(g.table)) {
        yc.fail(node["table"] ? node["table"] : node["name"], join_path(gpath, "table"),
                "'" + g.table + "' is a table the runner writes (meta, tasks, <study>/analysis)");
    }
    if (node["count"] && node["grid"]) {
        yc.fail(node["grid"], join_path(gpath, "grid"), "give either 'count' or 'grid', not both");
    }
    if (node["count"]) g.count = yc.as_int(node["count"], join_path(gpath, "count"));
    if (node["grid"]) g.grid = parse_grid(yc, node["grid"], gpath);
    if (node["id"]) {
        g.id_template = yc.as_string(node["id"], join_path(gpath, "id"));
        g.id_mark = node["id"].Mark();
    }
    if (node["after"]) g.after = parse_after(yc, node["after"], gpath);
    g.retries = node["retries"] ? static_cast<int>(yc.as_int(node["retries"], gpath + ".retries"))
                                : runner.retries;
    g.timeout = node["timeout"] ? yc.as_real(node["timeout"], gpath + ".timeout") : runner.timeout;
    g.log_limit = static_cast<std::uint64_t>(runner.log_limit_mb * 1e6);
    g.cost_given = static_cast<bool>(node["cost"]);
    g.cost = g.cost_given ? yc.as_real(node["cost"], gpath + ".cost") : 1.0;
    g.print = node["print"] ? yc.as_bool(node["print"], gpath + ".print") : false;
    g.server_per_task = runner.server_per_task;
    g.entry = yaml_to_json(node);
    g.gpus = node["gpus"] ? static_cast<int>(yc.as_int(node["gpus"], gpath + ".gpus")) : 0;
    return g;
}

// An `analyses:` entry's common keys; its input must name a task group. The kind's own keys
// and its input's columns are checked when the kind is bound.
AnalysisSpec parse_analysis(const YamlChecker& yc, const YAML::Node& node, const std::string& path,
                            const std::vector<GroupSpec>& groups) {
    if (!node.IsMap()) yc.fail(node, path, "expected a map with name, kind, study, input");
    AnalysisSpec a;
    a.node = node;
    a.mark = node.Mark();
    for (const char* key : {"name", "kind"}) {
        if (!node[key])
            yc.fail(node, join_path(path, key), std::string("missing required key '") + key + "'");
    }
    a.name = yc.as_string(node["name"], join_path(path, "name"));
    const std::string apath = "analyses." + a.name;
    a.kind_name = yc.as_string(node["kind"], join_path(apath, "kind"));
    yc.check_known_keys(node, apath, kAnalysisRules);
    a.study = yc.as_string(node["study"], join_path(apath, "study"));
    if (!std::regex_match(a.study, kNamePattern) || a.study == "meta" || a.study == "tasks") {
        yc.fail(node["study"], join_path(apath, "study"),
                "'" + a.study + "' is not a usable study name");
    }
    a.input = yc.as_string(node["input"], join_path(apath, "input"));
    if (std::none_of(groups.begin(), groups.end(),
                     [&](const GroupSpec& g) { return g.name == a.input; }))
        yc.fail(node["input"], join_path(apath, "input"), "no task group named '" + a.input + "'");
    return a;
}

}  // namespace

const std::vector<KeyRule>& group_key_rules() { return kGroupRules; }

std::vector<std::string> parse_device_text(const std::string& text) {
    static const std::regex name("[A-Za-z0-9_.:/\\-]+");
    std::vector<std::string> devices;
    if (text.find_first_not_of(" \t") == std::string::npos) return devices;  // none
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!std::regex_match(item, name))
            throw std::invalid_argument("'" + item +
                                        "' is not a device name (an index such as 0, or a UUID "
                                        "such as GPU-..., as CUDA_VISIBLE_DEVICES takes them)");
        if (std::find(devices.begin(), devices.end(), item) != devices.end())
            throw std::invalid_argument("device '" + item + "' is named twice");
        devices.push_back(item);
    }
    return devices;
}

std::vector<std::string> parse_device_list(const YamlChecker& yc, const YAML::Node& node,
                                           const std::string& path) {
    std::string text;
    if (node.IsScalar()) {
        text = node.Scalar();
    } else if (node.IsSequence()) {
        for (std::size_t i = 0; i < node.size(); ++i) {
            if (i > 0) text += ',';
            text += yc.as_string(node[i], index_path(path, i));
        }
    } else if (!node.IsNull()) {
        yc.fail(node, path, "expected a device list: \"0,1\", [0, 1], or a map of host: list");
    }
    try {
        return parse_device_text(text);
    } catch (const std::invalid_argument& e) {
        yc.fail(node, path, e.what());
    }
}

const std::vector<KeyRule>& analysis_key_rules() { return kAnalysisRules; }

nlohmann::json yaml_to_json(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map: {
            nlohmann::json j = nlohmann::json::object();
            for (const auto& e : node) j[e.first.as<std::string>()] = yaml_to_json(e.second);
            return j;
        }
        case YAML::NodeType::Sequence: {
            nlohmann::json j = nlohmann::json::array();
            for (const auto& e : node) j.push_back(yaml_to_json(e));
            return j;
        }
        case YAML::NodeType::Scalar:
            return node.Scalar();
        default:
            return nullptr;
    }
}

// `runner.devices`: one list for every node, or a map of host name (or "*") to a list.
std::vector<std::pair<std::string, std::vector<std::string>>> parse_node_devices(
    const YamlChecker& yc, const YAML::Node& node) {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    if (!node.IsMap()) {
        out.emplace_back("*", parse_device_list(yc, node, "runner.devices"));
        return out;
    }
    for (const auto& e : node) {
        const std::string host = e.first.as<std::string>();
        out.emplace_back(host, parse_device_list(yc, e.second, "runner.devices." + host));
    }
    return out;
}

// `runner:`: scheduling only, not part of the config hash.
RunnerSettings parse_runner(const YamlChecker& yc, const YAML::Node& r) {
    yc.check_map(r, "runner", kRunnerRules);
    RunnerSettings runner;
    if (r["retries"]) runner.retries = static_cast<int>(yc.as_int(r["retries"], "runner.retries"));
    if (r["timeout"]) runner.timeout = yc.as_real(r["timeout"], "runner.timeout");
    if (r["log_limit_mb"])
        runner.log_limit_mb = yc.as_real(r["log_limit_mb"], "runner.log_limit_mb");
    if (r["min_free_mb"]) runner.min_free_mb = yc.as_real(r["min_free_mb"], "runner.min_free_mb");
    if (r["stall_timeout"])
        runner.stall_timeout = yc.as_real(r["stall_timeout"], "runner.stall_timeout");
    if (r["on_signal"]) {
        runner.on_signal =
            r["on_signal"].Scalar() == "abandon" ? SignalPolicy::abandon : SignalPolicy::finish;
    }
    if (r["progress_interval"])
        runner.progress_interval = yc.as_real(r["progress_interval"], "runner.progress_interval");
    if (r["fsync_interval"])
        runner.fsync_interval = yc.as_real(r["fsync_interval"], "runner.fsync_interval");
    if (r["row_flush_interval"])
        runner.row_flush_interval =
            yc.as_real(r["row_flush_interval"], "runner.row_flush_interval");
    if (r["devices"]) runner.devices = parse_node_devices(yc, r["devices"]);
    if (r["threads"]) runner.threads = static_cast<int>(yc.as_int(r["threads"], "runner.threads"));
    if (r["servers"]) runner.server_per_task = r["servers"].Scalar() == "per_task";
    if (r["cost_cache"]) runner.cost_cache = yc.as_string(r["cost_cache"], "runner.cost_cache");
    if (r["cpu_tasks_on_gpu_ranks"])
        runner.cpu_tasks_on_gpu_ranks =
            yc.as_bool(r["cpu_tasks_on_gpu_ranks"], "runner.cpu_tasks_on_gpu_ranks");
    return runner;
}

// The bytes of a file a group names (its `manifest:`) are part of the experiment: a manifest
// edited between a run and `--resume` changes the hash (docs/cli.md). A file that cannot be
// read is left to the group's own check, which names it.
namespace {
void cover_named_files(nlohmann::json& identity, const std::vector<GroupSpec>& groups) {
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const YAML::Node m = groups[i].node["manifest"];
        if (!m || !m.IsScalar()) continue;
        std::filesystem::path file(m.Scalar());
        if (file.is_relative()) file = groups[i].config_dir / file;
        std::ifstream in(file, std::ios::binary);
        if (!in) continue;
        std::ostringstream bytes;
        bytes << in.rdbuf();
        char hex[17];
        identity["tasks"][i]["manifest_bytes"] = std::string(hex64(fnv1a64(bytes.str()), hex));
    }
}
}  // namespace

ParsedConfig parse_config_text(const std::string& text, const std::string& path,
                               std::optional<std::uint64_t> seed) {
    YamlChecker yc(path);
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
        throw ConfigError(path, e.mark, "(yaml)", e.msg);
    }
    if (!root || root.IsNull()) throw ConfigError(path, "(top level)", "the config is empty");
    refuse_repeated_keys(root, path);
    yc.check_map(root, "", kTopRules);
    if (seed && root["experiment"] && root["experiment"].IsMap())
        root["experiment"]["seed"] = std::to_string(*seed);

    ParsedConfig c;
    c.path = path;
    c.text = text;
    const YAML::Node exp = root["experiment"];
    yc.check_map(exp, "experiment", kExperimentRules);
    c.name = yc.as_string(exp["name"], "experiment.name");
    if (!std::regex_match(c.name, kNamePattern)) {
        yc.fail(exp["name"], "experiment.name",
                "'" + c.name + "' is not a valid name (letters, digits, _ . -)");
    }
    c.seed = static_cast<std::uint64_t>(yc.as_int(exp["seed"], "experiment.seed"));

    if (const YAML::Node r = root["runner"]) c.runner = parse_runner(yc, r);

    const YAML::Node tasks = root["tasks"];
    if (tasks.size() == 0) yc.fail(tasks, "tasks", "the experiment has no tasks");
    std::set<std::string> names;
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    const std::filesystem::path config_dir =
        dir.empty() ? std::filesystem::current_path() : std::filesystem::absolute(dir);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        GroupSpec g = parse_group(yc, tasks[i], index_path("tasks", i), c.runner);
        g.config_dir = config_dir;
        if (!names.insert(g.name).second) {
            yc.fail(tasks[i]["name"], "tasks." + g.name + ".name",
                    "duplicate task group name '" + g.name + "'");
        }
        c.groups.push_back(std::move(g));
    }
    if (const YAML::Node analyses = root["analyses"]) {
        std::set<std::string> anames;
        for (std::size_t i = 0; i < analyses.size(); ++i) {
            AnalysisSpec a = parse_analysis(yc, analyses[i], index_path("analyses", i), c.groups);
            if (!anames.insert(a.name).second) {
                yc.fail(analyses[i]["name"], "analyses." + a.name + ".name",
                        "duplicate analysis name '" + a.name + "'");
            }
            c.analyses.push_back(std::move(a));
        }
    }
    // Identity of the experiment: everything but the scheduling knobs (`runner:` and the
    // groups' cost hints and device counts) and the analyses, as canonical JSON. The
    // analyses are computed afresh from the recorded tasks at every end of a run, so
    // `--resume` with changed analyses is a re-analysis of the same tasks (docs/cli.md).
    nlohmann::json identity = yaml_to_json(root);
    identity.erase("runner");
    identity.erase("analyses");
    for (auto& group : identity["tasks"])
        if (group.is_object()) {
            group.erase("cost");
            group.erase("gpus");
        }
    cover_named_files(identity, c.groups);
    char hex[17];
    c.hash = std::string(hex64(fnv1a64(identity.dump()), hex));
    return c;
}

std::string read_config_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path, "(file)", "cannot open the config file for reading");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace compatbench
