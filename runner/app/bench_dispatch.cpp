// `compatbench bench dispatch`: what the runner costs per task, measured beside GNU parallel
// in the same run on the same machine. Run it under `mpirun -n 2`.
//
//   1. GNU parallel runs `true` N times with one job per core: jobs/s.
//   2. The runner dispatches noop tasks with the ledger on (fsync group commit) and
//      results.h5 rows written: tasks/s from first dispatch to last result.
//   3. The runner runs `command` tasks of `true`: seconds per task against parallel's per job.
//   4. Each rank's peak resident memory, with the target for a million noop tasks.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>
#include <vector>

#include "app/verbs.h"
#include "comm/comm.h"
#include "exec/run.h"
#include "exec/signals.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

namespace compatbench {

namespace {

double time_parallel(std::size_t jobs, int cores) {
    const std::string cmd = "seq " + std::to_string(jobs) + " | parallel --will-cite -j " +
                            std::to_string(cores) + " true > /dev/null 2>&1";
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = std::system(cmd.c_str());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rc == 0 ? s : -1.0;
}

// Every rank's peak resident memory in MB, on rank 0 (collective).
std::vector<double> peak_rss_mb(const comm::Comm& comm) {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return comm.gather(static_cast<double>(usage.ru_maxrss) / 1024.0);  // KB on Linux
}

// The peaks, and from a million noop tasks on the target: >= 100k tasks/s, <= 600 MB a rank.
void print_memory(const std::vector<double>& peaks, std::size_t tasks, double noop_rate) {
    std::printf("peak RSS by rank:");
    double most = 0.0;
    for (double mb : peaks) {
        std::printf(" %.0f MB", mb);
        most = std::max(most, mb);
    }
    if (tasks >= 1'000'000)
        std::printf("  (%zu noop tasks: target >= 100000 tasks/s and <= 600 MB a rank: %s)", tasks,
                    noop_rate >= 1e5 && most <= 600.0 ? "met" : "NOT met");
    std::printf("\n");
}

RunSummary run_config(const std::string& yaml, const std::string& out, const comm::Comm& comm) {
    const Config config = parse_config(yaml, "(bench)");
    const TaskGraph graph = TaskGraph::build(config);
    RunOptions options{out, false, "warn", false};
    return run_experiment(config, graph, options, comm);
}

}  // namespace

int verb_bench_dispatch(std::size_t tasks, std::size_t command_tasks, std::size_t parallel_jobs,
                        const std::string& out) {
    const comm::Session session;
    const comm::Comm world = session.world();
    const int rank = world.rank(), size = world.size();
    namespace fs = std::filesystem;
    if (rank == 0) {
        fs::remove_all(out);
        fs::create_directories(out);
    }
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    double parallel_s = 0.0;
    bool have_parallel =
        parallel_jobs > 0 && std::system("command -v parallel > /dev/null 2>&1") == 0;
    if (rank == 0 && have_parallel) parallel_s = time_parallel(parallel_jobs, cores);
    world.idle_barrier();

    const std::string head =
        "experiment: {name: bench-dispatch, seed: 1}\nrunner: {progress_interval: 3600}\n";
    const RunSummary noop = run_config(
        head + "tasks:\n  - {name: noop, kind: noop, count: " + std::to_string(tasks) + "}\n",
        out + "/noop", world);
    RunSummary command;
    if (command_tasks > 0) {
        command =
            run_config(head + "tasks:\n  - {name: cmd, kind: command, command: 'true', count: " +
                           std::to_string(command_tasks) + "}\n",
                       out + "/command", world);
    }
    const std::vector<double> peaks = peak_rss_mb(world);
    if (rank == 0) {
        const double noop_rate =
            static_cast<double>(noop.report.ran) / noop.report.dispatch_seconds;
        std::printf(
            "machine: %d cores; runner on %d ranks (ledger fsync group commit, results.h5 rows "
            "written)\n",
            cores, size);
        std::printf(
            "noop dispatch:   %.0f tasks/s  (%zu tasks in %.3f s; %.3f s wall with file setup)\n",
            noop_rate, noop.report.ran, noop.report.dispatch_seconds, noop.wall_seconds);
        double parallel_rate = 0.0;
        if (have_parallel && parallel_s > 0) {
            parallel_rate = static_cast<double>(parallel_jobs) / parallel_s;
            std::printf("GNU parallel:    %.0f jobs/s   (%zu x `true`, -j %d, %.3f s)\n",
                        parallel_rate, parallel_jobs, cores, parallel_s);
            std::printf("ratio noop/parallel: %.1fx  (target >= 20x and >= 5000 tasks/s: %s)\n",
                        noop_rate / parallel_rate,
                        noop_rate >= 5000 && noop_rate >= 20 * parallel_rate ? "met" : "NOT met");
        } else {
            std::printf("GNU parallel:    not measured (%s)\n",
                        parallel_jobs ? "not installed" : "--parallel-jobs 0");
        }
        if (command_tasks > 0) {
            const double per_task =
                command.report.dispatch_seconds / static_cast<double>(command.report.ran);
            std::printf(
                "command tasks:   %.0f tasks/s  (%zu x `true` on %d ranks) = %.3f ms per task\n",
                1.0 / per_task, command.report.ran, size, 1e3 * per_task);
            if (parallel_rate > 0) {
                const double per_job = 1.0 / parallel_rate;
                std::printf(
                    "command overhead vs GNU parallel: %.3f ms per task vs %.3f ms per job = %.2fx "
                    "(target <= 0.5x: %s)\n",
                    1e3 * per_task, 1e3 * per_job, per_task / per_job,
                    per_task <= 0.5 * per_job ? "met" : "NOT met");
            }
        }
        print_memory(peaks, noop.report.ran, noop_rate);
        std::fflush(stdout);
    }
    int code = noop.exit_code;
    if (code == kExitOk && command_tasks > 0) code = command.exit_code;
    return code;
}

}  // namespace compatbench
