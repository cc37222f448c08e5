// <out>/status.json: the coordinator's view of a run, rewritten whole (a temporary file,
// then rename) when the run starts, at every progress line and when it ends. It holds
// what the ledger cannot: the groups' sizes, the running tasks, skips and the ETA.
// `compatbench status` reads it beside the ledger.
//
//   {"experiment":"default","config_path":"configs/default.yaml","config_hash":"…",
//    "state":"running","stop_signal":0,"ranks":2,"hosts":"node1","pid":4242,"started":…,"updated":…,
//    "eta_seconds":83.2,"eta_low_seconds":40.1,"eta_high_seconds":310.5,
//    "eta_unmeasured_groups":1,"progress_interval":10,
//    "groups":[{"name":"world","kind":"zoo_world","tasks":1,"done":1,"failed":0,
//               "skipped":0,"running":0,"pending":0,"cost":1,"expected_seconds":0.41}],
//    "running":[{"id":"vision/3","group":"vision","rank":1,"attempt":1,"since":…,
//               "host":"node1","devices":"0"}]}
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace compatbench {

struct GroupStatus {
    std::string name, kind;
    std::size_t tasks = 0, done = 0, failed = 0, skipped = 0, running = 0, pending = 0;
    double cost = 1.0;              // the config's hint
    double expected_seconds = 0.0;  // the cost model's seconds per task (exec/cost_model.h)
};

struct RunningTask {
    std::string id, group;
    int rank = 0;
    std::int64_t attempt = 1;  // the ledger's record of this attempt ends it
    double since = 0.0;        // dispatched at, Unix seconds
    std::string host;          // where it runs
    std::string devices;       // the devices it was given ("0,1"; "" for none)
};

struct StatusSnapshot {
    std::string experiment, config_path, config_hash, hosts;
    // running, stopping (a signal asked the run to stop: no new tasks), finishing (the tasks
    // are over, results.h5 is being written), then complete, failed or interrupted once
    // results.h5 is closed
    std::string state = "running";
    int stop_signal = 0;  // the signal that asked the run to stop; 0: none
    int ranks = 1;
    std::int64_t pid = 0;
    double started = 0.0, updated = 0.0;  // Unix seconds
    double eta_seconds = -1.0;            // at `updated`; negative: unknown
    double eta_low_seconds = -1.0;        // the range around it (equal while every group with
    double eta_high_seconds = -1.0;       // tasks left has been measured)
    std::size_t eta_unmeasured_groups = 0;
    double progress_interval = 10.0;
    std::vector<GroupStatus> groups;
    std::vector<RunningTask> running;
};

// Atomic: readers see the old file or the new one. Throws std::runtime_error naming the file.
void write_status_file(const std::string& path, const StatusSnapshot& s);
// Throws std::runtime_error naming the file and what is wrong with it.
StatusSnapshot read_status_file(const std::string& path);

}  // namespace compatbench
