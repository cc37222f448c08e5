// Task kind `feature_set`: a user's exported features (README "Bring your own models"),
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
#include <yaml-cpp/yaml.h>
#include <algorithm>

#include "formats/safetensors.h"
#include "tasks/compass_common.h"
#include "tasks/zoo_artifacts.h"

namespace compatbench {

namespace {

class FeatureSetTask final : public TaskKind {
  public:
    std::string_view name() const override { return "feature_set"; }
    std::vector<KeyRule> keys() const override {
        return {{"manifest", KeyType::string, true, 0, 0, {}}};
    }
    std::vector<ColumnSpec> outputs(const GroupSpec&, const YamlChecker&) const override {
        return {{"splits", ColumnType::i64, 0},
                {"dim", ColumnType::i64, 0},
                {"rows", ColumnType::i64, 0}};
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const GroupSpec& group, const std::vector<GroupSpec>&,
                                       const YamlChecker& yc) const override {
        const Manifest man = load_manifest(group, yc,
                                           {{"features", KeyType::string, false, 0, 0, {}},
                                            {"pairing", KeyType::string, false, 0, 0, {}},
                                            {"splits", KeyType::list, false, 0, 0, {}},
                                            {"models", KeyType::list, true, 0, 0, {}}});
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
            for (const auto& name : kZooSplits) splits.push_back(Scalar::parse(name));
        }
        std::vector<ListedTask> out;
        const YAML::Node models = root["models"];
        for (std::size_t i = 0; i < models.size(); ++i) {
            const std::string p = index_path("models", i);
            my.check_map(models[i], p,
                         {{"name", KeyType::string, true, 0, 0, {}},
                          {"modality", KeyType::string, true, 0, 0, {"vision", "text"}},
                          {"family", KeyType::string, true, 0, 0, {}},
                          {"paradigm", KeyType::string, true, 0, 0, {}}});
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
            out.push_back(std::move(t));
        }
        return out;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const std::string model = ctx.params.at("name").text;
        const bool vision = ctx.params.at("modality").text == "vision";
        const auto splits = ctx.texts("splits");
        std::int64_t dim = -1, rows = 0;
        for (const auto& split : splits) {
            const auto caption_image = read_caption_image(ctx, split);
            const MatF f = read_features(ctx, model, split);
            const std::int64_t want =
                vision ? (caption_image.empty()
                              ? 0
                              : *std::max_element(caption_image.begin(), caption_image.end()) + 1)
                       : static_cast<std::int64_t>(caption_image.size());
            const std::string file =
                (catalog_path(ctx.params.at("features_root").text, ctx.out_dir) / model /
                 (split + ".safetensors"))
                    .string();
            if (f.rows() != want)
                throw formats::FormatError(file + ": tensor 'features' has " +
                                           std::to_string(f.rows()) + " rows; the split has " +
                                           std::to_string(want) +
                                           (vision ? " images" : " captions"));
            if (dim >= 0 && f.cols() != dim)
                throw formats::FormatError(file + ": tensor 'features' has " +
                                           std::to_string(f.cols()) +
                                           " columns; other splits have " + std::to_string(dim));
            dim = f.cols();
            rows += f.rows();
        }
        return {static_cast<std::int64_t>(splits.size()), dim, rows};
    }
};
}  // namespace

const TaskKind& feature_set_task() {
    static const FeatureSetTask kind;
    return kind;
}

}  // namespace compatbench
