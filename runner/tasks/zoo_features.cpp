// Task kind `zoo_features`: extracts the features of every model of the named zoo groups on
// every split, one task per model: <out>/artifacts/features/<model>/<split>.safetensors
// (tensor "features": one row per image for vision models, per caption for text models).
//
//   - {name: features, kind: zoo_features, world: world, models: [vision, text, finetunes]}
#include "catalog/zoo_common.h"
#include "formats/matrix.h"
#include "formats/safetensors.h"

namespace compatbench {

namespace {
class ZooFeaturesTask final : public TaskKind {
  public:
    std::string_view name() const override { return "zoo_features"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "world", .type = KeyType::string, .required = true},
                {.name = "models", .type = KeyType::list, .required = true}};
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return {{"splits", ColumnType::i64, 0},
                {"dim", ColumnType::i64, 0},
                {"rows", ColumnType::i64, 0}};
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        const TaskGroup& world = zoo_world_group(group, earlier, yc);
        const std::string base = "tasks." + group.name + ".models";
        const YAML::Node models = group.node["models"];
        std::vector<ListedTask> out;
        for (std::size_t i = 0; i < models.size(); ++i) {
            const std::string source = yc.as_string(models[i], index_path(base, i));
            const TaskGroup* g = nullptr;
            for (const auto& e : earlier) {
                if (e.name == source &&
                    (e.kind->name() == "zoo_encoder" || e.kind->name() == "zoo_finetune"))
                    g = &e;
            }
            if (!g)
                yc.fail(models[i], index_path(base, i),
                        "no earlier zoo_encoder or zoo_finetune group named '" + source + "'");
            for (const auto& model : g->listed) {
                ListedTask t;
                t.suffix = model.key("name").text;
                t.keys = {{"name", model.key("name")}};
                t.params["world_group"] = Scalar::parse(world.name);
                t.after = {g->name + "/" + t.suffix};
                out.push_back(std::move(t));
            }
        }
        return out;
    }

    std::vector<fs::path> artifacts(const TaskContext& ctx) const override {
        std::vector<fs::path> files;
        for (const auto& split : zoo::kSplits)
            files.push_back(ZooPaths{ctx.out_dir}.features(ctx.params.at("name").text, split));
        return files;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const ZooPaths paths{ctx.out_dir};
        const ZooWorld zw = load_zoo_world(ctx);
        const std::string name = ctx.params.at("name").text;
        zoo::Encoder enc = read_model(paths, name);
        std::int64_t rows = 0;
        for (const auto& split_name : zoo::kSplits) {
            if (ctx.cancel.load()) throw TaskCancelled{};
            const zoo::Split split = zw.split(split_name);
            const zoo::Mat inputs =
                enc.spec().modality == zoo::Modality::vision ? split.images : split.captions;
            const zoo::Mat f = enc.encode(inputs);
            formats::SafetensorsWriter w;
            formats::add_matrix(w, "features", f);
            w.set_metadata("model", name);
            w.set_metadata("split", split_name);
            w.set_metadata("rows",
                           enc.spec().modality == zoo::Modality::vision ? "images" : "captions");
            const fs::path path = paths.features(name, split_name);
            fs::create_directories(path.parent_path());
            w.write(path.string());
            rows += f.rows();
        }
        return {static_cast<std::int64_t>(zoo::kSplits.size()),
                static_cast<std::int64_t>(enc.spec().out_dim), rows};
    }
};
}  // namespace

const TaskKind& zoo_features_task() {
    static const ZooFeaturesTask kind;
    return kind;
}

}  // namespace compatbench
