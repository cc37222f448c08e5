// `compatbench merge CONFIG.yaml --out DIR`: merges checkpoints from a mergekit YAML
// (docs/mergekit.md: mergekit's methods computed as mergekit computes them; compatbench's
// own operators of methods.md §3.2), streaming tensor by tensor from the files (read a
// chunk at a time) and writing each merged tensor at its place in the output (sharded past
// the shard size), so memory stays at a few tensors. Under mpirun the tensors are spread over
// the ranks. The output is written into a staging folder beside --out and moved into place
// only when complete, with the donor's config.json, generation_config.json and tokenizer
// files; an --out that is, holds or lies inside an input is refused before anything is
// written, and an existing one is replaced whole only with --replace.
#include <mpi.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/merge_config.h"
#include "app/tensor_ranks.h"
#include "app/verbs.h"
#include "config/config.h"
#include "exec/signals.h"
#include "formats/layout.h"
#include "formats/staged_folder.h"
#include "merging/checkpoint_merge.h"

namespace compatbench {

namespace {

namespace fs = std::filesystem;
namespace mk = merging::mergekit;

// The checkpoints of a merge and the source over them: mergekit's methods planned tensor by
// tensor (slices, per-tensor parameters), compatbench's own over the base's tensors.
struct Inputs {
    std::vector<formats::Checkpoint> all;     // spec.config.models, in order
    std::vector<formats::Checkpoint> merged;  // compatbench's own: the models besides the base
    std::unique_ptr<merging::CheckpointSource> source;
    mk::Plan plan;
};

int layers_of(const std::string& path, const formats::Checkpoint& c) {
    const fs::path config = fs::path(path) / "config.json";
    if (fs::is_directory(path) && fs::exists(config)) {
        std::ifstream in(config);
        const auto j = nlohmann::json::parse(in, nullptr, false);
        for (const char* key : {"num_hidden_layers", "n_layer"})
            if (j.is_object() && j.contains(key) && j[key].is_number_integer())
                return j[key].get<int>();
    }
    int layers = 0;
    for (const auto& name : c.names())
        if (const auto l = mk::layer_of(name)) layers = std::max(layers, *l + 1);
    return layers;
}

Inputs open_inputs(const MergeSpec& spec) {
    Inputs in;
    if (!spec.mergekit) {
        in.all.push_back(formats::Checkpoint::open(spec.config.models[*spec.config.base]));
        for (const auto& m : merged_model_paths(spec))
            in.merged.push_back(formats::Checkpoint::open(m));
        if (in.merged.empty())
            throw ConfigError(spec.file, "models", "no model to merge besides the base");
        in.source = std::make_unique<merging::CheckpointSource>(in.all.front(), in.merged,
                                                                std::vector<std::string>{}, true);
        return in;
    }
    std::vector<mk::ModelInfo> info;
    std::vector<const formats::Checkpoint*> ptrs;
    for (const auto& path : spec.config.models) in.all.push_back(formats::Checkpoint::open(path));
    for (std::size_t i = 0; i < in.all.size(); ++i) {
        info.push_back({in.all[i].names(), layers_of(spec.config.models[i], in.all[i])});
        ptrs.push_back(&in.all[i]);
    }
    try {
        in.plan = mk::plan(spec.config, info);
    } catch (const std::invalid_argument& e) {
        throw ConfigError(spec.file, "", e.what());
    }
    in.source = std::make_unique<merging::CheckpointSource>(ptrs, in.plan.tensors, true);
    return in;
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

// The output's layout: every planned tensor at its place, merged ones in `out_dtype`.
formats::CheckpointLayout output_layout(const MergeSpec& spec,
                                        const merging::CheckpointSource& source,
                                        const fs::path& dir, std::uint64_t shard_bytes) {
    formats::CheckpointLayout layout = merging::merged_layout(source, spec.out_dtype);
    layout.set_metadata("merge_method", spec.config.method);
    layout.set_metadata("parameters", spec.parameters.dump());
    layout.set_metadata("base_model",
                        spec.config.base ? spec.config.models[*spec.config.base] : "");
    std::vector<std::string> models;  // every input besides the base
    for (std::size_t i = 0; i < spec.config.models.size(); ++i)
        if (i != spec.config.base) models.push_back(spec.config.models[i]);
    layout.set_metadata("models", nlohmann::json(models).dump());
    layout.set_metadata("format", "pt");
    layout.plan(dir.string(), shard_bytes);
    return layout;
}

// mergekit's _copy_tokenizer file list (generation_config.json among them).
const char* const kTokenizerFiles[] = {"tokenizer_config.json", "special_tokens_map.json",
                                       "tokenizer.json",        "tokenizer.model",
                                       "added_tokens.json",     "merges.txt",
                                       "chat_template.jinja",   "generation_config.json",
                                       "chat_template.json",    "vocab.json"};

// The folder config and tokenizer files come from: tokenizer_source, else the base, else
// the first model (none when that is a single file). A tokenizer that differs between the
// models would need mergekit's embedding permutation: refused.
std::optional<fs::path> donor_folder(const MergeSpec& spec, bool copy_tokenizer) {
    const std::size_t d = spec.donor.value_or(spec.config.base.value_or(0));
    const fs::path donor = spec.config.models[d];
    if (!fs::is_directory(donor)) return std::nullopt;
    if (!copy_tokenizer || !fs::exists(donor / "tokenizer.json")) return donor;
    const auto bytes = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string mine = bytes(donor / "tokenizer.json");
    for (const auto& m : spec.config.models)
        if (fs::exists(fs::path(m) / "tokenizer.json") &&
            bytes(fs::path(m) / "tokenizer.json") != mine)
            throw ConfigError(spec.file, "tokenizer_source",
                              m + "/tokenizer.json differs from " + donor.string() +
                                  "/tokenizer.json: merging models with different vocabularies "
                                  "(mergekit's embedding permutation) is not supported");
    return donor;
}

// config.json (its layer count set to the output's when slices changed it, its dtype to the
// output's when given) and, with `copy_tokenizer`, the tokenizer files, as mergekit does.
void write_side_files(const MergeSpec& spec, const mk::Plan& plan, const fs::path& donor,
                      const fs::path& dir, bool copy_tokenizer) {
    if (fs::exists(donor / "config.json")) {
        std::ifstream in(donor / "config.json");
        nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
        if (config.is_discarded())
            throw formats::FormatError((donor / "config.json").string() + ": not valid JSON");
        for (const char* key : {"num_hidden_layers", "n_layer"})
            if (plan.layers_changed && config.contains(key)) config[key] = plan.layers;
        if (spec.out_dtype)
            config["torch_dtype"] = *spec.out_dtype == formats::DType::F32   ? "float32"
                                    : *spec.out_dtype == formats::DType::F16 ? "float16"
                                                                             : "bfloat16";
        std::ofstream(dir / "config.json") << config.dump(2) << "\n";
    }
    if (!copy_tokenizer || !fs::exists(donor / "tokenizer_config.json") ||
        !(fs::exists(donor / "tokenizer.json") || fs::exists(donor / "tokenizer.model")))
        return;
    for (const char* f : kTokenizerFiles)
        if (fs::exists(donor / f)) fs::copy_file(donor / f, dir / f);
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
    std::printf("%s of %zu models into %s: %zu tensors in %zu file(s)\n",
                spec.config.method.c_str(), spec.config.models.size(), out.c_str(), tensors, files);
    if (!spec.scope.empty()) std::printf("scope: %zu patterns\n", spec.scope.size());
    std::printf(
        "update norm %.2f%% of the mean task vector's; %.4f%% of in-scope coordinates changed",
        t.update_pct(), 100.0 * t.keep_fraction());
    if (rho != 1.0 || spec.params.method == merging::Method::prism)
        std::printf("; merge rho %.4f", rho);
    std::printf(
        "\nread %.3f GB in %.2f s on %d rank(s): %.2f GB/s; per rank at most: peak RSS %.0f MB "
        "(with mapped file pages), anonymous memory %.0f MB\n",
        static_cast<double>(input_bytes) / 1e9, seconds, ranks,
        static_cast<double>(input_bytes) / 1e9 / seconds, max_rss[0], max_rss[1]);
}

// Bytes per shard: --out-shard-size (mergekit's K/M/B suffixes, powers of 1000), else the
// YAML's shard_mb (MiB), else 4 GiB.
std::uint64_t shard_bytes(const MergeSpec& spec, const std::string& option) {
    if (!option.empty() && spec.shard_mb)
        throw ConfigError(spec.file, "shard_mb", "given twice: here and as --out-shard-size");
    if (option.empty()) return static_cast<std::uint64_t>(spec.shard_mb.value_or(4096) * 1048576.0);
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(option, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    const std::string suffix = option.substr(used);
    const double scale = suffix.empty()  ? 1
                         : suffix == "K" ? 1e3
                         : suffix == "M" ? 1e6
                         : suffix == "B" ? 1e9
                                         : -1;
    if (used == 0 || scale < 0 || !(v > 0))
        throw std::invalid_argument("--out-shard-size " + option +
                                    ": a positive size is expected, e.g. 5B, 500M, 2000000");
    return static_cast<std::uint64_t>(v * scale);
}

// Every input path and the YAML itself: what --out must stay clear of.
std::vector<fs::path> input_paths(const MergeSpec& spec) {
    std::vector<fs::path> out(spec.config.models.begin(), spec.config.models.end());
    out.push_back(spec.file);
    return out;
}

}  // namespace

int verb_merge(const MergeOptions& opt) {
    return with_mpi("merge", [&](int rank, int size) {
        const MergeSpec spec = parse_merge_spec(opt.config);
        if (rank == 0)
            for (const auto& w : spec.warnings) std::cerr << "compatbench: warning: " << w << "\n";
        const auto t0 = std::chrono::steady_clock::now();
        // Checks every rank makes alike, before any collective call.
        formats::check_output_clear_of_inputs(opt.out, input_paths(spec), "--out");
        if (fs::exists(fs::symlink_status(opt.out)) && !opt.replace)
            throw formats::FormatError(opt.out +
                                       ": the output folder exists; pass --replace to "
                                       "replace it whole, or choose another folder");
        const std::uint64_t shard = shard_bytes(spec, opt.shard_size);
        const Inputs in = open_inputs(spec);
        const auto donor = donor_folder(spec, opt.copy_tokenizer);
        const merging::CheckpointSource& source = *in.source;
        std::vector<std::uint64_t> numel;
        std::uint64_t input_bytes = 0;
        for (std::size_t i = 0; i < source.size(); ++i) {
            numel.push_back(source.numel(i));
            if (source.mergeable(i))
                input_bytes +=
                    source.numel(i) * formats::dtype_size(source.info(i).dtype) * (in.all.size());
        }
        const std::vector<int> owner = assign_ranks(numel, size);
        try {  // from here an error on one rank ends every rank (no collective waits on it)
            merging::ModelMerge merge(spec.params, spec.scope);
            const double rho = merge_rho(merge, source, owner, rank);
            std::unique_ptr<formats::StagedFolder> staged;
            if (rank == 0) staged = std::make_unique<formats::StagedFolder>(opt.out, opt.replace);
            const fs::path dir = formats::StagedFolder::staging_path(opt.out);
            formats::CheckpointLayout layout = output_layout(spec, source, dir, shard);
            if (rank == 0) layout.create();
            MPI_Barrier(MPI_COMM_WORLD);
            AnonPeak anon;
            anon.sample();
            merging::write_merged(merge, source, rho, layout, owner, rank, [&] { anon.sample(); });
            const auto local = merge.totals().values();
            std::array<double, 6> total{};
            MPI_Reduce(local.data(), total.data(), 6, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            double rss[2] = {peak_rss_mb(), anon.mb}, max_rss[2] = {0, 0};
            MPI_Reduce(rss, max_rss, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank != 0) return kExitOk;
            if (donor) write_side_files(spec, in.plan, *donor, dir, opt.copy_tokenizer);
            staged->commit();
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            print_merge(spec, merging::MergeTotals::from_values(total), rho, layout.size(),
                        layout.files().size(), opt.out, input_bytes, seconds, size, max_rss);
            return kExitOk;
        } catch (const std::exception& e) {
            if (size == 1) throw;
            std::cerr << "compatbench: merge: rank " << rank << ": " << e.what() << "\n";
            MPI_Abort(MPI_COMM_WORLD, kExitBadInput);
            return kExitBadInput;
        }
    });
}

}  // namespace compatbench
