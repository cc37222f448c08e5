// `compatbench validate` and `compatbench plan`: read-only looks at a config.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "analyses/analysis_kind.h"
#include "app/verbs.h"
#include "exec/cost_model.h"
#include "exec/placement.h"
#include "exec/signals.h"
#include "exec/simulate.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"
#include "kind/task_kind.h"
#include "store/h5_read.h"

namespace compatbench {

namespace {
// Loads and expands a config; prints the error and returns false when it is invalid.
bool load(const std::string& path, Config& config, TaskGraph& graph) {
    try {
        config = load_config(path);
        graph = TaskGraph::build(config);
        return true;
    } catch (const ConfigError& e) {
        std::cerr << "compatbench: " << e.what() << "\n";
        return false;
    }
}
// Task durations: measured ones from `costs` (done tasks of /tasks, matched by id), else
// what the cost model (exec/cost_model.h) expects of the task's group: the group's mean
// there, or its cost hint scaled to the measured groups; without `costs`, the cost hints
// as seconds. Also the fixed part of the measured run's wall time (start-up, analyses,
// file close) to add to predictions.
struct Durations {
    std::vector<double> seconds;
    std::size_t measured = 0, estimated = 0;
    double fixed = 0.0;
    RankDevices cost_ranks;  // the measured run's ranks and the devices each held
    double cost_wall = 0.0;
};

// The ranks of the measured run and the devices each held: its /meta/placement (CPU ranks for
// a file written before placement was recorded).
RankDevices measured_ranks(const h5::ResultsReader& r, const std::string& path) {
    const int ranks = static_cast<int>(r.numbers("/meta/ranks").at(0));
    if (!r.exists("/meta/placement")) return cpu_ranks(ranks);
    RankDevices held;
    try {
        held = held_devices(r.strings("/meta/placement").at(0));
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(path + ": /meta/placement: " + e.what());
    }
    if (held.size() != static_cast<std::size_t>(ranks))
        throw std::runtime_error(path + ": /meta/placement lists " + std::to_string(held.size()) +
                                 " ranks, /meta/ranks says " + std::to_string(ranks));
    return held;
}

Durations durations(const Config& config, const TaskGraph& graph, const PlanOptions& o) {
    Durations d;
    const auto& tasks = graph.tasks();
    CostModel model(config);
    if (o.costs.empty()) {
        d.seconds = model.expected_durations(graph);
        d.estimated = tasks.size();
        return d;
    }
    const h5::ResultsReader r(o.costs);
    for (const char* need : {"/tasks/id", "/tasks/duration", "/tasks/status"})
        if (!r.exists(need))
            throw std::runtime_error(o.costs + ": no " + need + " (a results file?)");
    const auto ids = r.strings("/tasks/id");
    const auto secs = r.numbers("/tasks/duration");
    const auto status = r.strings("/tasks/status");
    std::map<std::string, double> by_id;
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (status[i] == "done" && std::isfinite(secs[i])) by_id[ids[i]] = secs[i];
    d.seconds.assign(tasks.size(), -1.0);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        const auto it = by_id.find(tasks[i].id);
        if (it == by_id.end()) continue;
        d.seconds[i] = it->second;
        model.record(tasks[i].group, it->second);
        ++d.measured;
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        if (d.seconds[i] >= 0.0) continue;
        d.seconds[i] = model.expected(tasks[i].group);
        ++d.estimated;
    }
    if (r.exists("/meta/start_time") && r.exists("/meta/end_time") && r.exists("/meta/ranks")) {
        d.cost_wall = r.numbers("/meta/end_time").at(0) - r.numbers("/meta/start_time").at(0);
        d.cost_ranks = measured_ranks(r, o.costs);
    }
    return d;
}

// The ranks of a simulated run of `n` ranks (exec/placement.h simulated_ranks), or why the
// config's tasks cannot all run on them.
RankDevices plan_ranks(const Config& config, const TaskGraph& graph, const PlanOptions& o,
                       const std::vector<std::string>& devices, int n, std::string& problem) {
    const auto ranks = simulated_ranks(n, o.ranks_per_node, devices);
    problem = placement_problem(config, graph, ranks);
    if (!problem.empty() && devices.empty())
        problem += "; --devices gives the simulated nodes their devices";
    return held_devices(ranks);
}

// The fixed part of the measured run's wall time (start-up, analyses, closing): its wall time
// less its dispatch simulated on its own ranks.
double fixed_seconds(const Config& config, const TaskGraph& graph, const PlanOptions& o,
                     const Durations& d) {
    if (d.cost_ranks.empty() || d.measured == 0) return 0.0;
    const Simulation ref = simulate_dispatch(graph, config, d.seconds, d.cost_ranks, o.overhead);
    if (!std::isfinite(ref.makespan)) {
        std::printf(
            "the measured run's %zu rank(s), with the devices they held, cannot run this "
            "config's tasks: no start-up time is added to the predictions\n",
            d.cost_ranks.size());
        return 0.0;
    }
    const double fixed = std::max(0.0, d.cost_wall - ref.makespan);
    std::printf(
        "the measured run: %.2f s wall on %zu rank(s), its dispatch simulated: %.2f s; "
        "%.2f s of start-up, analyses and closing added to each prediction\n",
        d.cost_wall, d.cost_ranks.size(), ref.makespan, fixed);
    return fixed;
}

// One row per rank count; false when some rank count cannot run the config's tasks.
bool print_rank_counts(const Config& config, const TaskGraph& graph, const PlanOptions& o,
                       const std::vector<std::string>& devices, const Durations& d, double fixed) {
    std::string problem;
    const RankDevices one_rank = plan_ranks(config, graph, o, devices, 1, problem);
    const Simulation one = problem.empty()
                               ? simulate_dispatch(graph, config, d.seconds, one_rank, o.overhead)
                               : Simulation{};
    std::printf("\n%8s  %12s  %12s  %9s  %10s  %s\n", "ranks", "makespan", "predicted", "speedup",
                "efficiency", "bound");
    bool all = true;
    for (int n : o.ranks) {
        const RankDevices ranks = plan_ranks(config, graph, o, devices, n, problem);
        if (!problem.empty()) {
            std::printf("%8d  cannot run: %s\n", n, problem.c_str());
            all = false;
            continue;
        }
        const Simulation s =
            n == 1 ? one : simulate_dispatch(graph, config, d.seconds, ranks, o.overhead);
        const char* bound = s.critical_path >= s.work / n ? "critical path" : "total work / ranks";
        if (one.ranks == 0) {  // one rank cannot run it: no speedup to give
            std::printf("%8d  %10.2f s  %10.2f s  %9s  %10s  %s\n", n, s.makespan,
                        s.makespan + fixed, "-", "-", bound);
            continue;
        }
        const double speedup = (one.makespan + fixed) / (s.makespan + fixed);
        std::printf("%8d  %10.2f s  %10.2f s  %9.2f  %9.1f%%  %s\n", n, s.makespan,
                    s.makespan + fixed, speedup, 100.0 * speedup / n, bound);
    }
    return all;
}

// The critical path by duration, summed per group: what limits scaling at many ranks.
void print_duration_path(const Config& config, const TaskGraph& graph, const Durations& d) {
    const auto path = duration_critical_path(graph, d.seconds);
    std::map<std::size_t, std::pair<std::size_t, double>> per_group;
    double total = 0.0, work = 0.0;
    for (double s : d.seconds) work += s;
    for (std::size_t i : path) {
        auto& e = per_group[graph.tasks()[i].group];
        ++e.first;
        e.second += d.seconds[i];
        total += d.seconds[i];
    }
    std::printf(
        "\ncritical path by duration: %zu tasks, %.2f s (total work %.2f s: no rank "
        "count finishes in less than the path)\n",
        path.size(), total, work);
    std::size_t worst = path.empty() ? 0 : graph.tasks()[path.front()].group;
    for (const auto& [g, e] : per_group) {
        std::printf("  stage %d  %-24s %5zu tasks  %10.2f s\n", graph.group_stage()[g],
                    config.groups[g].name.c_str(), e.first, e.second);
        if (e.second > per_group[worst].second) worst = g;
    }
    if (!path.empty())
        std::printf("limits scaling: stage %d, group '%s' (%.0f%% of the critical path)\n",
                    graph.group_stage()[worst], config.groups[worst].name.c_str(),
                    100.0 * per_group[worst].second / std::max(total, 1e-300));
}

// The dispatch simulated on each rank count (exec/simulate.h), with each simulated rank's
// devices (`devices` on every node, --ranks-per-node). False when some rank count cannot run
// the tasks.
bool print_scaling(const Config& config, const TaskGraph& graph, const PlanOptions& o,
                   const std::vector<std::string>& devices) {
    const Durations d = durations(config, graph, o);
    if (o.costs.empty()) {
        std::printf(
            "\nscaling (no --costs: each task takes its group's cost hint, read as seconds)\n");
    } else {
        std::printf(
            "\nscaling, durations from %s: %zu tasks measured, %zu estimated from "
            "their group's (or all tasks') mean\n",
            o.costs.c_str(), d.measured, d.estimated);
    }
    if (!o.devices.empty())
        std::printf("each node holds devices %s%s\n", o.devices.c_str(),
                    o.ranks_per_node > 0
                        ? (", " + std::to_string(o.ranks_per_node) + " ranks to a node").c_str()
                        : ", every rank on one node");
    const double fixed = fixed_seconds(config, graph, o, d);
    const bool all = print_rank_counts(config, graph, o, devices, d, fixed);
    print_duration_path(config, graph, d);
    return all;
}
// GPU and CPU work counted apart: tasks, summed cost hints, and the most devices a task needs.
void print_work_split(const Config& config, const TaskGraph& graph) {
    std::size_t tasks[2] = {0, 0};
    double cost[2] = {0.0, 0.0};
    int most = 0;
    for (std::size_t g = 0; g < config.groups.size(); ++g) {
        const int gpus = config.groups[g].gpus;
        const std::size_t n = graph.group_end(g) - graph.group_begin(g);
        tasks[gpus > 0] += n;
        cost[gpus > 0] += static_cast<double>(n) * config.groups[g].cost;
        if (n > 0) most = std::max(most, gpus);
    }
    std::printf("\nGPU work: %zu tasks, cost %.6g, up to %d device%s a task", tasks[1], cost[1],
                most, most == 1 ? "" : "s");
    std::printf("\nCPU work: %zu tasks, cost %.6g%s\n", tasks[0], cost[0],
                tasks[1] > 0 && !config.runner.cpu_tasks_on_gpu_ranks
                    ? " (kept off ranks that hold devices)"
                    : "");
}
}  // namespace

int verb_validate(const std::string& config_path) {
    Config config;
    TaskGraph graph;
    if (!load(config_path, config, graph)) return kExitBadInput;
    std::cout << "valid: " << config_path << ": experiment '" << config.name << "', "
              << config.groups.size() << " task groups, " << graph.tasks().size() << " tasks, "
              << config.analyses.size() << " analyses (config hash " << config.hash << ")\n";
    return kExitOk;
}

int verb_plan(const std::string& config_path, const PlanOptions& options) {
    Config config;
    TaskGraph graph;
    if (!load(config_path, config, graph)) return kExitBadInput;
    std::vector<std::string> devices;
    try {
        devices = parse_device_text(options.devices);
    } catch (const std::invalid_argument& e) {
        std::cerr << "compatbench plan: --devices '" << options.devices << "': " << e.what()
                  << "\n";
        return kExitBadInput;
    }
    std::printf("experiment '%s' (seed %llu, config hash %s): %zu tasks in %zu groups\n\n",
                config.name.c_str(), static_cast<unsigned long long>(config.seed),
                config.hash.c_str(), graph.tasks().size(), config.groups.size());
    std::printf("%-5s  %-24s  %-16s  %9s  %8s  %4s  %s\n", "stage", "group", "kind", "tasks",
                "cost", "gpus", "table");
    std::map<int, std::size_t> per_stage;
    std::map<std::string, std::size_t> per_kind;
    int stages = 0;
    for (const auto& s : graph.group_stage()) stages = std::max(stages, s + 1);
    for (int s = 0; s < stages; ++s) {
        for (std::size_t g = 0; g < config.groups.size(); ++g) {
            if (graph.group_stage()[g] != s) continue;
            const auto& group = config.groups[g];
            const std::size_t n = graph.group_end(g) - graph.group_begin(g);
            per_stage[s] += n;
            per_kind[std::string(group.kind->name())] += n;
            std::printf("%-5d  %-24s  %-16s  %9zu  %8.3g  %4d  /%s\n", s, group.name.c_str(),
                        std::string(group.kind->name()).c_str(), n, group.cost, group.gpus,
                        group.table.c_str());
        }
    }
    std::printf("\ntasks per stage:");
    for (const auto& [s, n] : per_stage) std::printf("  %d: %zu", s, n);
    std::printf("\ntasks per kind: ");
    for (const auto& [k, n] : per_kind) std::printf("  %s: %zu", k.c_str(), n);
    print_work_split(config, graph);
    const CriticalPath path = graph.critical_path(config);
    std::printf("\ncritical path: %zu tasks, cost %.6g (cost hints; 1 per task by default)\n",
                path.tasks.size(), path.cost);
    const std::size_t show = 8;
    for (std::size_t k = 0; k < path.tasks.size(); ++k) {
        if (k == show && path.tasks.size() > 2 * show) {
            std::printf("  ... %zu more\n", path.tasks.size() - 2 * show);
            k = path.tasks.size() - show;
        }
        const Task& t = graph.tasks()[path.tasks[k]];
        std::printf("  %s  (%s, cost %.3g)\n", t.id.c_str(), config.groups[t.group].name.c_str(),
                    config.groups[t.group].cost);
    }
    if (!config.analyses.empty()) std::printf("\nanalyses (run by the coordinator):\n");
    for (const auto& a : config.analyses) {
        std::printf("  %-20s %-16s on %-20s -> /%s/analysis/\n", a.name.c_str(),
                    std::string(a.kind->name()).c_str(), a.input.c_str(), a.study.c_str());
    }
    if (options.ranks.empty()) return kExitOk;
    try {
        if (!print_scaling(config, graph, options, devices)) {
            std::cerr << "compatbench plan: some rank counts cannot run this config's tasks "
                         "(see above)\n";
            return kExitBadInput;
        }
    } catch (const std::exception& e) {
        std::cerr << "compatbench plan: " << e.what() << "\n";
        return kExitBadInput;
    }
    return kExitOk;
}

}  // namespace compatbench
