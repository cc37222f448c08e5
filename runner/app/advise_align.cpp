// `compatbench advise align`: which vision × text encoders to align, from their exported
// probe features alone (methods.md §1): ease, ceiling, score, CKA and region of every pair,
// ranked; with --budget N, the N to align first. Each model's k-NN lists and Gram matrix
// are formed once, spread over the ranks under mpirun and gathered on rank 0.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/advice_io.h"
#include "app/mpi_verb.h"
#include "app/verbs.h"
#include "catalog/feature_catalog.h"
#include "compass/align_advice.h"
#include "config/yaml_check.h"
#include "exec/signals.h"
#include "formats/json_file.h"
#include "formats/matrix.h"

namespace compatbench {

namespace {

struct Listed {
    std::string name, modality, paradigm;
};

// The models of a feature_set manifest (its features and pairing folders into `o`).
std::vector<Listed> from_manifest(AdviseAlignOptions& o) {
    const YamlChecker yc(o.manifest);
    const YAML::Node root = load_manifest_yaml(o.manifest);
    const auto folder = [&](const char* key, const char* fallback) {
        const std::string p = root[key] ? yc.as_string(root[key], key) : fallback;
        return manifest_path(yc, root[key], key, p, o.manifest, "--features and --pairing");
    };
    o.features = folder("features", ".");
    o.pairing = folder("pairing", "pairing");
    std::vector<Listed> out;
    for (std::size_t i = 0; i < root["models"].size(); ++i) {
        const YAML::Node m = root["models"][i];
        const std::string p = "models." + std::to_string(i);
        const std::string modality = yc.as_string(m["modality"], p + ".modality");
        if (modality != "vision" && modality != "text")
            yc.fail(m["modality"], p + ".modality", "'" + modality + "': vision or text");
        out.push_back({yc.as_string(m["name"], p + ".name"),
                       yc.as_string(m["modality"], p + ".modality"),
                       m["paradigm"] ? yc.as_string(m["paradigm"], p + ".paradigm") : ""});
    }
    return out;
}

// A model's probe rows: the first n images (vision) or each one's first caption (text).
MatF probe_of(const AdviseAlignOptions& o, const Listed& m, const std::vector<int>& caption_rows,
              int n) {
    const fs::path path = fs::path(o.features) / m.name / (o.split + ".safetensors");
    if (!fs::exists(path)) throw formats::FormatError(path.string() + ": no such file");
    const auto file = formats::SafetensorsFile::open(path.string());
    const MatF all = formats::read_matrix(file, "features");
    const bool text = m.modality == "text";
    const Eigen::Index need = text ? static_cast<Eigen::Index>(*std::max_element(
                                         caption_rows.begin(), caption_rows.end())) +
                                         1
                                   : n;
    if (all.rows() < need)
        throw formats::FormatError(path.string() + ": " + std::to_string(all.rows()) +
                                   " rows; the pairing of split '" + o.split + "' needs " +
                                   std::to_string(need));
    return text ? MatF(all(caption_rows, Eigen::all)) : MatF(all.topRows(n));
}

// Rank r prepares models r, r + size, ...; rank 0 receives the rest.
std::vector<compass::PreparedModel> prepared(const AdviseAlignOptions& o,
                                             const std::vector<Listed>& models,
                                             const comm::Comm& comm) {
    const int rank = comm.rank(), size = comm.size();
    const auto caption_image = caption_image_of(o.pairing, o.split);
    int images = 0;
    for (int i : caption_image) images = std::max(images, i + 1);
    const int n = o.probe > 0 ? o.probe : images;
    const auto rows = first_caption_rows(caption_image, n);
    std::vector<compass::PreparedModel> out(models.size());
    comm::agree(comm, [&] {
        for (std::size_t i = static_cast<std::size_t>(rank); i < models.size();
             i += static_cast<std::size_t>(size))
            out[i] = compass::prepare(models[i].name, models[i].paradigm,
                                      probe_of(o, models[i], rows, n), o.k);
    });
    for (std::size_t i = 0; i < models.size(); ++i) {
        const int owner = static_cast<int>(i % static_cast<std::size_t>(size));
        if (owner == 0 || (rank != 0 && rank != owner)) continue;
        auto& m = out[i];
        if (rank == owner) {
            const long dims[3] = {m.lists.n, m.lists.k, m.gram.rows()};
            comm.send(std::span<const long>(dims), 0, 0);
            comm.send(std::span<const std::int32_t>(m.lists.index), 0, 1);
            comm.send(
                std::span<const double>(m.gram.data(), static_cast<std::size_t>(m.gram.size())), 0,
                2);
            continue;
        }
        std::vector<long> dims;
        std::vector<double> gram;
        comm.recv(dims, owner, 0);
        m = {models[i].name,
             models[i].paradigm,
             {static_cast<int>(dims[0]), static_cast<int>(dims[1]), {}},
             MatD(dims[2], dims[2])};
        comm.recv(m.lists.index, owner, 1);
        comm.recv(gram, owner, 2);
        std::copy(gram.begin(), gram.end(), m.gram.data());
    }
    return out;
}

nlohmann::json advice_json(const AdviseAlignOptions& o,
                           const std::vector<compass::AlignPairAdvice>& pairs, bool known) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const auto& p = pairs[i];
        rows.push_back({{"vision", p.vision},
                        {"text", p.text},
                        {"ease", finite_or_null(p.ease)},
                        {"ceiling", finite_or_null(p.ceiling)},
                        {"score", finite_or_null(p.score)},
                        {"cka", finite_or_null(p.cka)},
                        {"region", p.region.empty() ? nullptr : nlohmann::json(p.region)},
                        {"first", o.budget > 0 && i < static_cast<std::size_t>(o.budget)}});
    }
    return {{"kind", "align"},           {"k", o.k},
            {"ceiling_stat", o.ceiling}, {"ranked_by", known ? "score" : "ease"},
            {"budget", o.budget},        {"pairs", rows}};
}

void write_csv(const std::string& path, const nlohmann::json& j) {
    std::ostringstream out;
    out << "rank,vision,text,ease,ceiling,score,cka,region,first\n";
    std::size_t rank = 0;
    for (const auto& p : j["pairs"])
        out << ++rank << "," << csv_cell(p["vision"]) << "," << csv_cell(p["text"]) << ","
            << csv_cell(p["ease"]) << "," << csv_cell(p["ceiling"]) << "," << csv_cell(p["score"])
            << "," << csv_cell(p["cka"]) << "," << csv_cell(p["region"]) << ","
            << (p["first"].get<bool>() ? 1 : 0) << "\n";
    formats::write_text_file(path, out.str());
}

void print_advice(const nlohmann::json& j, std::size_t top, bool known, double seconds, int ranks) {
    const auto& pairs = j["pairs"];
    if (!known)
        std::printf(
            "no paradigm for every model: the ceiling cannot be computed; ranked by ease\n");
    std::printf("%4s  %-24s %-24s %7s %8s %8s %7s  %s\n", "rank", "vision", "text", "ease",
                "ceiling", "score", "cka", "region");
    const auto v = [](const nlohmann::json& x) { return x.is_null() ? NAN : x.get<double>(); };
    for (std::size_t i = 0; i < pairs.size() && i < top; ++i) {
        const auto& p = pairs[i];
        std::printf("%4zu  %-24s %-24s %7.4f %8.4f %8.4f %7.4f  %s%s\n", i + 1,
                    p["vision"].get<std::string>().c_str(), p["text"].get<std::string>().c_str(),
                    v(p["ease"]), v(p["ceiling"]), v(p["score"]), v(p["cka"]),
                    p["region"].is_null() ? "-" : p["region"].get<std::string>().c_str(),
                    p["first"].get<bool>() ? "  <- align first" : "");
    }
    if (pairs.size() > top)
        std::printf("... %zu more (--top, --csv, --json)\n", pairs.size() - top);
    std::printf("%zu pairs in %.3f s on %d rank(s)\n", pairs.size(), seconds, ranks);
}

}  // namespace

int verb_advise_align(const AdviseAlignOptions& options) {
    return with_mpi("advise align", [&](const comm::Comm& comm) {
        const int rank = comm.rank(), size = comm.size();
        AdviseAlignOptions o = options;
        std::vector<Listed> models;
        if (!o.manifest.empty()) {
            if (!o.vision.empty() || !o.text.empty() || !o.features.empty())
                throw std::invalid_argument(
                    "--manifest lists the models: --features, --vision and --text go without it");
            models = from_manifest(o);
        } else {
            if (o.features.empty() || o.vision.empty() || o.text.empty())
                throw std::invalid_argument(
                    "give --manifest, or --features, --pairing, --vision and --text");
            for (const auto& v : o.vision) models.push_back({v, "vision", ""});
            for (const auto& t : o.text) models.push_back({t, "text", ""});
        }
        const auto t0 = std::chrono::steady_clock::now();
        auto all = prepared(o, models, comm);
        if (rank != 0) return kExitOk;
        std::vector<compass::PreparedModel> vision, text;
        for (std::size_t i = 0; i < models.size(); ++i)
            (models[i].modality == "vision" ? vision : text).push_back(std::move(all[i]));
        const auto pairs =
            compass::advise_alignment(vision, text, o.k, compass::CeilingStat::parse(o.ceiling));
        const bool known = !pairs.empty() && !std::isnan(pairs.front().ceiling);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        auto j = advice_json(o, pairs, known);
        j["seconds"] = seconds;
        j["ranks"] = size;
        if (!o.csv.empty()) write_csv(o.csv, j);
        if (!o.json.empty()) write_json_file(o.json, j);
        if (!o.h5.empty()) write_h5_table(o.h5, "advice/align", j["pairs"]);
        print_advice(j, o.top, known, seconds, size);
        return kExitOk;
    });
}

}  // namespace compatbench
