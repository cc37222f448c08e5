// compatbench: the experiment runner's command line.

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "app/verbs.h"
#include "comm/comm.h"
#include "common/eigen.h"
#include "core/child_process.h"
#include "exec/messages.h"
#include "exec/run.h"
#include "exec/signals.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

#ifndef COMPATBENCH_VERSION
#define COMPATBENCH_VERSION "0"
#endif

namespace {

using namespace compatbench;

// What `run` is given on the command line.
struct RunArgs {
    std::string config, out, level = "info";
    bool resume = false;
    std::optional<std::uint64_t> seed;
    std::vector<std::string> exclude;
    std::optional<std::string> devices;
};

// `run` under MPI: every rank reads the same config before MPI starts (a bad one is refused
// as fast as `validate` refuses it, and by the launcher's rank 0 alone), so all agree on
// errors.
int verb_run(const RunArgs& args) {
    install_stop_signals();  // from the start: a stop asked while the run starts is honoured
    std::optional<Config> read;
    std::optional<TaskGraph> built;
    try {
        read.emplace(load_config(args.config, args.seed));
        built.emplace(TaskGraph::build(*read, args.exclude));
    } catch (const ConfigError& e) {
        if (comm::launcher_rank() == 0) std::cerr << "compatbench: " << e.what() << "\n";
        return kExitBadInput;
    } catch (const std::exception& e) {
        if (comm::launcher_rank() == 0)
            std::cerr << "compatbench: internal error while reading " << args.config << ": "
                      << e.what() << "\n";
        return kExitInternal;
    }
    const Config& config = *read;
    const TaskGraph& graph = *built;
    const comm::Session session;
    const comm::Comm world = session.world();
    try {
        const std::string out = args.out.empty() ? "results/" + config.name : args.out;
        RunOptions options{out, args.resume, args.level, true, args.devices};
        return run_experiment(config, graph, options, world).exit_code;
    } catch (const ConfigError& e) {
        if (world.rank() == 0) std::cerr << "compatbench: " << e.what() << "\n";
        return kExitBadInput;
    } catch (const RunStopped& e) {  // HDF5 may hold the file that failed: no MPI_Finalize
        std::cerr << stop_line(world.rank(), e.what()) << "\n";
        spdlog::error("{} (the run stops)", e.what());
        spdlog::default_logger()->flush();
        world.abort(kExitInternal);
    } catch (const std::exception& e) {
        std::cerr << "compatbench: rank " << world.rank() << ": internal error: " << e.what()
                  << "\n";
        world.abort(kExitInternal);
    }
}

// A verb: its subcommand and what runs when it was given. Each add_* below declares a
// family of verbs; their options live in the closures.
struct Verb {
    CLI::App* command;
    std::function<int()> action;
};
using Verbs = std::vector<Verb>;

void add_run(CLI::App& app, Verbs& verbs) {
    auto o = std::make_shared<RunArgs>();
    auto* run =
        app.add_subcommand("run", "Run an experiment (under mpirun/srun, or as one process)");
    run->add_option("config", o->config, "Experiment config (YAML)")->required();
    run->add_option("--out", o->out, "Output folder (default: results/<experiment name>)");
    run->add_flag("--resume", o->resume, "Continue the run in --out from its ledger");
    run->add_option("--seed", o->seed,
                    "Replace the config's experiment seed (one run per seed of a job array)")
        ->check(CLI::Range(0.0, 9.2e18));
    run->add_option("--exclude", o->exclude,
                    "Leave out the tasks whose ids match this shell pattern, and every task that "
                    "depends on them (repeatable; e.g. one model family's, for a "
                    "leave-one-family-out run)");
    run->add_option("--devices", o->devices,
                    "The GPUs of every node, split among the node's ranks (e.g. 0,1,2,3; \"\" "
                    "for none); over runner.devices and the environment (docs/gpus.md)");
    run->add_option("--log-level", o->level, "trace, debug, info, warn, error")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
    verbs.push_back({run, [o] { return verb_run(*o); }});
}

void add_config_verbs(CLI::App& app, Verbs& verbs) {
    auto config = std::make_shared<std::string>();
    auto* validate = app.add_subcommand("validate", "Check a config and exit (0 valid, 2 invalid)");
    validate->add_option("config", *config, "Experiment config (YAML)")->required();
    verbs.push_back({validate, [config] { return verb_validate(*config); }});

    auto plan_options = std::make_shared<PlanOptions>();
    auto* plan =
        app.add_subcommand("plan", "Task counts per stage and kind, and the critical path");
    plan->add_option("config", *config, "Experiment config (YAML)")->required();
    plan->add_option("--ranks", plan_options->ranks,
                     "Simulate the dispatch on these rank counts (e.g. 1,2,64,1024)")
        ->delimiter(',')
        ->check(CLI::Range(1, 1 << 20));
    plan->add_option("--costs", plan_options->costs,
                     "results.h5 of an earlier run: task durations from its /tasks")
        ->check(CLI::ExistingFile);
    plan->add_option("--overhead", plan_options->overhead,
                     "Seconds added to every task in the simulation (round trip; default 0)")
        ->check(CLI::Range(0.0, 60.0));
    plan->add_option("--devices", plan_options->devices,
                     "The GPUs of every simulated node, split among its ranks as run --devices "
                     "splits them (e.g. 0,1,2,3; default none)");
    plan->add_option("--ranks-per-node", plan_options->ranks_per_node,
                     "Simulated ranks to a node (default: all on one node)")
        ->check(CLI::Range(1, 1 << 20));
    verbs.push_back({plan, [config, plan_options] { return verb_plan(*config, *plan_options); }});
}

void add_results_verbs(CLI::App& app, Verbs& verbs) {
    struct Opts {
        std::string status_dir, combine_out, report_dir, report_python, report_library;
        std::string report_package = COMPATBENCH_SOURCE_DIR "/python";
        bool status_json = false, status_exit_code = false;
        std::vector<std::string> combine_dirs;
        ComparePaths paths;
    };
    auto o = std::make_shared<Opts>();
    auto* status = app.add_subcommand(
        "status",
        "A run's progress from its output folder: while it runs, after it stopped, or done");
    status->add_option("out", o->status_dir, "The run's output folder")->required();
    status->add_flag("--json", o->status_json, "The same as one JSON object");
    status->add_flag("--exit-code", o->status_exit_code,
                     "End with the code the run ended with: 0 complete, 1 tasks failed, 75 "
                     "stopped by a signal, 3 stopped without a clean end, 4 still running");
    verbs.push_back(
        {status, [o] { return verb_status(o->status_dir, o->status_json, o->status_exit_code); }});

    auto* combine = app.add_subcommand(
        "combine", "Mean, sd and range across runs (e.g. seeds) of every analysis statistic");
    combine->add_option("dirs", o->combine_dirs, "Run folders (or results.h5 files)")
        ->required()
        ->check(CLI::ExistingPath);
    combine->add_option("--out", o->combine_out, "Folder for combined.h5")->required();
    verbs.push_back({combine, [o] { return verb_combine(o->combine_dirs, o->combine_out); }});

    auto* report = app.add_subcommand(
        "report", "Figures and tables of a run as OUT_DIR/report/index.html (Python, matplotlib)");
    report->add_option("out", o->report_dir, "The run's output folder, or an advice JSON file")
        ->required();
    report->add_option("--library", o->report_library,
                       "results.h5 of a model-library run, set beside the real networks'");
    report->add_option(
        "--package", o->report_package,
        "The folder holding the Python package compatnets/ (default: the source tree's python/)");
    report->add_option("--python", o->report_python, "Python with h5py, numpy, matplotlib");
    verbs.push_back({report, [o] {
                         return verb_report(o->report_dir, o->report_package, o->report_library,
                                            o->report_python);
                     }});

    auto* compare = app.add_subcommand(
        "compare",
        "Compare two results.h5 files dataset by dataset, byte for byte (0 same, 1 differ)");
    compare->add_option("a", o->paths.a, "First results.h5")->required()->check(CLI::ExistingFile);
    compare->add_option("b", o->paths.b, "Second results.h5")->required()->check(CLI::ExistingFile);
    compare->add_flag("--all", o->paths.all, "Include /meta and /tasks (run facts)");
    verbs.push_back({compare, [o] { return verb_compare(o->paths); }});
}

void add_advise_verbs(CLI::App& app, Verbs& verbs) {
    auto* advise =
        app.add_subcommand("advise", "Advice before spending GPU hours (docs/advise.md)");
    advise->require_subcommand(1);
    auto o = std::make_shared<AdviseMergeOptions>();
    auto* merge = advise->add_subcommand(
        "merge", "Which fine-tunes of one base to merge: every subset of K screened in one pass");
    merge->footer(
        "Example:\n  compatbench advise merge --base llama/ --models math/ code/ ja/ med/ "
        "--k 2 --scope '*gate_proj*' '*up_proj*' '*down_proj*' --csv advice.csv --json "
        "advice.json");
    auto* base = merge->add_option("--base", o->base, "The base checkpoint (file or folder)");
    merge->add_option("--models", o->models, "The fine-tuned checkpoints (at least 2)")
        ->expected(1, 1 << 16)
        ->needs(base);
    merge
        ->add_option("--manifest", o->manifest,
                     "A checkpoint_set manifest instead of --base/--models")
        ->excludes(base);
    merge->add_option("--backbone", o->backbone, "The manifest's backbone (when it has several)");
    merge->add_option("--k", o->k, "Merge size K (default 2)")->check(CLI::Range(2, 64));
    merge->add_option("--coef", o->coef, "c, the coefficient on the mean task vector")
        ->check(CLI::Range(0.0, 1e6));
    merge->add_option("--scope", o->scope, "Tensor-name patterns (default: every float tensor)");
    merge->add_option("--threshold", o->threshold, "Score above which a merge is flagged (1.9e-3)");
    merge->add_option("--top", o->top, "Rows printed (default 20)");
    merge->add_option("--csv", o->csv, "Write every ranked merge as CSV");
    merge->add_option("--json", o->json, "Write the advice as JSON (compatbench report draws it)");
    verbs.push_back({merge, [o] { return verb_advise_merge(*o); }});

    auto a = std::make_shared<AdviseAlignOptions>();
    auto* align = advise->add_subcommand(
        "align", "Which vision x text encoders to align: every pair from probe features alone");
    align->footer(
        "Example:\n  compatbench advise align --manifest features.yaml --k 10 --budget 5 "
        "--csv pairs.csv --json pairs.json");
    auto* manifest = align->add_option("--manifest", a->manifest, "A feature_set manifest");
    align->add_option("--features", a->features, "A folder of <model>/<split>.safetensors")
        ->excludes(manifest);
    align->add_option("--pairing", a->pairing, "The folder of <split>.safetensors caption_image");
    align->add_option("--vision", a->vision, "Vision models (folders under --features)");
    align->add_option("--text", a->text, "Text models (folders under --features)");
    align->add_option("--split", a->split, "The probe split (default probe)");
    align->add_option("--probe", a->probe, "Probe images (default: all of the split)")
        ->check(CLI::Range(3, 10000000));
    align->add_option("--k", a->k, "k of the mutual k-NN (default 10)")
        ->check(CLI::Range(1, 100000));
    align->add_option("--ceiling", a->ceiling, "max (default), mean or quantile:q");
    align->add_option("--budget", a->budget, "Name the N pairs to align first")
        ->check(CLI::Range(0, 1000000));
    align->add_option("--top", a->top, "Rows printed (default 20)");
    align->add_option("--csv", a->csv, "Write every ranked pair as CSV");
    align->add_option("--json", a->json, "Write the advice as JSON (compatbench report draws it)");
    align->add_option("--h5", a->h5, "Write the ranked pairs as HDF5 (/advice/align/<column>)");
    verbs.push_back({align, [a] { return verb_advise_align(*a); }});
}

void add_checkpoint_verbs(CLI::App& app, Verbs& verbs) {
    auto screen = std::make_shared<ScreenOptions>();
    auto* screen_cmd = app.add_subcommand(
        "screen", "Interference screening of a planned merge, from safetensors checkpoints");
    screen_cmd->add_option("config", screen->config,
                           "A merge YAML (as compatbench merge reads): screens that merge");
    auto* base_opt =
        screen_cmd->add_option("--base", screen->base, "The base checkpoint (file or folder)");
    screen_cmd->add_option("--models", screen->models, "The fine-tuned checkpoints")
        ->expected(1, 1 << 16)
        ->needs(base_opt);
    auto* coef_opt =
        screen_cmd->add_option("--coef", screen->coef, "c, the coefficient on the mean task vector")
            ->check(CLI::Range(0.0, 1e6));
    screen_cmd->add_option("--scope", screen->scope, "Tensor-name patterns (default: all)");
    screen_cmd->add_option("--threshold", screen->threshold,
                           "Score above which a merge is flagged");
    screen_cmd->add_flag("--json", screen->json, "One JSON object on stdout");
    verbs.push_back({screen_cmd, [screen, coef_opt] {
                         screen->coef_given = coef_opt->count() > 0;
                         return verb_screen(*screen);
                     }});

    add_advise_verbs(app, verbs);

    auto merge = std::make_shared<MergeOptions>();
    auto* merge_cmd = app.add_subcommand(
        "merge", "Merge safetensors checkpoints per a mergekit YAML (docs/mergekit.md)");
    merge_cmd->add_option("config", merge->config, "The merge YAML")->required();
    merge_cmd->add_option("--out", merge->out, "Output folder (written whole, or not at all)")
        ->required();
    merge_cmd->add_flag("--replace", merge->replace, "Replace an existing output folder whole");
    merge_cmd->add_option("--out-shard-size", merge->shard_size,
                          "Bytes per output shard, e.g. 5B, 500M (default: 4 GiB)");
    merge_cmd->add_flag("--copy-tokenizer,!--no-copy-tokenizer", merge->copy_tokenizer,
                        "Copy the tokenizer files from the donor model (default: yes)");
    merge_cmd
        ->add_option("--arithmetic", merge->arithmetic,
                     "dtype: mergekit's methods round as torch does in the YAML's dtype "
                     "(their default); exact: in double, rounded once (compatbench's own "
                     "operators' only mode)")
        ->check(CLI::IsMember({"dtype", "exact"}));
    verbs.push_back({merge_cmd, [merge] { return verb_merge(*merge); }});
}

void add_bench_dispatch_and_train(CLI::App& bench, Verbs& verbs) {
    struct Opts {
        std::size_t tasks = 100000, command_tasks = 2000, parallel_jobs = 2000;
        std::string out = "results/bench-dispatch";
        std::vector<int> dims = {256, 512, 512, 64};
        int batch = 256;
    };
    auto o = std::make_shared<Opts>();
    auto* dispatch = bench.add_subcommand(
        "dispatch", "Noop and command tasks per second through the runner, beside GNU parallel");
    dispatch->add_option("--tasks", o->tasks, "noop tasks")->check(CLI::Range(1, 10000000));
    dispatch->add_option("--command-tasks", o->command_tasks,
                         "command tasks running `true` (0: skip)");
    dispatch->add_option("--parallel-jobs", o->parallel_jobs,
                         "GNU parallel jobs running `true` (0: skip)");
    dispatch->add_option("--out", o->out, "Scratch folder (emptied first)");
    verbs.push_back({dispatch, [o] {
                         return verb_bench_dispatch(o->tasks, o->command_tasks, o->parallel_jobs,
                                                    o->out);
                     }});
    auto* train = bench.add_subcommand(
        "train", "GFLOP/s of an MLP training step beside plain Eigen GEMM on the same shapes");
    train->add_option("--dims", o->dims, "Layer widths, input to output")->expected(2, 16);
    train->add_option("--batch", o->batch, "Rows per step")->check(CLI::Range(1, 1 << 20));
    verbs.push_back({train, [o] { return verb_bench_train(o->dims, o->batch); }});
}

void add_bench_knn_and_memory(CLI::App& bench, Verbs& verbs) {
    auto knn = std::make_shared<KnnBenchOptions>();
    knn->script = COMPATBENCH_SOURCE_DIR "/bench/knn_numpy.py";
    auto* knn_cmd = bench.add_subcommand(
        "knn", "Mutual k-NN of two feature matrices beside numpy's implementation of it");
    knn_cmd->add_option("--n", knn->n, "Probe samples")->check(CLI::Range(4, 1 << 20));
    knn_cmd->add_option("--d", knn->d, "Feature width")->check(CLI::Range(1, 1 << 16));
    knn_cmd->add_option("--k", knn->k, "Neighbours")->check(CLI::Range(1, 1 << 16));
    knn_cmd->add_option("--block", knn->block, "Rows per similarity block")
        ->check(CLI::Range(1, 1 << 20));
    knn_cmd->add_option("--repeats", knn->repeats, "Best of this many runs")
        ->check(CLI::Range(1, 1000));
    knn_cmd->add_option("--python", knn->python,
                        "Python with numpy for the comparison (empty: none)");
    knn_cmd->add_option("--numpy-script", knn->script, "The numpy reference script");
    verbs.push_back({knn_cmd, [knn] {
                         if (knn->k >= knn->n) {
                             std::cerr << "compatbench: bench knn: --k must be below --n\n";
                             return kExitBadInput;
                         }
                         return verb_bench_knn(*knn);
                     }});
    auto memory = std::make_shared<std::pair<std::size_t, int>>(1024, 5);
    auto* memory_cmd = bench.add_subcommand("memory", "Single-core memory read bandwidth");
    memory_cmd->add_option("--mb", memory->first, "Buffer size")->check(CLI::Range(64, 1 << 16));
    memory_cmd->add_option("--repeats", memory->second, "Best of")->check(CLI::Range(1, 100));
    verbs.push_back(
        {memory_cmd, [memory] { return verb_bench_memory(memory->first, memory->second); }});
}

}  // namespace

int main(int argc, char** argv) {
    compatbench::fix_eigen_blocking();  // products' bits independent of the host's caches
    CLI::App app{"compatbench: an MPI experiment runner for model-compatibility studies"};
    app.set_version_flag("--version", COMPATBENCH_VERSION);
    app.require_subcommand(1);
    Verbs verbs;
    add_run(app, verbs);
    add_config_verbs(app, verbs);
    add_results_verbs(app, verbs);
    add_checkpoint_verbs(app, verbs);
    auto* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    add_bench_dispatch_and_train(*bench, verbs);
    add_bench_knn_and_memory(*bench, verbs);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : kExitBadInput;
    }
    for (const auto& v : verbs)
        if (v.command->parsed()) return v.action();
    return kExitBadInput;
}
