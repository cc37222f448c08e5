#include "graph/task_graph.h"

#include <fnmatch.h>

#include <algorithm>
#include <set>

#include "common/hash.h"
#include "core/text_template.h"

namespace compatbench {

namespace {

std::size_t grid_size(const TaskGroup& g) {
    if (!g.listed.empty()) return g.listed.size();
    if (g.count >= 0) return static_cast<std::size_t>(g.count);
    std::size_t n = 1;
    for (const auto& [key, values] : g.grid) {
        n *= values.size();
        if (n > TaskGraph::kMaxTasks) return n;
    }
    return n;
}

// A task's id when its group gives no template: name/i, name/v1+v2, or the name alone.
std::string default_id(const TaskGroup& g, std::size_t k, const std::vector<const Scalar*>& point) {
    if (g.count >= 0) return g.name + "/" + std::to_string(k);
    if (g.grid.empty()) return g.name;
    std::string id = g.name + "/";
    for (std::size_t a = 0; a < point.size(); ++a) id += (a ? "+" : "") + point[a]->text;
    return id;
}

}  // namespace

// Named steps, in order: expand every group into tasks and table rows, link the
// dependencies, refuse cycles, and stage the groups.
TaskGraph TaskGraph::build(const Config& config, const std::vector<std::string>& exclude) {
    const std::set<std::string> skip =
        exclude.empty() ? std::set<std::string>{} : excluded_ids(config, build(config), exclude);
    TaskGraph graph;
    graph.excluded_ = exclude;
    graph.tasks_.reserve(count_tasks(config));
    for (std::size_t gi = 0; gi < config.groups.size(); ++gi) graph.add_group(config, gi, skip);
    graph.group_begin_.push_back(graph.tasks_.size());
    graph.index_ids(config);
    graph.check_file_stems(config);
    const auto group_inputs = graph.link_dependencies(config);
    graph.check_acyclic(config);
    graph.assign_stages(group_inputs);
    // The config as written is checked (the inner build above, or this one); a pool that an
    // --exclude leaves with one value is held to the bootstrap's reason (methods.md §5.2).
    if (exclude.empty()) graph.check_cluster_columns(config);
    return graph;
}

// The ids matching any pattern, with every task that depends on them, in the full graph.
std::set<std::string> TaskGraph::excluded_ids(const Config& config, const TaskGraph& full,
                                              const std::vector<std::string>& patterns) {
    std::vector<std::size_t> todo;
    for (const auto& p : patterns) {
        const std::size_t before = todo.size();
        for (std::size_t t = 0; t < full.tasks_.size(); ++t)
            if (fnmatch(p.c_str(), full.tasks_[t].id.c_str(), 0) == 0) todo.push_back(t);
        if (todo.size() == before)
            throw ConfigError(config.path, "--exclude", "'" + p + "' matches no task id");
    }
    std::set<std::string> ids;
    while (!todo.empty()) {
        const std::size_t t = todo.back();
        todo.pop_back();
        if (!ids.insert(full.tasks_[t].id).second) continue;
        for (std::size_t d : full.tasks_[t].dependents) todo.push_back(d);
    }
    return ids;
}

std::size_t TaskGraph::count_tasks(const Config& config) {
    std::size_t total = 0;
    for (const auto& g : config.groups) {
        const std::size_t n = grid_size(g);
        total += n;
        if (n > kMaxTasks || total > kMaxTasks) {
            throw ConfigError(
                config.path, g.mark, "tasks." + g.name,
                "more than " + std::to_string(kMaxTasks) + " tasks in the experiment");
        }
    }
    return total;
}

// The group's table columns, refused when two share a name.
std::vector<ColumnSpec> TaskGraph::group_columns(const Config& config, const TaskGroup& g) {
    std::vector<ColumnSpec> columns = table_columns(g);
    std::set<std::string> seen;
    for (const auto& c : columns) {
        if (!seen.insert(c.name).second) {
            throw ConfigError(config.path, g.mark, "tasks." + g.name,
                              "column '" + c.name +
                                  "' appears twice in the table (grid "
                                  "keys, outputs, task_id, seed and i must differ)");
        }
    }
    return columns;
}

// The group's `id:` template, if it has one.
std::optional<TextTemplate> TaskGraph::id_template(const Config& config, const TaskGroup& g) {
    std::vector<std::string> known;
    for (const auto& [key, values] : g.grid) known.push_back(key);
    if (g.count >= 0) known.push_back("i");
    if (g.id_template.empty()) return std::nullopt;
    std::optional<TextTemplate> tmpl;
    try {
        tmpl = TextTemplate::parse(g.id_template, known);
    } catch (const std::invalid_argument& e) {
        throw ConfigError(config.path, g.id_mark, "tasks." + g.name + ".id", e.what());
    }
    if (grid_size(g) > 1 && known.empty()) {
        throw ConfigError(config.path, g.id_mark, "tasks." + g.name + ".id",
                          "a fixed id cannot name more than one task");
    }
    return tmpl;
}

// Task k of group gi: its id and seed.
Task TaskGraph::make_task(const Config& config, std::size_t gi, std::size_t k,
                          const std::optional<TextTemplate>& id_template) {
    const TaskGroup& g = config.groups[gi];
    Task t;
    t.group = gi;
    t.row = k;
    t.k = k;
    if (!g.listed.empty()) {
        t.id = g.name + "/" + g.listed[k].suffix;
    } else {
        const auto point = TaskGraph::grid_point(g, k);
        if (id_template) {
            std::map<std::string, std::string> texts;
            if (g.count >= 0) texts["i"] = std::to_string(k);
            for (std::size_t a = 0; a < point.size(); ++a) texts[g.grid[a].first] = point[a]->text;
            t.id = id_template->render(texts, false);
        } else {
            t.id = default_id(g, k, point);
        }
    }
    t.seed = task_seed(config.seed, t.id);
    return t;
}

// Expands group gi into tasks and places its rows.
void TaskGraph::add_group(const Config& config, std::size_t gi, const std::set<std::string>& skip) {
    const TaskGroup& g = config.groups[gi];
    group_begin_.push_back(tasks_.size());
    std::vector<ColumnSpec> columns = group_columns(config, g);
    const std::optional<TextTemplate> tmpl = id_template(config, g);
    const std::size_t n = grid_size(g);
    std::size_t id_width = 1, rows = 0;
    for (std::size_t k = 0; k < n; ++k) {
        Task t = make_task(config, gi, k, tmpl);
        if (skip.count(t.id)) continue;
        t.row = rows++;
        id_width = std::max(id_width, t.id.size());
        tasks_.push_back(std::move(t));
    }
    columns[0].width = id_width;
    place_table(config, g, std::move(columns), rows);
}

// The index of ids (8 bytes a task), refusing an id made twice.
void TaskGraph::index_ids(const Config& config) {
    by_id_.resize(tasks_.size());
    for (std::size_t t = 0; t < tasks_.size(); ++t) by_id_[t] = t;
    std::stable_sort(by_id_.begin(), by_id_.end(),
                     [&](std::size_t a, std::size_t b) { return tasks_[a].id < tasks_[b].id; });
    for (std::size_t i = 1; i < by_id_.size(); ++i) {
        const Task &first = tasks_[by_id_[i - 1]], &again = tasks_[by_id_[i]];
        if (first.id != again.id) continue;
        const TaskGroup& g = config.groups[again.group];
        throw ConfigError(config.path, g.mark, "tasks." + g.name,
                          "duplicate task id '" + again.id + "' (also made by group '" +
                              config.groups[first.group].name +
                              "'); give an 'id' template that tells the tasks apart");
    }
}

// Two ids whose file stems (core/text_template.h) agree would share a workdir, result file
// and log: refused. The hashes are compared first, 8 bytes a task.
void TaskGraph::check_file_stems(const Config& config) const {
    std::vector<std::pair<std::uint64_t, std::size_t>> hashes;
    hashes.reserve(tasks_.size());
    for (std::size_t t = 0; t < tasks_.size(); ++t) hashes.emplace_back(fnv1a64(tasks_[t].id), t);
    std::sort(hashes.begin(), hashes.end());
    for (std::size_t i = 1; i < hashes.size(); ++i) {
        if (hashes[i].first != hashes[i - 1].first) continue;
        const Task &a = tasks_[hashes[i - 1].second], &b = tasks_[hashes[i].second];
        if (task_file_stem(a.id) != task_file_stem(b.id)) continue;
        const TaskGroup& g = config.groups[b.group];
        throw ConfigError(config.path, g.mark, "tasks." + g.name,
                          "task ids '" + a.id + "' and '" + b.id +
                              "' would share one workdir, result file and log (their file "
                              "names agree); give an 'id' template that tells them apart");
    }
}

// The group's rows go into its own table, or continue a table shared with earlier groups
// (whose columns must agree).
void TaskGraph::place_table(const Config& config, const TaskGroup& g,
                            std::vector<ColumnSpec> columns, std::size_t n) {
    auto shared = std::find_if(tables_.begin(), tables_.end(),
                               [&](const TableLayout& t) { return t.path == g.table; });
    if (shared == tables_.end()) {
        group_table_.push_back(tables_.size());
        tables_.push_back({g.table, std::move(columns), n});
        return;
    }
    const std::size_t first_row = shared->rows;
    bool same = shared->columns.size() == columns.size();
    for (std::size_t c = 0; same && c < columns.size(); ++c) {
        same = shared->columns[c].name == columns[c].name &&
               shared->columns[c].type == columns[c].type;
    }
    if (!same) {
        auto names = [](const std::vector<ColumnSpec>& cs) {
            std::string out;
            for (const auto& c : cs)
                out += (out.empty() ? "" : ", ") + c.name + ":" + column_type_name(c.type);
            return out;
        };
        throw ConfigError(config.path, g.mark, "tasks." + g.name + ".table",
                          "table '" + g.table +
                              "' is shared with an earlier group whose columns differ (" +
                              names(shared->columns) + " vs " + names(columns) + ")");
    }
    for (std::size_t c = 0; c < columns.size(); ++c)
        shared->columns[c].width = std::max(shared->columns[c].width, columns[c].width);
    shared->rows += n;
    group_table_.push_back(static_cast<std::size_t>(shared - tables_.begin()));
    for (std::size_t t = group_begin_.back(); t < tasks_.size(); ++t) tasks_[t].row += first_row;
}

// One `after:` entry of group gi: a group name (every task of it) or a task-id template.
void TaskGraph::link_after(const Config& config, std::size_t gi, const std::string& entry,
                           const YAML::Mark& mark, const std::map<std::string, std::size_t>& groups,
                           std::set<std::size_t>& inputs) {
    const TaskGroup& g = config.groups[gi];
    const std::string key = "tasks." + g.name + ".after";
    auto whole = groups.find(entry);
    if (whole != groups.end() && entry.find('{') == std::string::npos) {
        inputs.insert(whole->second);
        for (std::size_t t = group_begin(gi); t < group_end(gi); ++t)
            for (std::size_t d = group_begin(whole->second); d < group_end(whole->second); ++d)
                tasks_[t].deps.push_back(d);
        return;
    }
    std::vector<std::string> known;
    for (const auto& [k, v] : g.grid) known.push_back(k);
    if (g.count >= 0) known.push_back("i");
    TextTemplate tmpl;
    try {
        tmpl = TextTemplate::parse(entry, known);
    } catch (const std::invalid_argument& e) {
        throw ConfigError(
            config.path, mark, key,
            "'" + entry + "' is neither a task group nor a task-id template: " + e.what());
    }
    for (std::size_t t = group_begin(gi); t < group_end(gi); ++t) {
        std::map<std::string, std::string> texts;
        for (const auto& [k, v] : params(config, t)) texts[k] = v.text;
        const std::string dep_id = tmpl.render(texts, false);
        const auto found = find(dep_id);
        if (!found && dep_id == entry)  // a plain name, not a template
            throw ConfigError(config.path, mark, key,
                              "no task group or task is named '" + entry + "'");
        if (!found) {
            throw ConfigError(config.path, mark, key,
                              "'" + entry + "' gives '" + dep_id + "' for task '" + tasks_[t].id +
                                  "', which is not a task id");
        }
        tasks_[t].deps.push_back(*found);
        inputs.insert(tasks_[*found].group);
    }
}

// Every task's dependencies (from `after:` and from what listing kinds asked for), sorted
// and unique, and their reverse; returns each group's input groups.
std::vector<std::set<std::size_t>> TaskGraph::link_dependencies(const Config& config) {
    std::map<std::string, std::size_t> group_index;
    for (std::size_t gi = 0; gi < config.groups.size(); ++gi)
        group_index[config.groups[gi].name] = gi;
    std::vector<std::set<std::size_t>> group_inputs(config.groups.size());
    for (std::size_t gi = 0; gi < config.groups.size(); ++gi)
        for (const auto& [entry, mark] : config.groups[gi].after)
            link_after(config, gi, entry, mark, group_index, group_inputs[gi]);
    for (std::size_t gi = 0; gi < config.groups.size(); ++gi) {
        const TaskGroup& g = config.groups[gi];
        if (g.listed.empty()) continue;
        for (std::size_t t = group_begin(gi); t < group_end(gi); ++t) {
            for (const auto& dep : g.listed[tasks_[t].k].after) {
                const auto found = find(dep);
                if (!found) {
                    throw ConfigError(
                        config.path, g.mark, "tasks." + g.name,
                        "task '" + tasks_[t].id + "' needs '" + dep + "', which is not a task id");
                }
                tasks_[t].deps.push_back(*found);
                group_inputs[gi].insert(tasks_[*found].group);
            }
        }
    }
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
        auto& deps = tasks_[t].deps;
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        for (std::size_t d : deps) tasks_[d].dependents.push_back(t);
    }
    return group_inputs;
}

// Cycles (Kahn): whatever is never released lies on or behind a cycle; the error names one.
void TaskGraph::check_acyclic(const Config& config) const {
    std::vector<std::size_t> pending(tasks_.size());
    std::vector<std::size_t> ready;
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
        pending[t] = tasks_[t].deps.size();
        if (pending[t] == 0) ready.push_back(t);
    }
    std::size_t released = 0;
    while (!ready.empty()) {
        const std::size_t t = ready.back();
        ready.pop_back();
        ++released;
        for (std::size_t d : tasks_[t].dependents)
            if (--pending[d] == 0) ready.push_back(d);
    }
    if (released == tasks_.size()) return;
    // Walk unreleased dependencies until a task repeats: that is a cycle.
    std::size_t t = 0;
    while (pending[t] == 0) ++t;
    std::vector<std::size_t> walk;
    std::vector<int> seen_at(tasks_.size(), -1);
    while (seen_at[t] < 0) {
        seen_at[t] = static_cast<int>(walk.size());
        walk.push_back(t);
        for (std::size_t d : tasks_[t].deps) {
            if (pending[d] > 0) {
                t = d;
                break;
            }
        }
    }
    std::string cycle;
    for (std::size_t i = static_cast<std::size_t>(seen_at[t]); i < walk.size(); ++i)
        cycle = tasks_[walk[i]].id + (cycle.empty() ? "" : " -> ") + cycle;
    cycle = tasks_[t].id + " -> " + cycle;
    const TaskGroup& g = config.groups[tasks_[t].group];
    throw ConfigError(config.path, g.mark, "tasks." + g.name + ".after",
                      "dependency cycle: " + cycle);
}

// Stages of groups (their input graph is acyclic now that tasks are).
void TaskGraph::assign_stages(const std::vector<std::set<std::size_t>>& group_inputs) {
    group_stage_.assign(group_inputs.size(), -1);
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t gi = 0; gi < group_inputs.size(); ++gi) {
            int stage = 0;
            bool known = true;
            for (std::size_t in : group_inputs[gi]) {
                if (in == gi) continue;
                if (group_stage_[in] < 0) known = false;
                stage = std::max(stage, group_stage_[in] + 1);
            }
            if (known && group_stage_[gi] != stage) {
                group_stage_[gi] = stage;
                changed = true;
            }
        }
    }
}

std::optional<std::size_t> TaskGraph::find(const std::string& id) const {
    const auto it =
        std::lower_bound(by_id_.begin(), by_id_.end(), id,
                         [&](std::size_t t, const std::string& x) { return tasks_[t].id < x; });
    if (it == by_id_.end() || tasks_[*it].id != id) return std::nullopt;
    return *it;
}

CriticalPath TaskGraph::critical_path(const Config& config) const {
    // Longest cost-weighted path; tasks in topological order via a Kahn pass.
    const std::size_t n = tasks_.size();
    std::vector<double> finish(n, 0.0);
    std::vector<std::size_t> via(n, n), pending(n), order;
    order.reserve(n);
    for (std::size_t t = 0; t < n; ++t) {
        pending[t] = tasks_[t].deps.size();
        if (pending[t] == 0) order.push_back(t);
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
        const std::size_t t = order[i];
        finish[t] += config.groups[tasks_[t].group].cost;
        for (std::size_t d : tasks_[t].dependents) {
            if (finish[t] > finish[d]) {
                finish[d] = finish[t];
                via[d] = t;
            }
            if (--pending[d] == 0) order.push_back(d);
        }
    }
    CriticalPath path;
    if (n == 0) return path;
    std::size_t end =
        static_cast<std::size_t>(std::max_element(finish.begin(), finish.end()) - finish.begin());
    path.cost = finish[end];
    for (std::size_t t = end; t != n; t = via[t]) path.tasks.push_back(t);
    std::reverse(path.tasks.begin(), path.tasks.end());
    return path;
}

}  // namespace compatbench
