// compatbench: the experiment runner's command line.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "app/verbs.h"
#include "config/config.h"
#include "exec/run.h"
#include "exec/signals.h"
#include "graph/task_graph.h"

#ifndef COMPATBENCH_VERSION
#define COMPATBENCH_VERSION "0"
#endif

namespace {

using namespace compatbench;

// `run` under MPI: every rank validates the same config, so all agree on errors.
int verb_run(const std::string& config_path, std::string out, bool resume, const std::string& level,
             std::optional<std::uint64_t> seed) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int code = kExitOk;
    try {
        const Config config = load_config(config_path, seed);
        const TaskGraph graph = TaskGraph::build(config);
        if (out.empty()) out = "results/" + config.name;
        RunOptions options{out, resume, level, true};
        code = run_experiment(config, graph, options, MPI_COMM_WORLD).exit_code;
    } catch (const ConfigError& e) {
        if (rank == 0) std::cerr << "compatbench: " << e.what() << "\n";
        code = kExitBadInput;
    } catch (const std::exception& e) {
        std::cerr << "compatbench: rank " << rank << ": internal error: " << e.what() << "\n";
        MPI_Abort(MPI_COMM_WORLD, kExitInternal);
    }
    MPI_Finalize();
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"compatbench: an MPI experiment runner for model-compatibility studies"};
    app.set_version_flag("--version", COMPATBENCH_VERSION);
    app.require_subcommand(1);

    std::string config_path, out, level = "info";
    bool resume = false;
    auto* run =
        app.add_subcommand("run", "Run an experiment (under mpirun/srun, or as one process)");
    run->add_option("config", config_path, "Experiment config (YAML)")->required();
    run->add_option("--out", out, "Output folder (default: results/<experiment name>)");
    run->add_flag("--resume", resume, "Continue the run in --out from its ledger");
    std::optional<std::uint64_t> seed;
    run->add_option("--seed", seed,
                    "Replace the config's experiment seed (one run per seed of a job array)");
    run->add_option("--log-level", level, "trace, debug, info, warn, error")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

    auto* validate = app.add_subcommand("validate", "Check a config and exit (0 valid, 2 invalid)");
    validate->add_option("config", config_path, "Experiment config (YAML)")->required();

    auto* plan =
        app.add_subcommand("plan", "Task counts per stage and kind, and the critical path");
    plan->add_option("config", config_path, "Experiment config (YAML)")->required();
    PlanOptions plan_options;
    plan->add_option("--ranks", plan_options.ranks,
                     "Simulate the dispatch on these rank counts (e.g. 1,2,64,1024)")
        ->delimiter(',')
        ->check(CLI::Range(1, 1 << 20));
    plan->add_option("--costs", plan_options.costs,
                     "results.h5 of an earlier run: task durations from its /tasks")
        ->check(CLI::ExistingFile);
    plan->add_option("--overhead", plan_options.overhead,
                     "Seconds added to every task in the simulation (round trip; default 0)")
        ->check(CLI::Range(0.0, 60.0));

    std::string status_dir;
    bool status_json = false;
    auto* status = app.add_subcommand(
        "status",
        "A run's progress from its output folder: while it runs, after it stopped, or done");
    status->add_option("out", status_dir, "The run's output folder")->required();
    status->add_flag("--json", status_json, "The same as one JSON object");

    std::vector<std::string> combine_dirs;
    std::string combine_out;
    auto* combine = app.add_subcommand(
        "combine", "Mean, sd and range across runs (e.g. seeds) of every analysis statistic");
    combine->add_option("dirs", combine_dirs, "Run folders (or results.h5 files)")
        ->required()
        ->check(CLI::ExistingPath);
    combine->add_option("--out", combine_out, "Folder for combined.h5")->required();

    std::string report_dir, report_script = COMPATBENCH_SOURCE_DIR "/report/make_report.py",
                            report_python;
    auto* report = app.add_subcommand(
        "report", "Figures and tables of a run as OUT_DIR/report/index.html (Python, matplotlib)");
    report->add_option("out", report_dir, "The run's output folder")->required();
    report->add_option("--script", report_script, "The report script (default: the source tree's)");
    report->add_option("--python", report_python, "Python with h5py, numpy, matplotlib");

    ComparePaths paths;
    auto* compare = app.add_subcommand(
        "compare",
        "Compare two results.h5 files dataset by dataset, byte for byte (0 same, 1 differ)");
    compare->add_option("a", paths.a, "First results.h5")->required()->check(CLI::ExistingFile);
    compare->add_option("b", paths.b, "Second results.h5")->required()->check(CLI::ExistingFile);
    compare->add_flag("--all", paths.all, "Include /meta and /tasks (run facts)");

    ScreenOptions screen;
    auto* screen_cmd = app.add_subcommand(
        "screen", "Interference screening of a planned merge, from safetensors checkpoints");
    screen_cmd->add_option("--base", screen.base, "The base checkpoint (file or folder)")
        ->required();
    screen_cmd->add_option("--models", screen.models, "The fine-tuned checkpoints")
        ->required()
        ->expected(1, 1 << 16);
    screen_cmd->add_option("--coef", screen.coef, "c, the coefficient on the mean task vector")
        ->check(CLI::Range(0.0, 1e6));
    screen_cmd->add_option("--scope", screen.scope, "Tensor-name patterns (default: all)");
    screen_cmd->add_option("--threshold", screen.threshold, "Score above which a merge is flagged");
    screen_cmd->add_flag("--json", screen.json, "One JSON object on stdout");

    std::string merge_config, merge_out;
    auto* merge_cmd = app.add_subcommand(
        "merge", "Merge safetensors checkpoints per a mergekit-style YAML (methods.md §3.2)");
    merge_cmd->add_option("config", merge_config, "The merge YAML")->required();
    merge_cmd->add_option("--out", merge_out, "Output folder")->required();

    auto* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    std::size_t tasks = 100000, command_tasks = 2000, parallel_jobs = 2000;
    std::string bench_out = "results/bench-dispatch";
    auto* dispatch = bench->add_subcommand(
        "dispatch", "Noop and command tasks per second through the runner, beside GNU parallel");
    dispatch->add_option("--tasks", tasks, "noop tasks")->check(CLI::Range(1, 10000000));
    dispatch->add_option("--command-tasks", command_tasks,
                         "command tasks running `true` (0: skip)");
    dispatch->add_option("--parallel-jobs", parallel_jobs,
                         "GNU parallel jobs running `true` (0: skip)");
    dispatch->add_option("--out", bench_out, "Scratch folder (emptied first)");

    std::vector<int> train_dims = {256, 512, 512, 64};
    int train_batch = 256;
    auto* train = bench->add_subcommand(
        "train", "GFLOP/s of an MLP training step beside plain Eigen GEMM on the same shapes");
    train->add_option("--dims", train_dims, "Layer widths, input to output")->expected(2, 16);
    train->add_option("--batch", train_batch, "Rows per step")->check(CLI::Range(1, 1 << 20));

    KnnBenchOptions knn;
    knn.script = COMPATBENCH_SOURCE_DIR "/bench/knn_numpy.py";
    auto* knn_cmd = bench->add_subcommand(
        "knn", "Mutual k-NN of two feature matrices beside numpy's implementation of it");
    knn_cmd->add_option("--n", knn.n, "Probe samples")->check(CLI::Range(4, 1 << 20));
    knn_cmd->add_option("--d", knn.d, "Feature width")->check(CLI::Range(1, 1 << 16));
    knn_cmd->add_option("--k", knn.k, "Neighbours")->check(CLI::Range(1, 1 << 16));
    knn_cmd->add_option("--block", knn.block, "Rows per similarity block")
        ->check(CLI::Range(1, 1 << 20));
    knn_cmd->add_option("--repeats", knn.repeats, "Best of this many runs")
        ->check(CLI::Range(1, 1000));
    knn_cmd->add_option("--python", knn.python,
                        "Python with numpy for the comparison (empty: none)");
    knn_cmd->add_option("--numpy-script", knn.script, "The numpy reference script");

    std::size_t memory_mb = 1024;
    int memory_repeats = 5;
    auto* memory_cmd = bench->add_subcommand("memory", "Single-core memory read bandwidth");
    memory_cmd->add_option("--mb", memory_mb, "Buffer size")->check(CLI::Range(64, 1 << 16));
    memory_cmd->add_option("--repeats", memory_repeats, "Best of")->check(CLI::Range(1, 100));

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : kExitBadInput;
    }
    if (run->parsed()) return verb_run(config_path, out, resume, level, seed);
    if (validate->parsed()) return verb_validate(config_path);
    if (plan->parsed()) return verb_plan(config_path, plan_options);
    if (status->parsed()) return verb_status(status_dir, status_json);
    if (combine->parsed()) return verb_combine(combine_dirs, combine_out);
    if (report->parsed()) return verb_report(report_dir, report_script, report_python);
    if (compare->parsed()) return verb_compare(paths);
    if (screen_cmd->parsed()) return verb_screen(screen);
    if (merge_cmd->parsed()) return verb_merge(merge_config, merge_out);
    if (dispatch->parsed())
        return verb_bench_dispatch(tasks, command_tasks, parallel_jobs, bench_out);
    if (train->parsed()) return verb_bench_train(train_dims, train_batch);
    if (memory_cmd->parsed()) return verb_bench_memory(memory_mb, memory_repeats);
    if (knn_cmd->parsed()) {
        if (knn.k >= knn.n) {
            std::cerr << "compatbench: bench knn: --k must be below --n\n";
            return kExitBadInput;
        }
        return verb_bench_knn(knn);
    }
    return kExitBadInput;
}
