// `compatbench advise merge`: which fine-tunes of one base to merge, decided before merging
// (methods.md §3.4). One pass over the base and the M fine-tunes (each byte read once; under
// mpirun the tensors are spread over the ranks and the sums reduced) gives the screening
// statistics of every subset of K; the subsets are ranked by the screening score, flagged
// above the threshold, and each gets an operator: the plain mean below, PRISM above.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/advice_io.h"
#include "app/mpi_verb.h"
#include "app/verbs.h"
#include "config/yaml_check.h"
#include "exec/signals.h"
#include "formats/json_file.h"
#include "formats/safetensors.h"
#include "merging/model_merge.h"
#include "merging/subset_screen.h"

namespace compatbench {

namespace {

namespace fs = std::filesystem;

constexpr double kFarFromBase = 1.0;  // ‖τ‖ / ‖θ0‖ above which a fine-tune is named

// The base and fine-tunes of a checkpoint_set manifest (one backbone, or the one named).
void from_manifest(AdviseMergeOptions& o) {
    const YamlChecker yc(o.manifest);
    const YAML::Node root = load_manifest_yaml(o.manifest);
    const auto resolve = [&](const YAML::Node& n, const std::string& key) {
        return manifest_path(yc, n, key, yc.as_string(n, key), o.manifest, "--base and --models");
    };
    std::map<std::string, std::string> bases;
    for (std::size_t i = 0; i < root["backbones"].size(); ++i) {
        const YAML::Node b = root["backbones"][i];
        bases[yc.as_string(b["name"], "backbones.name")] =
            resolve(b["checkpoint"], "backbones." + std::to_string(i) + ".checkpoint");
    }
    if (o.backbone.empty() && bases.size() == 1) o.backbone = bases.begin()->first;
    if (!bases.count(o.backbone))
        throw ConfigError(o.manifest, "backbones",
                          o.backbone.empty() ? "several backbones: name one with --backbone"
                                             : "no backbone named '" + o.backbone + "'");
    o.base = bases.at(o.backbone);
    for (std::size_t i = 0; i < root["finetunes"].size(); ++i) {
        const YAML::Node f = root["finetunes"][i];
        if (yc.as_string(f["base"], "finetunes.base") != o.backbone) continue;
        o.names.push_back(yc.as_string(f["name"], "finetunes.name"));
        o.models.push_back(
            resolve(f["checkpoint"], "finetunes." + std::to_string(i) + ".checkpoint"));
    }
}

// A model's name: the manifest's, else the file's stem or the folder's name.
std::string name_of(const std::string& path) {
    const fs::path p = fs::path(path).lexically_normal();
    const fs::path leaf = p.has_filename() ? p : p.parent_path();
    return fs::is_directory(path) ? leaf.filename().string() : leaf.stem().string();
}

merging::SubsetScreen screen_all(const merging::CheckpointSource& source,
                                 const std::vector<std::string>& scope, std::size_t m,
                                 const comm::Comm& comm, std::uint64_t& bytes) {
    std::vector<std::size_t> tensors;
    std::vector<std::uint64_t> numel;
    for (std::size_t i = 0; i < source.size(); ++i) {
        if (!source.mergeable(i) || !merging::in_scope(source.name(i), scope)) continue;
        tensors.push_back(i);
        numel.push_back(source.numel(i));
        bytes += source.numel(i) * formats::dtype_size(source.info(i).dtype) * (m + 1);
    }
    if (tensors.empty())
        throw formats::FormatError(source.base_checkpoint().path() +
                                   ": no floating-point tensor in scope");
    const auto owner = assign_ranks(numel, comm.size());
    merging::SubsetScreen screen(m);
    comm::agree(comm, [&] {
        for (std::size_t t = 0; t < tensors.size(); ++t)
            if (owner[t] == comm.rank()) screen.add(*source.blocks(tensors[t]));
    });
    auto total = screen.packed();
    comm.reduce_sum(total);
    merging::SubsetScreen all(m);
    all.add_packed(total);
    return all;
}

// "a, b, c" of a merge's members (names may hold '+', as the zoo's fine-tunes do).
std::string joined(const nlohmann::json& members) {
    std::string out;
    for (const auto& n : members) {
        if (!out.empty()) out += ", ";
        out += n.get<std::string>();
    }
    return out;
}

// Each fine-tune's ‖τ‖ / ‖θ0‖ (methods.md §3.4); one farther from the base than the base's
// own norm is named on stderr: it may be another base's model, whose task vector would be
// mostly the two bases' difference.
nlohmann::json relative_norms(const AdviseMergeOptions& o, const merging::SubsetScreen& screen) {
    nlohmann::json out = nlohmann::json::array();  // in the order of "models"
    for (std::size_t a = 0; a < o.models.size(); ++a) {
        const double r = screen.relative_norm(a);
        out.push_back(finite_or_null(r));
        if (r > kFarFromBase)
            std::fprintf(stderr,
                         "compatbench: advise merge: warning: %s differs from the base %s by "
                         "%.2fx the base's own norm (in scope); a fine-tune usually moves far "
                         "less: is it a fine-tune of another base?\n",
                         o.models[a].c_str(), o.base.c_str(), r);
    }
    return out;
}

nlohmann::json advice_json(const AdviseMergeOptions& o,
                           const std::vector<merging::RankedSubset>& ranked, bool conflicts) {
    nlohmann::json merges = nlohmann::json::array();
    for (const auto& r : ranked) {
        nlohmann::json members = nlohmann::json::array();
        for (std::size_t i : r.members) members.push_back(o.names[i]);
        const bool flagged = r.score > o.threshold;
        merges.push_back(
            {{"members", members},
             {"interference", finite_or_null(r.sums.mean_interference())},
             {"dispersion", finite_or_null(r.sums.mean_dispersion())},
             {"rho", finite_or_null(r.sums.rho())},
             {"sign_conflict", conflicts ? finite_or_null(r.sums.sign_conflict()) : nullptr},
             {"score", finite_or_null(r.score)},
             {"flagged", flagged},
             {"operator", flagged ? "prism" : "mean"}});
    }
    return {{"kind", "merge"}, {"base", o.base},   {"models", o.names},        {"k", o.k},
            {"coef", o.coef},  {"scope", o.scope}, {"threshold", o.threshold}, {"merges", merges}};
}

void write_csv(const std::string& path, const nlohmann::json& j) {
    std::ostringstream out;
    out << "rank,members,interference,dispersion,rho,sign_conflict,score,flagged,operator\n";
    std::size_t rank = 0;
    for (const auto& m : j["merges"]) {
        const std::string members = joined(m["members"]);
        out << ++rank << ",\"" << members << "\"," << csv_cell(m["interference"]) << ","
            << csv_cell(m["dispersion"]) << "," << csv_cell(m["rho"]) << ","
            << csv_cell(m["sign_conflict"]) << "," << csv_cell(m["score"]) << ","
            << (m["flagged"].get<bool>() ? 1 : 0) << "," << m["operator"].get<std::string>()
            << "\n";
    }
    formats::write_text_file(path, out.str());
}

void print_advice(const nlohmann::json& j, std::size_t top, std::uint64_t bytes, double seconds,
                  int ranks) {
    const auto& merges = j["merges"];
    std::size_t flagged = 0;
    for (const auto& m : merges) flagged += m["flagged"].get<bool>();
    std::printf("%zu merges of K = %d from %zu fine-tunes, c = %g, threshold %g: %zu flagged\n",
                merges.size(), j["k"].get<int>(), j["models"].size(), j["coef"].get<double>(),
                j["threshold"].get<double>(), flagged);
    std::printf("%4s  %-48s %12s %7s %8s %12s  %s\n", "rank", "members", "interference", "rho",
                "conflict", "score", "advice");
    for (std::size_t i = 0; i < merges.size() && i < top; ++i) {
        const auto& m = merges[i];
        const std::string members = joined(m["members"]);
        const auto v = [](const nlohmann::json& x) { return x.is_null() ? NAN : x.get<double>(); };
        std::printf(
            "%4zu  %-48s %12.6g %7.4f %8.4f %12.6g  %s\n", i + 1, members.c_str(),
            v(m["interference"]), v(m["rho"]), v(m["sign_conflict"]), v(m["score"]),
            m["flagged"].get<bool>() ? "flagged: merge with PRISM" : "merge: the plain mean");
    }
    if (merges.size() > top)
        std::printf("... %zu more (--top, --csv, --json)\n", merges.size() - top);
    std::printf("read %.3f GB once in %.3f s on %d rank(s)\n", static_cast<double>(bytes) / 1e9,
                seconds, ranks);
}

}  // namespace

int verb_advise_merge(const AdviseMergeOptions& options) {
    return with_mpi("advise merge", [&](const comm::Comm& comm) {
        const int rank = comm.rank(), size = comm.size();
        AdviseMergeOptions o = options;
        if (!o.manifest.empty() && !o.models.empty())
            throw std::invalid_argument(
                "--manifest gives the base and the fine-tunes: --models goes without it");
        if (!o.manifest.empty()) from_manifest(o);
        if (o.base.empty()) throw std::invalid_argument("give --base and --models, or --manifest");
        if (o.models.size() < 2)
            throw std::invalid_argument("advice needs at least 2 fine-tunes; got " +
                                        std::to_string(o.models.size()));
        if (o.k < 2 || o.k > static_cast<int>(o.models.size()))
            throw std::invalid_argument("--k " + std::to_string(o.k) + ": between 2 and the " +
                                        std::to_string(o.models.size()) + " fine-tunes");
        if (o.names.empty())
            for (const auto& m : o.models) o.names.push_back(name_of(m));
        const auto base = formats::Checkpoint::open(o.base);
        std::vector<formats::Checkpoint> models;
        for (const auto& m : o.models) {
            formats::check_same_config(o.base, m);
            models.push_back(formats::Checkpoint::open(m));
        }
        const merging::CheckpointSource source(base, models, o.scope, /*any_float_dtype=*/true);
        const auto t0 = std::chrono::steady_clock::now();
        std::uint64_t bytes = 0;
        const auto screen = screen_all(source, o.scope, models.size(), comm, bytes);
        if (rank != 0) return kExitOk;
        const auto ranked = merging::rank_subsets(screen, static_cast<std::size_t>(o.k), o.coef);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        auto j = advice_json(o, ranked, screen.has_sign_conflicts(static_cast<std::size_t>(o.k)));
        j["relative_norm"] = relative_norms(o, screen);
        j["bytes"] = bytes;
        j["seconds"] = seconds;  // the pass and the ranking (rank 0's)
        j["ranks"] = size;
        if (!o.csv.empty()) write_csv(o.csv, j);
        if (!o.json.empty()) write_json_file(o.json, j);
        print_advice(j, o.top, bytes, seconds, size);
        return kExitOk;
    });
}

}  // namespace compatbench
