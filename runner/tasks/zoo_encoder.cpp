// Task kind `zoo_encoder`: trains the encoders of the model library, one task per listed
// model, writing weights and a sidecar under <out>/artifacts/models/ and a row of
// /zoo/models (or the group's table).
//
//   - name: vision
//     kind: zoo_encoder
//     table: zoo/models
//     world: world                       # the zoo_world group
//     defaults: {width: 128, depth: 2, out_dim: 64, steps: 400, lr: 0.002, batch: 256}
//     models:
//       - {name: sup_s_1, modality: vision, family: sup_s, paradigm: supervised, seed: 1}
//       - {name: clip_txt_1, modality: text, family: clip_txt, paradigm: clip, width: 96}
//
// modality: vision | text | backbone (a vision model to fine-tune and merge) | pool (a
// member of the multi-encoder pool). Paradigms: see zoo::Paradigm.
#include <regex>
#include <set>

#include "catalog/zoo_common.h"

namespace compatbench {

namespace {

const std::vector<KeyRule> kModelRules = {
    {.name = "name", .type = KeyType::string, .required = true},
    {.name = "modality",
     .type = KeyType::string,
     .required = true,
     .choices = {"vision", "text", "backbone", "pool"}},
    {.name = "family", .type = KeyType::string, .required = true},
    {.name = "paradigm", .type = KeyType::string, .required = true},
    {.name = "width", .type = KeyType::integer, .min = 1, .max = 65536},
    {.name = "depth", .type = KeyType::integer, .min = 0, .max = 64},
    {.name = "out_dim", .type = KeyType::integer, .min = 1, .max = 65536},
    {.name = "seed", .type = KeyType::integer, .min = 0, .max = 9.2e18},
    {.name = "steps", .type = KeyType::integer, .min = 0, .max = 1e8},
    {.name = "lr", .type = KeyType::real, .min = 0, .max = 10},
    {.name = "batch", .type = KeyType::integer, .min = 2, .max = 1e6},
    {.name = "weight_decay", .type = KeyType::real, .min = 0, .max = 10},
};

class ZooEncoderTask final : public TaskKind {
  public:
    std::string_view name() const override { return "zoo_encoder"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "world", .type = KeyType::string, .required = true},
                {.name = "models", .type = KeyType::list, .required = true},
                {.name = "defaults", .type = KeyType::map}};
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return zoo_model_columns();
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        const TaskGroup& world = zoo_world_group(group, earlier, yc);
        const std::string base = "tasks." + group.name;
        const YAML::Node defaults = group.node["defaults"];
        std::vector<KeyRule> default_rules(kModelRules.begin() + 4, kModelRules.end());
        if (defaults) yc.check_map(defaults, base + ".defaults", default_rules);
        std::vector<ListedTask> out;
        std::set<std::string> names;
        const YAML::Node models = group.node["models"];
        for (std::size_t i = 0; i < models.size(); ++i) {
            const YAML::Node m = models[i];
            const std::string path = index_path(base + ".models", i);
            yc.check_map(m, path, kModelRules);
            zoo::EncoderSpec spec;
            spec.name = m["name"].Scalar();
            if (!std::regex_match(spec.name, std::regex("[A-Za-z0-9_.\\-]+"))) {
                yc.fail(m["name"], path + ".name", "'" + spec.name + "' is not a valid model name");
            }
            if (!names.insert(spec.name).second)
                yc.fail(m["name"], path + ".name", "model '" + spec.name + "' is listed twice");
            const std::string modality = m["modality"].Scalar();
            spec.modality = modality == "text" ? zoo::Modality::text : zoo::Modality::vision;
            spec.family = m["family"].Scalar();
            try {
                spec.paradigm = zoo::paradigm_from_name(m["paradigm"].Scalar(), spec.modality);
            } catch (const std::invalid_argument& e) {
                yc.fail(m["paradigm"], path + ".paradigm", e.what());
            }
            auto pick = [&](const char* key) {
                if (m[key]) return m[key];
                if (defaults && defaults[key]) return defaults[key];
                return YAML::Node(YAML::NodeType::Undefined);  // a plain Node() is null, not absent
            };
            auto as_int = [&](const char* key, int fallback) {
                const YAML::Node v = pick(key);
                return v ? static_cast<int>(yc.as_int(v, path + "." + key)) : fallback;
            };
            auto as_real = [&](const char* key, double fallback) {
                const YAML::Node v = pick(key);
                return v ? yc.as_real(v, path + "." + key) : fallback;
            };
            spec.width = as_int("width", spec.width);
            spec.depth = as_int("depth", spec.depth);
            spec.out_dim = as_int("out_dim", spec.out_dim);
            spec.seed = static_cast<std::uint64_t>(as_int("seed", static_cast<int>(spec.seed)));
            spec.steps = as_int("steps", spec.steps);
            spec.batch = as_int("batch", spec.batch);
            spec.lr = as_real("lr", spec.lr);
            spec.weight_decay = as_real("weight_decay", spec.weight_decay);
            ListedTask t;
            t.suffix = spec.name;
            t.keys = {{"name", Scalar::parse(spec.name)}};
            t.params["spec"] = Scalar::parse(zoo::encoder_spec_to_json(spec).dump());
            t.params["modality_label"] = Scalar::parse(modality);
            t.params["world_group"] = Scalar::parse(world.name);
            t.after = {world.name};
            out.push_back(std::move(t));
        }
        return out;
    }

    std::vector<fs::path> artifacts(const TaskContext& ctx) const override {
        const std::string name =
            nlohmann::json::parse(ctx.params.at("spec").text).at("name").get<std::string>();
        const ZooPaths paths{ctx.out_dir};
        return {paths.model(name), paths.sidecar(name)};
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const ZooPaths paths{ctx.out_dir};
        const ZooWorld zw = load_zoo_world(ctx);
        const zoo::World& world = zw.world;
        const nlohmann::json& world_file = zw.file;
        const zoo::Split train = zw.split("train"), probe = zw.split("probe");
        const zoo::EncoderSpec spec =
            zoo::encoder_spec_from_json(nlohmann::json::parse(ctx.params.at("spec").text));
        zoo::TrainSummary summary;
        zoo::Encoder enc = cancellable(
            ctx, [&] { return zoo::train_encoder(spec, world, train, summary, &ctx.cancel); });
        const std::string modality = ctx.params.at("modality_label").text;
        nlohmann::json sidecar = {{"name", spec.name},
                                  {"modality", modality},
                                  {"family", spec.family},
                                  {"paradigm", zoo::paradigm_name(spec.paradigm)},
                                  {"spec", zoo::encoder_spec_to_json(spec)},
                                  {"seed", spec.seed},
                                  {"input_dim", enc.input_dim()},
                                  {"world", world_file.at("world")},
                                  {"training",
                                   {{"first_loss", value_to_json(summary.first_loss)},
                                    {"final_loss", value_to_json(summary.final_loss)},
                                    {"steps", summary.steps}}}};
        write_model(paths, enc, sidecar);
        return zoo_model_row(enc, modality, summary, train, probe, world.spec().captions_per_image);
    }
};
}  // namespace

const TaskKind& zoo_encoder_task() {
    static const ZooEncoderTask kind;
    return kind;
}

}  // namespace compatbench
