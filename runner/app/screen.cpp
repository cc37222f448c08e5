// `compatbench screen`: PRISM's interference screening (methods.md §3.1) of a planned merge of
// K fine-tunes of one base, straight from safetensors checkpoints, before merging anything.
// Tensors stream from the files a chunk at a time (pread); under mpirun they are spread
// over the ranks (largest first, each to the least-loaded rank) and the sums reduced.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/merge_config.h"
#include "app/mpi_verb.h"
#include "app/verbs.h"
#include "config/yaml_check.h"
#include "exec/signals.h"
#include "formats/safetensors.h"
#include "merging/model_merge.h"

namespace compatbench {

namespace {

struct Plan {
    std::vector<std::size_t> tensors;  // the source's in-scope floating-point tensors
    std::vector<int> owner;            // rank of each
    std::uint64_t bytes = 0;           // input bytes read by all ranks together
};

// The in-scope tensors, assigned to ranks.
Plan plan_screen(const merging::CheckpointSource& source, const std::vector<std::string>& scope,
                 std::size_t models, int ranks) {
    Plan p;
    std::vector<std::uint64_t> numel;
    for (std::size_t i = 0; i < source.size(); ++i) {
        if (!source.mergeable(i) || !merging::in_scope(source.name(i), scope)) continue;
        p.tensors.push_back(i);
        numel.push_back(source.numel(i));
        p.bytes += source.numel(i) * formats::dtype_size(source.info(i).dtype) * (models + 1);
    }
    if (p.tensors.empty())
        throw formats::FormatError(source.base_checkpoint().path() +
                                   ": no floating-point tensor in scope");
    p.owner = assign_ranks(numel, ranks);
    return p;
}

// The screening's numbers, per tensor and whole, with the per-tensor sums reduced on rank 0
// (`total`: I, D, C of each planned tensor).
struct Screened {
    merging::InterferenceSums whole;
    nlohmann::json tensors = nlohmann::json::array();
};
Screened combine(const merging::CheckpointSource& source, const Plan& plan,
                 const std::vector<double>& total) {
    Screened out;
    for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
        merging::InterferenceSums s;
        s.interference = total[3 * i];
        s.dispersion = total[3 * i + 1];
        s.cancellation = total[3 * i + 2];
        s.count = source.numel(plan.tensors[i]);
        out.whole.add(s);
        out.tensors.push_back(
            {{"name", source.name(plan.tensors[i])},
             {"numel", s.count},
             {"interference", s.mean_interference()},
             {"rho", std::isnan(s.rho()) ? nlohmann::json(nullptr) : nlohmann::json(s.rho())}});
    }
    return out;
}

void print_screen(const ScreenOptions& o, const Screened& r, const Plan& plan, double seconds,
                  int ranks) {
    const int k = static_cast<int>(o.models.size());
    const auto& whole = r.whole;
    const double score = merging::screening_score(whole.mean_interference(), k, o.coef);
    const char* verdict = score > o.threshold ? "destructive" : "harmless";
    if (o.json) {
        const nlohmann::json j = {{"k", k},
                                  {"coef", o.coef},
                                  {"interference", whole.mean_interference()},
                                  {"rho", std::isnan(whole.rho()) ? nlohmann::json(nullptr)
                                                                  : nlohmann::json(whole.rho())},
                                  {"score", score},
                                  {"threshold", o.threshold},
                                  {"verdict", verdict},
                                  {"tensors", r.tensors},
                                  {"bytes", plan.bytes},
                                  {"seconds", seconds},
                                  {"ranks", ranks}};
        std::cout << j.dump() << "\n";
        return;
    }
    std::printf("%-60s %14s %14s %8s\n", "tensor", "numel", "interference", "rho");
    for (const auto& t : r.tensors)
        std::printf("%-60s %14llu %14.6g %8.4f\n", t["name"].get<std::string>().c_str(),
                    static_cast<unsigned long long>(t["numel"].get<std::uint64_t>()),
                    t["interference"].get<double>(),
                    t["rho"].is_null() ? NAN : t["rho"].get<double>());
    std::printf("\nK = %d, c = %g, %zu tensors, %llu coordinates\n", k, o.coef, plan.tensors.size(),
                static_cast<unsigned long long>(whole.count));
    std::printf("interference (mean) %.6g, rho %.4f, score c*sqrt(I/K) = %.6g\n",
                whole.mean_interference(), whole.rho(), score);
    std::printf("threshold %.6g: %s\n", o.threshold, verdict);
    std::printf("read %.3f GB in %.3f s on %d rank(s): %.2f GB/s\n",
                static_cast<double>(plan.bytes) / 1e9, seconds, ranks,
                static_cast<double>(plan.bytes) / 1e9 / seconds);
}

// A scalar parameter of a mergekit merge for the screening: the model's own, else the
// merge's, else `fallback` (gradients and filters give no single value: refused).
double scalar_of(const MergeSpec& spec, const merging::mergekit::Parameters* own,
                 const std::string& key, double fallback) {
    for (const auto* p : {own, &spec.config.parameters}) {
        if (!p || !p->count(key)) continue;
        const auto& setting = p->at(key);
        if (setting.kind == merging::mergekit::Setting::Kind::gradient ||
            setting.kind == merging::mergekit::Setting::Kind::filters)
            throw ConfigError(
                spec.file, key,
                "screening takes one value of " + key + ", not a gradient or filters");
        return setting.number;
    }
    return fallback;
}

// The coefficient c on the mean task vector of the merge a mergekit YAML defines, with one
// weight w for every model: θ0 + λ Σ w τ_i = θ0 + (λ · w · K) τ̄, and with normalize
// θ0 + λ Σ w τ_i / Σ w = θ0 + λ τ̄ (w cancels). So two YAMLs whose merges are equal screen
// alike (docs/mergekit.md "Screening a merge YAML").
double mergekit_coef(const MergeSpec& spec, std::size_t k) {
    const auto* def = merging::mergekit::find_method(spec.config.method);
    if (def->op != merging::Method::task_arithmetic && def->op != merging::Method::generalized)
        throw ConfigError(spec.file, "merge_method",
                          spec.config.method +
                              " is not a sum of task vectors: screen its models "
                              "with --base, --models and --coef");
    std::optional<double> w;
    for (const auto& src : spec.config.listed) {
        if (src.model == spec.config.base) continue;
        const double wi = scalar_of(spec, &src.parameters, "weight", 1.0);
        if (w && *w != wi)
            throw ConfigError(spec.file, "weight",
                              "screening reads the mean task vector: the models' weights differ");
        w = wi;
    }
    const bool normalize = scalar_of(spec, nullptr, "normalize", def->normalize) != 0;
    const double lambda = scalar_of(spec, nullptr, "lambda", 1.0);
    return normalize ? lambda : lambda * w.value_or(1.0) * static_cast<double>(k);
}

// The merge a merge YAML describes: its base, the models besides it, the tensors it merges
// (compatbench's own operators: their scope) and the coefficient on its mean task vector.
// Slices describe no single screening: refused.
ScreenOptions from_merge_yaml(ScreenOptions o) {
    if (!o.base.empty() || !o.models.empty() || !o.scope.empty() || o.coef_given)
        throw std::invalid_argument(
            "a merge YAML gives the base, the models, the scope and "
            "the coefficient: --base, --models, --scope and --coef "
            "go without it");
    const MergeSpec spec = parse_merge_spec(o.config);
    if (!spec.config.base)
        throw ConfigError(spec.file, "base_model", "screening needs a base_model");
    if (!spec.config.slices.empty())
        throw ConfigError(spec.file, "slices",
                          "screening reads merges of whole models, not slices");
    if (!spec.loras.empty())
        throw ConfigError(spec.file, "models",
                          "screening reads checkpoints as they are: a LoRA reference "
                          "(BASE+ADAPTER) is applied by merge only; screen the adapted model");
    o.base = spec.config.models[*spec.config.base];
    o.models = merged_model_paths(spec);
    o.scope = spec.scope;
    o.coef = spec.mergekit ? mergekit_coef(spec, o.models.size()) : spec.params.coef;
    return o;
}

}  // namespace

int verb_screen(const ScreenOptions& options) {
    return with_mpi("screen", [&](const comm::Comm& comm) {
        const int rank = comm.rank(), size = comm.size();
        const ScreenOptions o = options.config.empty() ? options : from_merge_yaml(options);
        if (o.base.empty() || o.models.empty())
            throw std::invalid_argument("give a merge YAML, or --base and --models");
        const auto base = formats::Checkpoint::open(o.base);
        std::vector<formats::Checkpoint> models;
        for (const auto& m : o.models) models.push_back(formats::Checkpoint::open(m));
        const merging::CheckpointSource source(base, models, o.scope, /*any_float_dtype=*/true);
        const Plan plan = plan_screen(source, o.scope, models.size(), size);
        const auto t0 = std::chrono::steady_clock::now();
        // Per tensor: sums of I, D, C (zeros on ranks that do not own it), then reduced.
        std::vector<double> total(3 * plan.tensors.size(), 0.0);
        comm::agree(comm, [&] {  // a rank that fails to read leaves none waiting in the sum
            for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
                if (plan.owner[i] != rank) continue;
                const auto s = source.interference(plan.tensors[i]);
                total[3 * i] = s.interference;
                total[3 * i + 1] = s.dispersion;
                total[3 * i + 2] = s.cancellation;
            }
        });
        comm.reduce_sum(total);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (rank == 0) print_screen(o, combine(source, plan, total), plan, seconds, size);
        return kExitOk;
    });
}

}  // namespace compatbench
