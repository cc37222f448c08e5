// `compatbench validate` and `compatbench plan`: read-only looks at a config.
#include <cstdio>
#include <iostream>
#include <map>

#include "analyses/analysis_kind.h"
#include "app/verbs.h"
#include "config/config.h"
#include "exec/signals.h"
#include "graph/task_graph.h"
#include "tasks/task_kind.h"

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

int verb_plan(const std::string& config_path) {
    Config config;
    TaskGraph graph;
    if (!load(config_path, config, graph)) return kExitBadInput;
    std::printf("experiment '%s' (seed %llu, config hash %s): %zu tasks in %zu groups\n\n",
                config.name.c_str(), static_cast<unsigned long long>(config.seed),
                config.hash.c_str(), graph.tasks().size(), config.groups.size());
    std::printf("%-5s  %-24s  %-16s  %9s  %8s  %s\n", "stage", "group", "kind", "tasks", "cost",
                "table");
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
            std::printf("%-5d  %-24s  %-16s  %9zu  %8.3g  /%s\n", s, group.name.c_str(),
                        std::string(group.kind->name()).c_str(), n, group.cost,
                        group.table.c_str());
        }
    }
    std::printf("\ntasks per stage:");
    for (const auto& [s, n] : per_stage) std::printf("  %d: %zu", s, n);
    std::printf("\ntasks per kind: ");
    for (const auto& [k, n] : per_kind) std::printf("  %s: %zu", k.c_str(), n);
    const CriticalPath path = graph.critical_path(config);
    std::printf("\n\ncritical path: %zu tasks, cost %.6g (cost hints; 1 per task by default)\n",
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
    return kExitOk;
}

}  // namespace compatbench
