// `compatbench merge CONFIG.yaml --out DIR`: merges checkpoints from a mergekit YAML
// (docs/mergekit.md: mergekit's methods computed as mergekit computes them; compatbench's
// own operators of methods.md §3.2), streaming tensor by tensor from the files (read a
// chunk at a time) and writing each merged tensor at its place in the output (sharded past
// the shard size), so memory stays at a few tensors. Under mpirun the tensors are spread over
// the ranks. The output is written into a staging folder beside --out and moved into place
// only when complete, with the donor's config.json, generation_config.json and tokenizer
// files; an --out that is, holds or lies inside an input is refused before anything is
// written, and an existing one is replaced whole only with --replace.
#include <sys/resource.h>
#include <algorithm>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "app/merge_config.h"
#include "app/merge_files.h"
#include "app/mpi_verb.h"
#include "app/verbs.h"
#include "config/config.h"
#include "exec/signals.h"
#include "formats/layout.h"
#include "formats/lora.h"
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
                                        const fs::path& dir, std::uint64_t shard_bytes,
                                        const std::string& arithmetic) {
    formats::CheckpointLayout layout =
        merging::merged_layout(source, spec.out_dtype_given ? spec.out_dtype : std::nullopt);
    layout.set_metadata("merge_method", spec.config.method);
    layout.set_metadata("arithmetic", arithmetic);
    layout.set_metadata("parameters", spec.parameters.dump());
    std::vector<std::string> named = spec.config.models;  // a LoRA model as BASE+ADAPTER
    for (const auto& l : spec.loras) named[l.model] = l.base + "+" + l.adapter;
    layout.set_metadata("base_model", spec.config.base ? named[*spec.config.base] : "");
    std::vector<std::string> models;  // every input besides the base
    for (std::size_t i = 0; i < named.size(); ++i)
        if (i != spec.config.base) models.push_back(named[i]);
    layout.set_metadata("models", nlohmann::json(models).dump());
    layout.set_metadata("format", "pt");
    layout.plan(dir.string(), shard_bytes);
    return layout;
}

// PRISM's ρ-gate needs the merge's ρ over the in-scope tensors first (§3.2): each rank
// measures its tensors and the sums are combined. Other operators do not read it.
double merge_rho(merging::ModelMerge& merge, const merging::CheckpointSource& source,
                 std::span<const std::size_t> mine, const comm::Comm& comm) {
    if (!merge.needs_rho()) return 1.0;
    for (const std::size_t i : mine) merge.measure(source, i);
    merging::InterferenceSums total;
    double sums[2] = {merge.sums().interference, merge.sums().cancellation};
    comm.all_sum(sums);
    total.interference = sums[0];
    total.cancellation = sums[1];
    return merging::ModelMerge::rho_of(total);
}

void print_merge(const MergeSpec& spec, const merging::MergeTotals& t, double rho,
                 std::size_t tensors, std::size_t files, const std::string& out,
                 std::uint64_t input_bytes, double seconds, int ranks, const double* max_rss) {
    const std::vector<bool> merged = referenced_models(spec);
    std::printf("%s of %zu models into %s: %zu tensors in %zu file(s)\n",
                spec.config.method.c_str(),
                static_cast<std::size_t>(std::count(merged.begin(), merged.end(), true)),
                out.c_str(), tensors, files);
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

// Every input and the YAML itself, and each file inside an input folder (a Hugging Face
// cache links them into its blobs/ folder): what --out and its staging must stay clear of.
std::vector<fs::path> input_paths(const MergeSpec& spec) {
    std::vector<fs::path> models(spec.config.models.begin(), spec.config.models.end());
    for (const auto& l : spec.loras) {  // BASE+ADAPTER: both
        models[l.model] = l.base;
        models.push_back(l.adapter);
    }
    std::vector<fs::path> out = models;
    out.push_back(spec.file);
    for (const auto& m : models)
        if (fs::is_directory(m))
            for (const auto& e : fs::directory_iterator(m)) out.push_back(e.path());
    return out;
}

// Where the models given as BASE+ADAPTER are written with their adapter applied, beside
// --out (mergekit: its LoRA merge cache): removed when the merge ends, and by the next merge
// into the same --out after a kill.
fs::path lora_scratch(const std::string& out) {
    const fs::path target = fs::path(out).lexically_normal();
    const fs::path name = target.has_filename() ? target : target.parent_path();
    std::string scratch = name.filename().string();
    scratch.insert(scratch.begin(), '.');
    scratch.append(".lora");
    return name.parent_path() / scratch;
}

// Rank 0 applies each adapter (formats/lora.h) into the scratch folder; every rank then
// reads those models from there.
struct LoraScratch {
    fs::path dir;
    bool owner = false;
    LoraScratch(const MergeSpec& spec, const std::string& out, int rank)
        : dir(lora_scratch(out)), owner(rank == 0 && !spec.loras.empty()) {
        if (!owner) return;
        fs::remove_all(dir);
        try {  // a throwing constructor runs no destructor: a partial scratch goes here
            for (const auto& l : spec.loras) {
                const auto base = formats::Checkpoint::open(l.base);
                formats::write_lora_merged(base, formats::read_lora_adapter(l.adapter, base),
                                           (dir / std::to_string(l.model)).string());
            }
        } catch (...) {
            std::error_code ignored;
            fs::remove_all(dir, ignored);
            throw;
        }
    }
    LoraScratch(const LoraScratch&) = delete;
    LoraScratch& operator=(const LoraScratch&) = delete;
    ~LoraScratch() {
        std::error_code ignored;
        if (owner) fs::remove_all(dir, ignored);
    }
};

// Everything a merge needs before its first collective call, the same on every rank.
struct Prepared {
    MergeSpec spec;
    Inputs in;
    std::uint64_t shard = 0, input_bytes = 0;
    std::vector<int> owner;
    std::string arithmetic = "exact";  // dtype: mergekit's methods round as torch does
};

// The merge YAML and --out checked; nothing read of the models yet.
Prepared prepare_spec(const MergeOptions& opt) {
    Prepared p{parse_merge_spec(opt.config), {}, 0, 0, {}};
    const std::vector<fs::path> inputs = input_paths(p.spec);
    formats::StagedFolder::check_clear_of_inputs(opt.out, inputs, "--out");
    if (!p.spec.loras.empty())
        formats::check_output_clear_of_inputs(lora_scratch(opt.out), inputs,
                                              "--out's LoRA scratch");
    if (fs::exists(fs::symlink_status(opt.out)) && !opt.replace)
        throw formats::FormatError(opt.out +
                                   ": the output folder exists; pass --replace to "
                                   "replace it whole, or choose another folder");
    p.shard = shard_bytes(p.spec, opt.shard_size);
    p.arithmetic = opt.arithmetic.empty() ? (p.spec.mergekit ? "dtype" : "exact") : opt.arithmetic;
    if (!p.spec.mergekit && p.arithmetic == "dtype")
        throw ConfigError(p.spec.file, "merge_method",
                          "--arithmetic dtype: " + p.spec.config.method +
                              " is compatbench's own operator, computed exactly only");
    return p;
}

// The models opened and planned, the tensors given to ranks.
void prepare_inputs(Prepared& p, const MergeOptions& opt, int ranks) {
    for (const auto& l : p.spec.loras)
        p.spec.config.models[l.model] = (lora_scratch(opt.out) / std::to_string(l.model)).string();
    p.in = open_inputs(p.spec);
    p.in.source->set_merge_dtype(p.spec.dtype);
    if (p.arithmetic == "dtype") p.in.source->compute_in_dtype();
    check_tokenizer(p.spec, opt.copy_tokenizer);
    const merging::CheckpointSource& source = *p.in.source;
    std::vector<std::uint64_t> numel;
    // Every input checkpoint is read for a mergeable tensor: mergekit's list (`all`), or the
    // base (`all`) and the merged models of compatbench's own operators.
    const std::size_t inputs = p.in.all.size() + p.in.merged.size();
    for (std::size_t i = 0; i < source.size(); ++i) {
        numel.push_back(source.numel(i));
        if (source.mergeable(i))
            p.input_bytes += source.numel(i) * formats::dtype_size(source.info(i).dtype) * inputs;
    }
    p.owner = assign_ranks(numel, ranks);
}

// The merge into the staging folder, moved into place by rank 0 once every rank is done.
int merge_and_write(const MergeOptions& opt, const Prepared& p, formats::StagedFolder* staged,
                    const comm::Comm& comm, std::chrono::steady_clock::time_point t0) {
    const int rank = comm.rank();
    const merging::CheckpointSource& source = *p.in.source;
    // The update norm and the share changed are printed to two decimals: summed in 8 lanes.
    merging::ModelMerge merge(p.spec.params, p.spec.scope, merging::Sums::lanes);
    std::vector<std::size_t> mine;  // the tensors this rank merges and writes
    for (std::size_t i = 0; i < source.size(); ++i)
        if (p.owner[i] == rank) mine.push_back(i);
    const double rho = merge_rho(merge, source, mine, comm);
    const fs::path dir = formats::StagedFolder::staging_path(opt.out);
    formats::CheckpointLayout layout = output_layout(p.spec, source, dir, p.shard, p.arithmetic);
    if (rank == 0) layout.create();
    comm.barrier();
    AnonPeak anon;
    anon.sample();
    merging::write_merged(merge, source, rho, layout, mine, [&] { anon.sample(); });
    std::array<double, 6> total = merge.totals().values();
    comm.reduce_sum(total);
    double max_rss[2] = {peak_rss_mb(), anon.mb};
    comm.reduce_max(max_rss);
    if (rank != 0) return kExitOk;
    write_side_files(p.spec, p.in.plan, dir, opt.copy_tokenizer, opt.out);
    staged->commit();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_merge(p.spec, merging::MergeTotals::from_values(total), rho, layout.size(),
                layout.files().size(), opt.out, p.input_bytes, seconds, comm.size(), max_rss);
    return kExitOk;
}

}  // namespace

int verb_merge(const MergeOptions& opt) {
    return with_mpi("merge", [&](const comm::Comm& comm) {
        const int rank = comm.rank();
        const auto t0 = std::chrono::steady_clock::now();
        std::optional<Prepared> p;
        std::unique_ptr<formats::StagedFolder> staged;  // rank 0's: it holds --out's lock
        std::unique_ptr<LoraScratch> loras;
        const auto first = [&] {
            p.emplace(prepare_spec(opt));
            if (rank == 0) staged = std::make_unique<formats::StagedFolder>(opt.out, opt.replace);
            loras = std::make_unique<LoraScratch>(p->spec, opt.out, rank);
        };
        comm::agree(comm, first);  // an error is said once, by rank 0 (with_mpi)
        comm::agree(comm, [&] { prepare_inputs(*p, opt, comm.size()); });
        if (rank == 0)
            for (const auto& w : p->spec.warnings)
                std::cerr << "compatbench: warning: " << w << "\n";
        try {  // from here an error on one rank ends every rank (no collective waits on it)
            return merge_and_write(opt, *p, staged.get(), comm, t0);
        } catch (const std::exception& e) {
            if (comm.size() == 1) throw;
            std::cerr << "compatbench: merge: rank " << rank << ": " << e.what() << "\n";
            comm.abort(kExitBadInput);
        }
    });
}

}  // namespace compatbench
