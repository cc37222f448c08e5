// `compatbench merge CONFIG.yaml --out DIR`: merges checkpoints with any operator of
// methods.md §3.2 from a mergekit-style YAML, streaming tensor by tensor from the files (read
// a chunk at a time) and writing each merged tensor at its place in the output (sharded past
// `shard_mb`), so memory stays at a few tensors. Under mpirun the tensors are spread over the
// ranks.
//
//   merge_method: prism          # task_arithmetic ties dare slerp model_stock prism
//   base_model: base/            #   prism_hard norm_matched
//   models:
//     - model: math/
//       parameters: {weight: 1.0}
//     - model: code.safetensors
//   parameters: {coef: 1.0, kappa: 1.0, scope: ["*gate_proj*", "*up_proj*", "*down_proj*"]}
//   out_dtype: bfloat16          # default: each tensor's input dtype
//   shard_mb: 4096
#include <mpi.h>
#include <sys/resource.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/tensor_ranks.h"
#include "app/verbs.h"
#include "config/config.h"
#include "exec/signals.h"
#include "formats/layout.h"
#include "merging/checkpoint_merge.h"

namespace compatbench {

namespace {

namespace fs = std::filesystem;

struct MergeSpec {
    merging::MergeParams params;
    std::string base;
    std::vector<std::string> models;
    std::vector<std::string> scope;
    std::optional<formats::DType> out_dtype;  // default: each tensor's input dtype
    double shard_mb = 4096;
    nlohmann::json parameters;  // as given, for the output's metadata
};

const std::vector<std::string> kPrismScope = {"*gate_proj*", "*up_proj*", "*down_proj*"};

// `parameters:` of the merge (coef, normalize, density, drop, dare_then, t, kappa,
// rho_gate, keep_floor, seed, scope), kept as given for the output's metadata.
void parse_parameters(const YamlChecker& yc, const YAML::Node& p, MergeSpec& s) {
    yc.check_map(p, "parameters",
                 {{"coef", KeyType::real, false, -1e6, 1e6, {}},
                  {"normalize", KeyType::string, false, 0, 0, {"mean", "sum"}},
                  {"density", KeyType::real, false, 0, 1, {}},
                  {"drop", KeyType::real, false, 0, 0.999999, {}},
                  {"dare_then", KeyType::string, false, 0, 0, {"mean", "ties"}},
                  {"t", KeyType::real, false, 0, 1, {}},
                  {"kappa", KeyType::real, false, 0, 1e6, {}},
                  {"rho_gate", KeyType::real, false, 0, 1, {}},
                  {"keep_floor", KeyType::real, false, 0, 1, {}},
                  {"seed", KeyType::integer, false, 0, 9e18, {}},
                  {"scope", KeyType::scalar_or_list, false, 0, 0, {}}});
    auto& q = s.params;
    if (p["coef"]) q.coef = yc.as_real(p["coef"], "parameters.coef");
    if (p["normalize"])
        q.normalize =
            p["normalize"].Scalar() == "sum" ? merging::Normalize::sum : merging::Normalize::mean;
    if (p["density"]) q.density = yc.as_real(p["density"], "parameters.density");
    if (p["drop"]) q.drop = yc.as_real(p["drop"], "parameters.drop");
    if (p["dare_then"]) q.dare_then_ties = p["dare_then"].Scalar() == "ties";
    if (p["t"]) q.t = yc.as_real(p["t"], "parameters.t");
    if (p["kappa"]) q.kappa = yc.as_real(p["kappa"], "parameters.kappa");
    if (p["rho_gate"]) q.rho_gate = yc.as_real(p["rho_gate"], "parameters.rho_gate");
    if (p["keep_floor"]) q.keep_floor = yc.as_real(p["keep_floor"], "parameters.keep_floor");
    if (p["seed"]) q.seed = static_cast<std::uint64_t>(yc.as_int(p["seed"], "parameters.seed"));
    if (const YAML::Node sc = p["scope"]) {
        if (sc.IsSequence())
            for (std::size_t i = 0; i < sc.size(); ++i)
                s.scope.push_back(yc.as_string(sc[i], index_path("parameters.scope", i)));
        else
            s.scope.push_back(yc.as_string(sc, "parameters.scope"));
    }
    s.parameters = yaml_to_json(p);
}

// `models:` each with an optional per-model weight (task arithmetic and DARE only).
template <class Resolve>
void parse_models(const YamlChecker& yc, const YAML::Node& models, const Resolve& resolve,
                  MergeSpec& s) {
    bool weighted = false;
    for (std::size_t i = 0; i < models.size(); ++i) {
        const std::string p = index_path("models", i);
        yc.check_map(models[i], p,
                     {{"model", KeyType::string, true, 0, 0, {}},
                      {"parameters", KeyType::map, false, 0, 0, {}}});
        s.models.push_back(resolve(yc.as_string(models[i]["model"], p + ".model")));
        double w = 1.0;
        if (const YAML::Node mp = models[i]["parameters"]) {
            yc.check_map(mp, p + ".parameters", {{"weight", KeyType::real, false, -1e6, 1e6, {}}});
            if (mp["weight"]) {
                w = yc.as_real(mp["weight"], p + ".parameters.weight");
                weighted = true;
            }
        }
        s.params.weights.push_back(w);
    }
    if (!weighted) s.params.weights.clear();
    if (s.models.empty()) yc.fail(models, "models", "no model to merge");
    const auto m = s.params.method;
    if (weighted && m != merging::Method::task_arithmetic && m != merging::Method::dare)
        yc.fail(models, "models", "per-model weights apply to task_arithmetic and dare only");
    if (m == merging::Method::slerp && s.models.size() != 2)
        yc.fail(models, "models", "slerp merges exactly 2 models");
}

MergeSpec parse_spec(const std::string& path) {
    const YamlChecker yc(path);
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
        throw ConfigError(path, "", "cannot read the file");
    } catch (const YAML::Exception& e) {
        throw ConfigError(path, "", e.what());
    }
    yc.check_map(root, "",
                 {{"merge_method", KeyType::string, true, 0, 0, {}},
                  {"base_model", KeyType::string, true, 0, 0, {}},
                  {"models", KeyType::list, true, 0, 0, {}},
                  {"parameters", KeyType::map, false, 0, 0, {}},
                  {"out_dtype",
                   KeyType::string,
                   false,
                   0,
                   0,
                   {"float32", "float16", "bfloat16", "F32", "F16", "BF16"}},
                  {"shard_mb", KeyType::real, false, 0.001, 1e9, {}}});
    MergeSpec s;
    const fs::path dir = fs::path(path).parent_path();
    const auto resolve = [&](const std::string& p) {
        const fs::path f = p;
        return (f.is_relative() ? dir / f : f).lexically_normal().string();
    };
    try {
        s.params.method = merging::method_from_name(root["merge_method"].Scalar());
    } catch (const std::invalid_argument& e) {
        yc.fail(root["merge_method"], "merge_method", e.what());
    }
    s.base = resolve(yc.as_string(root["base_model"], "base_model"));
    parse_models(yc, root["models"], resolve, s);
    if (const YAML::Node p = root["parameters"]) parse_parameters(yc, p, s);
    if (s.scope.empty() && merging::reads_merge_rho(s.params.method)) s.scope = kPrismScope;
    if (const YAML::Node d = root["out_dtype"]) {
        const std::string v = d.Scalar();
        s.out_dtype = v == "float16" || v == "F16"     ? formats::DType::F16
                      : v == "bfloat16" || v == "BF16" ? formats::DType::BF16
                                                       : formats::DType::F32;
    }
    if (root["shard_mb"]) s.shard_mb = yc.as_real(root["shard_mb"], "shard_mb");
    return s;
}

double peak_rss_mb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

// The largest anonymous memory (RssAnon: not the file pages the kernel may drop) seen
// between tensors, in MB.
struct AnonPeak {
    double mb = 0.0;
    void sample() {
        std::ifstream status("/proc/self/status");
        std::string key;
        double kb = 0.0;
        while (status >> key) {
            if (key == "RssAnon:" && status >> kb) {
                mb = std::max(mb, kb / 1024.0);
                return;
            }
            status.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
        }
    }
};

// The output's layout: every tensor of the base at its place, merged ones in `out_dtype`.
formats::CheckpointLayout output_layout(const MergeSpec& spec,
                                        const merging::CheckpointSource& source,
                                        const std::string& out) {
    formats::CheckpointLayout layout = merging::merged_layout(source, spec.out_dtype);
    layout.set_metadata("merge_method", merging::method_name(spec.params.method));
    layout.set_metadata("parameters", spec.parameters.dump());
    layout.set_metadata("base_model", spec.base);
    layout.set_metadata("models", nlohmann::json(spec.models).dump());
    layout.set_metadata("format", "pt");
    layout.plan(out, static_cast<std::uint64_t>(spec.shard_mb * 1048576.0));
    return layout;
}

// PRISM's ρ-gate needs the merge's ρ over the in-scope tensors first (§3.2): each rank
// measures its tensors and the sums are combined. Other operators do not read it.
double merge_rho(merging::ModelMerge& merge, const merging::CheckpointSource& source,
                 const std::vector<int>& owner, int rank) {
    if (!merge.needs_rho()) return 1.0;
    for (std::size_t i = 0; i < source.size(); ++i)
        if (owner[i] == rank) merge.measure(source, i);
    merging::InterferenceSums total;
    double local[2] = {merge.sums().interference, merge.sums().cancellation}, sums[2] = {0, 0};
    MPI_Allreduce(local, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    total.interference = sums[0];
    total.cancellation = sums[1];
    return merging::ModelMerge::rho_of(total);
}

void print_merge(const MergeSpec& spec, const merging::MergeTotals& t, double rho,
                 std::size_t tensors, std::size_t files, const std::string& out,
                 std::uint64_t input_bytes, double seconds, int ranks, const double* max_rss) {
    const auto method = spec.params.method;
    std::printf("%s of %zu models into %s: %zu tensors in %zu file(s)\n",
                merging::method_name(method), spec.models.size(), out.c_str(), tensors, files);
    if (!spec.scope.empty()) std::printf("scope: %zu patterns\n", spec.scope.size());
    std::printf(
        "update norm %.2f%% of the mean task vector's; %.4f%% of in-scope coordinates changed",
        t.update_pct(), 100.0 * t.keep_fraction());
    if (rho != 1.0 || method == merging::Method::prism) std::printf("; merge rho %.4f", rho);
    std::printf(
        "\nread %.3f GB in %.2f s on %d rank(s): %.2f GB/s; per rank at most: peak RSS %.0f MB "
        "(with mapped file pages), anonymous memory %.0f MB\n",
        static_cast<double>(input_bytes) / 1e9, seconds, ranks,
        static_cast<double>(input_bytes) / 1e9 / seconds, max_rss[0], max_rss[1]);
}

}  // namespace

int verb_merge(const std::string& config_path, const std::string& out) {
    return with_mpi("merge", [&](int rank, int size) {
        const MergeSpec spec = parse_spec(config_path);
        const auto t0 = std::chrono::steady_clock::now();
        const auto base = formats::Checkpoint::open(spec.base);
        std::vector<formats::Checkpoint> models;
        for (const auto& m : spec.models) models.push_back(formats::Checkpoint::open(m));
        const merging::CheckpointSource source(base, models);
        std::vector<std::uint64_t> numel;
        std::uint64_t input_bytes = 0;
        for (std::size_t i = 0; i < source.size(); ++i) {
            numel.push_back(source.numel(i));
            if (source.mergeable(i))
                input_bytes += source.numel(i) * formats::dtype_size(source.info(i).dtype) *
                               (models.size() + 1);
        }
        const std::vector<int> owner = assign_ranks(numel, size);
        merging::ModelMerge merge(spec.params, spec.scope);
        const double rho = merge_rho(merge, source, owner, rank);
        formats::CheckpointLayout layout = output_layout(spec, source, out);
        if (rank == 0) {
            fs::create_directories(out);
            layout.create();
        }
        MPI_Barrier(MPI_COMM_WORLD);
        AnonPeak anon;
        anon.sample();
        merging::write_merged(merge, source, rho, layout, owner, rank, [&] { anon.sample(); });
        const auto local = merge.totals().values();
        std::array<double, 6> total{};
        MPI_Reduce(local.data(), total.data(), 6, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        double rss[2] = {peak_rss_mb(), anon.mb}, max_rss[2] = {0, 0};
        MPI_Reduce(rss, max_rss, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (rank == 0)
            print_merge(spec, merging::MergeTotals::from_values(total), rho, layout.size(),
                        layout.files().size(), out, input_bytes, seconds, size, max_rss);
        return kExitOk;
    });
}

}  // namespace compatbench
