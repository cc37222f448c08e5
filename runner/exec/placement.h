// Placement (docs/gpus.md): which devices and how many threads each rank holds, read once
// when the run starts, and the check that every group's tasks have a rank to run on.
//
// A rank's devices come from the first of these that is set:
//   1. --devices on the command line (every node), then runner.devices (per host, or "*");
//      a node's list is split among the ranks on that node;
//   2. CUDA_VISIBLE_DEVICES: as it is when SLURM started the rank (srun sets it per task
//      with --gpus-per-task / --gpu-bind), but none when the job has GPUs and the step none
//      on this node (SLURM_JOB_GPUS without SLURM_STEP_GPUS: the list was inherited from the
//      batch script); under mpirun, a list that every rank of the node sees alike is split
//      among them, and lists that differ are each rank's own;
//   3. SLURM_STEP_GPUS, then SLURM_JOB_GPUS: the node's GPUs, split among its ranks;
//   4. none.
// Threads: runner.threads, else SLURM_CPUS_PER_TASK, else the cores the rank may use (its
// affinity mask when it is bound, else the node's cores shared among its ranks).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "core/resources.h"
#include "exec/task_flow.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

namespace compatbench {

// What a rank reads of its environment for its placement.
struct PlacementEnv {
    std::optional<std::string> cuda_visible, step_gpus, job_gpus, cpus_per_task;
    bool srun_step = false;  // SLURM started this rank (SLURM_STEP_ID and SLURM_PROCID set)
    int affinity_cpus = 1;   // CPUs in this process's affinity mask
    int online_cpus = 1;     // CPUs of the node
    static PlacementEnv read();
};

// Where a rank sits among the ranks of its node, and what those ranks see.
struct NodeView {
    std::string host;
    int local_rank = 0, local_size = 1;
    bool cuda_visible_alike = true;  // every rank of the node sees the same CUDA_VISIBLE_DEVICES
};

// The `local_rank`-th of `local_size` near-equal contiguous shares of `devices` (the first
// shares one larger when they do not divide evenly).
std::vector<std::string> device_share(const std::vector<std::string>& devices, int local_rank,
                                      int local_size);

// One rank's resources from its settings, the --devices text (nullopt: not given), its
// environment and its node. Throws std::invalid_argument for a device list it cannot read.
RankResources rank_resources(const RunnerSettings& runner,
                             const std::optional<std::string>& cli_devices, const PlacementEnv& env,
                             const NodeView& node);

// Why some group's tasks can run on no rank, "" when each has one: a group's `gpus:` more
// than any rank holds, or CPU tasks when every rank holds devices and
// runner.cpu_tasks_on_gpu_ranks is false. One line naming the group, its need and what the
// ranks hold.
std::string placement_problem(const Config& config, const TaskGraph& graph,
                              const std::vector<RankResources>& ranks);

// The ranks of a simulated run (`compatbench plan`): `n` ranks on nodes named node0, node1,
// ..., `per_node` to a node in rank order (0: all on one node), each node holding `devices`,
// split among its ranks as a run's --devices is (device_share).
std::vector<RankResources> simulated_ranks(int n, int per_node,
                                           const std::vector<std::string>& devices);
// The devices each rank of a run held, from its /meta/placement (placement_json). Throws
// std::invalid_argument when the text is not such a list.
RankDevices held_devices(const std::string& placement);
// The devices each of `ranks` holds.
RankDevices held_devices(const std::vector<RankResources>& ranks);

// Each rank's host, devices, threads and their source, as JSON (/meta/placement).
std::string placement_json(const std::vector<RankResources>& ranks);
// One log line per rank (at most 16 ranks, then a count).
void log_placement(const std::vector<RankResources>& ranks);

// collective: every rank's resources, on every rank (index = rank). Throws
// std::invalid_argument (the same on every rank) for a device list that cannot be read.
std::vector<RankResources> discover_placement(const RunnerSettings& runner,
                                              const std::optional<std::string>& cli_devices,
                                              const comm::Comm& comm);

}  // namespace compatbench
