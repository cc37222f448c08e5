// Task kind `feature_set`: a user's exported features (docs/bring-your-own.md),
// described by a manifest file; one task per model checks its files, so that a bad file is
// reported with its path before any study task reads it.
//
//   - {name: real, kind: feature_set, table: real/models, manifest: features.yaml}
//
// The manifest (a path relative to the config file's folder):
//   features: .            folder of <model>/<split>.safetensors (default: the manifest's)
//   pairing: pairing       folder of <split>.safetensors with caption_image (default pairing)
//   splits: [train, probe, flickr, coco]
//   models:
//     - {name: vit_b16_clip, modality: vision, family: clip_vit, paradigm: clip}
// A folder written as {out}/... lies in the run's output folder (features that `command`
// tasks of the same run write); other relative folders are relative to the manifest.
#include <yaml-cpp/yaml.h>
#include <algorithm>

#include "catalog/feature_catalog.h"
#include "catalog/manifest.h"
#include "catalog/zoo_common.h"
#include "formats/safetensors.h"

namespace compatbench {

namespace {

class FeatureSetTask final : public TaskKind {
  public:
    std::string_view name() const override { return "feature_set"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "manifest", .type = KeyType::string, .required = true}};
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return {{"splits", ColumnType::i64, 0},
                {"dim", ColumnType::i64, 0},
                {"rows", ColumnType::i64, 0}};
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const TaskGroup& group, const std::vector<TaskGroup>&,
                                       const YamlChecker& yc) const override {
        const Manifest man =
            load_manifest(group, yc,
                          {{.name = "features", .type = KeyType::string},
                           {.name = "pairing", .type = KeyType::string},
                           {.name = "splits", .type = KeyType::list},
                           {.name = "models", .type = KeyType::list, .required = true}});
        const YAML::Node& root = man.root;
        const YamlChecker& my = man.checker;
        const auto folder = [&](const char* k, const char* fallback) {
            return man.resolve(root[k] ? root[k].Scalar() : std::string(fallback));
        };
        std::vector<Scalar> splits;
        if (const YAML::Node s = root["splits"]) {
            for (std::size_t i = 0; i < s.size(); ++i)
                splits.push_back(Scalar::parse(my.as_string(s[i], index_path("splits", i))));
        } else {
            for (const auto& name : zoo::kSplits) splits.push_back(Scalar::parse(name));
        }
        std::vector<ListedTask> out;
        const YAML::Node models = root["models"];
        for (std::size_t i = 0; i < models.size(); ++i) {
            const std::string p = index_path("models", i);
            my.check_map(models[i], p,
                         {{.name = "name", .type = KeyType::string, .required = true},
                          {.name = "modality",
                           .type = KeyType::string,
                           .required = true,
                           .choices = {"vision", "text"}},
                          {.name = "family", .type = KeyType::string, .required = true},
                          {.name = "paradigm", .type = KeyType::string, .required = true}});
            ListedTask t;
            t.suffix = my.as_string(models[i]["name"], p + ".name");
            for (const auto& prev : out) {
                if (prev.suffix == t.suffix)
                    my.fail(models[i]["name"], p + ".name", "duplicate model '" + t.suffix + "'");
            }
            for (const char* k : {"name", "modality", "family", "paradigm"})
                t.keys.emplace_back(k, Scalar::parse(my.as_string(models[i][k], p + "." + k)));
            t.params["features_root"] = Scalar::parse(folder("features", "."));
            t.params["pairing_root"] = Scalar::parse(folder("pairing", "pairing"));
            t.lists["splits"] = splits;
            const bool in_run = in_run_folder(t.params.at("features_root").text) ||
                                in_run_folder(t.params.at("pairing_root").text);
            if (group.after.empty() && !in_run) check_files(t, models[i], p, my);
            out.push_back(std::move(t));
        }
        return out;
    }

  protected:
    // Every file again when the task runs (they may have changed since the config was read).
    Row run_(const TaskContext& ctx) const override {
        const auto splits = ctx.texts("splits");
        const auto [dim, rows] = check_model_files(
            catalog_path(ctx.params.at("features_root").text, ctx.out_dir).string(),
            catalog_path(ctx.params.at("pairing_root").text, ctx.out_dir).string(),
            ctx.params.at("name").text, ctx.params.at("modality").text == "vision", splits);
        return {static_cast<std::int64_t>(splits.size()), dim, rows};
    }

  private:
    // The model's files, checked when the config is read (`validate` reports a missing or
    // short file before any task runs), at the manifest's entry of the model. Not when the
    // group waits for other tasks (`after:`): those may be what writes the files.
    static void check_files(const ListedTask& t, const YAML::Node& node, const std::string& path,
                            const YamlChecker& manifest) {
        std::vector<std::string> splits;
        for (const auto& s : t.lists.at("splits")) splits.push_back(s.text);
        try {
            check_model_files(t.params.at("features_root").text, t.params.at("pairing_root").text,
                              t.suffix, t.key("modality").text == "vision", splits);
        } catch (const formats::FormatError& e) {
            manifest.fail(node, path, e.what());
        }
    }
};
}  // namespace

const TaskKind& feature_set_task() {
    static const FeatureSetTask kind;
    return kind;
}

}  // namespace compatbench
