#include "exec/placement.h"

#include <sched.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace compatbench {

namespace {

std::optional<std::string> env_value(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
}

// The devices an environment variable names: SLURM's "NoDevFiles" and CUDA's "-1" name none.
std::vector<std::string> env_devices(const std::string& name, const std::string& text) {
    if (text == "NoDevFiles" || text.rfind("-1", 0) == 0) return {};
    try {
        return parse_device_text(text);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(name + "='" + text + "': " + e.what());
    }
}

// runner.devices' list for `host`: its own entry, else "*"'s; nullopt when neither.
std::optional<std::vector<std::string>> configured_devices(const RunnerSettings& runner,
                                                           const std::string& host) {
    const std::vector<std::string>* any = nullptr;
    for (const auto& [name, devices] : runner.devices) {
        if (name == host) return devices;
        if (name == "*") any = &devices;
    }
    if (any) return *any;
    return std::nullopt;
}

int rank_threads(const RunnerSettings& runner, const PlacementEnv& env, const NodeView& node) {
    if (runner.threads > 0) return runner.threads;
    if (env.cpus_per_task) {
        const int n = std::atoi(env.cpus_per_task->c_str());
        if (n > 0) return n;
    }
    if (env.affinity_cpus < env.online_cpus) return std::max(1, env.affinity_cpus);  // bound
    return std::max(1, env.online_cpus / std::max(1, node.local_size));
}

std::string describe_ranks(const std::vector<RankResources>& ranks) {
    std::ostringstream s;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        if (r == 6 && ranks.size() > 8) {
            s << ", ... (" << ranks.size() - r << " more)";
            break;
        }
        s << (r ? ", " : "") << "rank " << r << " on " << ranks[r].host << ": "
          << ranks[r].devices.size() << " ["
          << (ranks[r].devices.empty() ? "none" : join_devices(ranks[r].devices)) << "]";
    }
    return s.str();
}

}  // namespace

PlacementEnv PlacementEnv::read() {
    PlacementEnv env;
    env.cuda_visible = env_value("CUDA_VISIBLE_DEVICES");
    env.step_gpus = env_value("SLURM_STEP_GPUS");
    env.job_gpus = env_value("SLURM_JOB_GPUS");
    env.cpus_per_task = env_value("SLURM_CPUS_PER_TASK");
    env.srun_step = env_value("SLURM_STEP_ID") && env_value("SLURM_PROCID");
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) env.affinity_cpus = CPU_COUNT(&set);
    env.online_cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    env.affinity_cpus = std::min(env.affinity_cpus, env.online_cpus);
    return env;
}

std::vector<std::string> device_share(const std::vector<std::string>& devices, int local_rank,
                                      int local_size) {
    const std::size_t n = devices.size(), size = static_cast<std::size_t>(std::max(1, local_size));
    const std::size_t r = static_cast<std::size_t>(std::max(0, local_rank));
    const std::size_t base = n / size, extra = n % size;
    const std::size_t begin = r * base + std::min(r, extra);
    const std::size_t count = r < size ? base + (r < extra ? 1 : 0) : 0;
    return {devices.begin() + static_cast<std::ptrdiff_t>(std::min(begin, n)),
            devices.begin() + static_cast<std::ptrdiff_t>(std::min(begin + count, n))};
}

RankResources rank_resources(const RunnerSettings& runner,
                             const std::optional<std::string>& cli_devices, const PlacementEnv& env,
                             const NodeView& node) {
    RankResources r;
    r.host = node.host;
    r.threads = rank_threads(runner, env, node);
    const auto split = [&](const std::vector<std::string>& devices, const std::string& source) {
        r.devices = device_share(devices, node.local_rank, node.local_size);
        r.source = source;
    };
    if (cli_devices) {
        try {
            split(parse_device_text(*cli_devices), "--devices");
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("--devices '" + *cli_devices + "': " + e.what());
        }
    } else if (const auto configured = configured_devices(runner, node.host)) {
        split(*configured, "runner.devices");
    } else if (env.srun_step && env.job_gpus && !env.step_gpus) {
        // SLURM gave this node no GPU in the step: what it sees was inherited from the batch
        // script (a mixed allocation passes the GPU node's list to every task).
        r.source = "none (SLURM_JOB_GPUS without SLURM_STEP_GPUS: no GPU on this node)";
    } else if (env.cuda_visible) {
        const auto devices = env_devices("CUDA_VISIBLE_DEVICES", *env.cuda_visible);
        if (env.srun_step || !node.cuda_visible_alike) {
            r.devices = devices;
            r.source = "CUDA_VISIBLE_DEVICES";
        } else {
            split(devices, "CUDA_VISIBLE_DEVICES (shared by the node's ranks)");
        }
    } else if (env.step_gpus) {
        split(env_devices("SLURM_STEP_GPUS", *env.step_gpus), "SLURM_STEP_GPUS");
    } else if (env.job_gpus) {
        split(env_devices("SLURM_JOB_GPUS", *env.job_gpus), "SLURM_JOB_GPUS");
    } else {
        r.source = "none";
    }
    return r;
}

std::string placement_problem(const Config& config, const TaskGraph& graph,
                              const std::vector<RankResources>& ranks) {
    const bool cpu_ok = config.runner.cpu_tasks_on_gpu_ranks;
    for (std::size_t g = 0; g < config.groups.size(); ++g) {
        if (graph.group_begin(g) == graph.group_end(g)) continue;  // no tasks
        const int gpus = config.groups[g].gpus;
        bool any = false;
        for (const auto& r : ranks) any = any || rank_can_run(r.devices.size(), gpus, cpu_ok);
        if (any) continue;
        const std::string need = gpus > 0 ? "needs " + std::to_string(gpus) + " device" +
                                                (gpus > 1 ? "s" : "") +
                                                " a task, more than any rank holds"
                                          : "runs on CPU, and every rank holds devices while "
                                            "runner.cpu_tasks_on_gpu_ranks is false";
        return "tasks." + config.groups[g].name + ": gpus: " + std::to_string(gpus) + " " + need +
               " (" + describe_ranks(ranks) + ")";
    }
    return {};
}

std::vector<RankResources> simulated_ranks(int n, int per_node,
                                           const std::vector<std::string>& devices) {
    const int k = per_node > 0 ? per_node : std::max(n, 1);
    std::vector<RankResources> ranks;
    for (int r = 0; r < n; ++r) {
        const int node = r / k, local_size = std::min(k, n - node * k);
        RankResources rr;
        rr.host = "node" + std::to_string(node);
        rr.devices = device_share(devices, r % k, local_size);
        rr.source = "simulated";
        ranks.push_back(std::move(rr));
    }
    return ranks;
}

RankDevices held_devices(const std::vector<RankResources>& ranks) {
    RankDevices held;
    for (const auto& r : ranks) held.push_back(r.devices.size());
    return held;
}

RankDevices held_devices(const std::string& placement) {
    RankDevices held;
    try {
        for (const auto& rank : nlohmann::json::parse(placement)) {
            const auto& devices = rank.at("devices");
            if (!devices.is_array()) throw std::invalid_argument("devices is not a list");
            held.push_back(devices.size());
        }
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("not a placement list: ") + e.what());
    }
    return held;
}

std::string placement_json(const std::vector<RankResources>& ranks) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : ranks)
        j.push_back({{"host", r.host},
                     {"devices", r.devices},
                     {"threads", r.threads},
                     {"source", r.source}});
    return j.dump();
}

void log_placement(const std::vector<RankResources>& ranks) {
    for (std::size_t r = 0; r < ranks.size() && r < 16; ++r)
        spdlog::info("rank {} on {}: devices [{}] ({}), {} thread{} a command", r, ranks[r].host,
                     join_devices(ranks[r].devices), ranks[r].source, ranks[r].threads,
                     ranks[r].threads == 1 ? "" : "s");
    if (ranks.size() > 16) spdlog::info("... and {} more ranks", ranks.size() - 16);
}

namespace {

std::string to_json(const RankResources& r, const std::string& error) {
    return nlohmann::json{{"host", r.host},
                          {"devices", r.devices},
                          {"threads", r.threads},
                          {"source", r.source},
                          {"error", error}}
        .dump();
}

// This rank's place on its node, from the ranks that share its memory.
NodeView node_view(const PlacementEnv& env, const comm::Comm& comm) {
    NodeView node;
    node.host = comm::Comm::host();
    const comm::Comm local = comm.node();
    node.local_rank = local.rank();
    node.local_size = local.size();
    const std::string mine = env.cuda_visible ? "=" + *env.cuda_visible : "unset";
    for (const auto& other : local.all_gather(mine))
        node.cuda_visible_alike = node.cuda_visible_alike && other == mine;
    return node;
}

}  // namespace

std::vector<RankResources> discover_placement(const RunnerSettings& runner,
                                              const std::optional<std::string>& cli_devices,
                                              const comm::Comm& comm) {
    const PlacementEnv env = PlacementEnv::read();
    const NodeView node = node_view(env, comm);
    RankResources mine;
    std::string error;
    try {
        mine = rank_resources(runner, cli_devices, env, node);
    } catch (const std::invalid_argument& e) {
        error = "rank " + std::to_string(comm.rank()) + " on " + node.host + ": " + e.what();
    }
    std::vector<RankResources> ranks;
    for (const auto& text : comm.all_gather(to_json(mine, error))) {
        const auto j = nlohmann::json::parse(text);
        if (!j.at("error").get<std::string>().empty())
            throw std::invalid_argument(j.at("error").get<std::string>());
        ranks.push_back({j.at("host").get<std::string>(),
                         j.at("devices").get<std::vector<std::string>>(),
                         j.at("threads").get<int>(), j.at("source").get<std::string>()});
    }
    return ranks;
}

}  // namespace compatbench
