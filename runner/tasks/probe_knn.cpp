// Task kind `probe_knn`: one model's paired probe features and their k-NN lists
// (methods.md §1.1), computed once and reused by every pair the model takes part in. For a
// model of the library the probe features come from a forward pass of its weights (the
// predictor's whole cost is in these tasks); for a user's model, from its exported features.
//
//   - {name: align_knn, kind: probe_knn, features: features, modalities: [vision, text],
//      probe: 1024, k: [10, 20, 50, 100]}
#include <algorithm>

#include "catalog/feature_catalog.h"
#include "catalog/knn_artifact.h"
#include "catalog/zoo_common.h"
#include "formats/safetensors.h"
#include "kind/group_keys.h"

namespace compatbench {

namespace {
// The group's keys, parsed once (TaskKind::bind).
struct Settings final : KindSettings {
    std::string split;
    int probe = 1024;     // rows
    std::vector<int> ks;  // ascending, each once: the pairs' `ease` is at the smallest
    int block = 256;
};

class ProbeKnnTask final : public TaskKind {
  public:
    std::string_view name() const override { return "probe_knn"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "features", .type = KeyType::string, .required = true},
                {.name = "modalities", .type = KeyType::scalar_or_list},
                {.name = "probe", .type = KeyType::integer, .min = 3, .max = 1e7},
                {.name = "split", .type = KeyType::string},
                {.name = "k", .type = KeyType::scalar_or_list},
                {.name = "block", .type = KeyType::integer, .min = 1, .max = 1e6}};
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group, const std::vector<TaskGroup>&,
                                             const YamlChecker& yc) const override {
        auto s = std::make_shared<Settings>();
        const Params keys(group.params);
        s->split = keys.text("split", "probe");
        s->probe = static_cast<int>(keys.integer("probe", 1024));
        s->ks = int_list_key(group, "k", yc, {10}, 1, 1000000);
        std::sort(s->ks.begin(), s->ks.end());
        s->ks.erase(std::unique(s->ks.begin(), s->ks.end()), s->ks.end());
        if (s->ks.back() >= s->probe)
            yc.fail(group.node["k"], "tasks." + group.name + ".k",
                    "every k must be below the probe size " + std::to_string(s->probe));
        s->block = static_cast<int>(keys.integer("block", 256));
        return s;
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return {
            {"rows", ColumnType::i64, 0}, {"dim", ColumnType::i64, 0}, {"k", ColumnType::i64, 0}};
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        const FeatureCatalog cat = feature_catalog(
            group.node["features"], "tasks." + group.name + ".features", earlier, yc);
        const auto modalities = string_list_key(group, "modalities", yc, {});
        const Settings& s = settings_of<Settings>(group);
        check_probe_size(group, earlier, cat, s.probe, yc);
        std::vector<ListedTask> out;
        for (const auto& m : cat.models) {
            if (!modalities.empty() &&
                std::find(modalities.begin(), modalities.end(), m.modality) == modalities.end())
                continue;
            ListedTask t;
            t.suffix = m.name;
            t.keys = {{"name", Scalar::parse(m.name)},
                      {"modality", Scalar::parse(m.modality)},
                      {"family", Scalar::parse(m.family)},
                      {"paradigm", Scalar::parse(m.paradigm)}};
            add_catalog_params(cat, t.params);
            t.params["zoo"] = Scalar::parse(m.zoo ? "1" : "0");
            t.lists["k_list"] = list_of(s.ks);  // read by pair_similarity groups
            t.params["features_task"] = Scalar::parse(m.task_id);
            if (!m.base.empty()) {
                t.params["base"] = Scalar::parse(m.base);
                t.params["task"] = Scalar::parse(m.task);
            }
            if (!m.checkpoint.empty()) t.params["checkpoint"] = Scalar::parse(m.checkpoint);
            if (!m.base_checkpoint.empty())
                t.params["base_checkpoint"] = Scalar::parse(m.base_checkpoint);
            t.after = {m.task_id};
            out.push_back(std::move(t));
        }
        if (out.empty())
            yc.fail(group.node, "tasks." + group.name,
                    "no model of group '" + cat.group + "' has one of the listed modalities");
        return out;
    }

  private:
    // A user's features: the probe split must have `probe` images (said when the config is
    // read, not when the first text model's task fails).
    static void check_probe_size(const TaskGroup& group, const std::vector<TaskGroup>& earlier,
                                 const FeatureCatalog& cat, std::int64_t probe,
                                 const YamlChecker& yc) {
        if (cat.models.empty() || cat.models.front().zoo || in_run_folder(cat.pairing_root)) return;
        for (const auto& g : earlier)  // files that tasks may still write: checked when read
            if (g.name == cat.group && !g.after.empty()) return;
        if (std::none_of(cat.models.begin(), cat.models.end(), [](const CatalogModel& m) {
                return m.modality == "vision" || m.modality == "text";
            }))
            return;  // checkpoints (merging): their probe is no image-caption split
        std::int64_t images = 0;
        try {
            for (const int i : caption_image_of(cat.pairing_root, "probe"))
                images = std::max<std::int64_t>(images, i + 1);
        } catch (const formats::FormatError& e) {
            yc.fail(group.node["features"], "tasks." + group.name + ".features", e.what());
        }
        if (images < probe)
            yc.fail(group.node["probe"] ? group.node["probe"] : group.node,
                    "tasks." + group.name + ".probe",
                    "the probe needs " + std::to_string(probe) + " images; the probe split of '" +
                        cat.group + "' has " + std::to_string(images));
    }

    std::vector<fs::path> artifacts(const TaskContext& ctx) const override {
        return {knn_artifact(ctx.out_dir, ctx.group.name, ctx.params.at("name").text)};
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const Settings& settings = ctx.settings<Settings>();
        const std::string model = ctx.params.at("name").text;
        const std::string& split = settings.split;
        const int n = settings.probe;
        const int kmax = settings.ks.back();
        const bool text = ctx.params.at("modality").text == "text";
        // Only a text model's rows need the pairing (each image's first caption).
        const auto caption_image = text ? read_caption_image(ctx, split) : std::vector<int>();
        const std::vector<int> caption_rows =
            text ? first_caption_rows(caption_image, n) : std::vector<int>();
        MatF probe;
        if (ctx.params.at("zoo").integer == 1) {
            // The probe forward pass itself, from the stored weights.
            const ZooWorld zw = load_zoo_world(ctx);
            const zoo::Split s = zw.split(split);
            zoo::Encoder enc = read_model(ZooPaths{ctx.out_dir}, model);
            zoo::Mat inputs = text ? zoo::Mat(s.captions(caption_rows, Eigen::all))
                                   : zoo::Mat(s.images.topRows(n));
            probe = enc.encode(inputs);
        } else {
            const MatF all = read_features(ctx, model, split);
            const auto need = text ? static_cast<Eigen::Index>(caption_image.size())
                                   : static_cast<Eigen::Index>(n);
            if (all.rows() < need)
                throw std::invalid_argument("features of '" + model + "' on split '" + split +
                                            "' have " + std::to_string(all.rows()) +
                                            " rows; the probe needs " + std::to_string(need));
            probe = text ? MatF(all(caption_rows, Eigen::all)) : MatF(all.topRows(n));
        }
        if (ctx.cancel.load()) throw TaskCancelled{};
        const auto lists = similarity::knn_lists(probe, kmax, settings.block);
        similarity::write_knn_file(knn_artifact(ctx.out_dir, ctx.group.name, model), lists, probe);
        return {static_cast<std::int64_t>(n), static_cast<std::int64_t>(probe.cols()),
                static_cast<std::int64_t>(kmax)};
    }
};
}  // namespace

const TaskKind& probe_knn_task() {
    static const ProbeKnnTask kind;
    return kind;
}

}  // namespace compatbench
