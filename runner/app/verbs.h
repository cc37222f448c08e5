// The subcommands of the compatbench binary (each in its own file under runner/app/).
#pragma once

#include <string>
#include <vector>

namespace compatbench {

struct ComparePaths {
    std::string a, b;
    bool all = false;  // include /meta and /tasks
};

int verb_validate(const std::string& config_path);
// `plan --ranks N1,N2,...`: the dispatch simulated with durations from `costs` (a
// results.h5 of an earlier run; cost hints as seconds without one).
struct PlanOptions {
    std::vector<int> ranks;
    std::string costs;
    double overhead = 0.0;   // seconds added to every task in the simulation
    std::string devices;     // the devices of every simulated node ("": none)
    int ranks_per_node = 0;  // 0: every simulated rank on one node
};
int verb_plan(const std::string& config_path, const PlanOptions& options);
// `status OUT [--json] [--exit-code]`: a run's state from its folder (running, interrupted
// or finished); with --exit-code, ends with the code the run ended with (4 while it runs).
int verb_status(const std::string& out, bool as_json, bool exit_code);
// `combine DIR... --out DIR`: the spread across runs of every analysis statistic.
int verb_combine(const std::vector<std::string>& dirs, const std::string& out);
// `report OUT_DIR`: runs the report script (python: /usr/bin/python3 unless given).
int verb_report(const std::string& out_dir, const std::string& package, const std::string& library,
                std::string python);
int verb_compare(const ComparePaths& paths);
// Under MPI (every rank): dispatch `tasks` noop tasks and compare with GNU parallel.
int verb_bench_dispatch(std::size_t tasks, std::size_t command_tasks, std::size_t parallel_jobs,
                        const std::string& out);

struct ScreenOptions {
    std::string config;  // a merge YAML: screens the merge it describes
    bool coef_given = false;
    std::string base;
    std::vector<std::string> models;
    double coef = 1.0;
    std::vector<std::string> scope;  // tensor-name patterns (empty: every float tensor)
    double threshold = 1.9e-3;
    bool json = false;
};
// Under MPI or alone: PRISM's interference screening of a planned merge (methods.md §3.1).
int verb_screen(const ScreenOptions& options);

// Under MPI or alone: which subsets of K fine-tunes of one base to merge, ranked by their
// screening score from one pass over the files (methods.md §3.4).
struct AdviseMergeOptions {
    std::string base, manifest, backbone;
    std::vector<std::string> models, names;  // names: the manifest's (else from the paths)
    int k = 2;
    double coef = 1.0;
    std::vector<std::string> scope;
    double threshold = 1.9e-3;
    std::size_t top = 20;
    std::string csv, json;
};
int verb_advise_merge(const AdviseMergeOptions& options);

// Under MPI or alone: which vision × text pairs to align, from exported probe features
// (methods.md §1).
struct AdviseAlignOptions {
    std::string manifest, features, pairing;
    std::vector<std::string> vision, text;
    std::string split = "probe";
    int probe = 0;  // images of the probe (0: every image of the split)
    int k = 10;
    std::string ceiling = "max";
    int budget = 0;
    std::size_t top = 20;
    std::string csv, json, h5;
};
int verb_advise_align(const AdviseAlignOptions& options);

// Under MPI or alone: merges checkpoints per a mergekit-style YAML into `out`.
struct MergeOptions {
    std::string config, out;
    bool replace = false;        // replace an existing --out whole
    std::string shard_size;      // --out-shard-size (bytes, K/M/B suffixes)
    bool copy_tokenizer = true;  // --copy-tokenizer / --no-copy-tokenizer
    std::string arithmetic;      // --arithmetic: dtype or exact ("": dtype for mergekit's methods)
};
int verb_merge(const MergeOptions& options);

struct KnnBenchOptions {
    int n = 1024, d = 768, k = 10, block = 256, repeats = 5;
    std::string python;  // empty: no numpy comparison
    std::string script;  // bench/knn_numpy.py
};
// Single process: mutual k-NN (two models' lists + overlap) beside numpy on the same data.
int verb_bench_knn(const KnnBenchOptions& options);

// Single process: memory read bandwidth of one core.
int verb_bench_memory(std::size_t megabytes, int repeats);

// Single process: an MLP training step's GFLOP/s beside Eigen GEMM on the same shapes.
int verb_bench_train(const std::vector<int>& dims, int batch);

}  // namespace compatbench
