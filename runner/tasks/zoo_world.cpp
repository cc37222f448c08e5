// Task kind `zoo_world`: generates the model library's seeded world and writes its splits
// (train, probe, flickr, coco) as safetensors under <out>/artifacts/<group>/.
//
//   - {name: world, kind: zoo_world, seed: 7 (default: the experiment seed), concepts: 64, train:
//   8192, probe: 2048, eval: 1000}
#include <fstream>

#include "catalog/zoo_common.h"
#include "config/config.h"
#include "kind/task_kind.h"

namespace compatbench {

namespace {
class ZooWorldTask final : public TaskKind {
  public:
    std::string_view name() const override { return "zoo_world"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "seed", .type = KeyType::integer, .min = 0, .max = 9.2e18},
                {.name = "concepts", .type = KeyType::integer, .min = 2, .max = 4096},
                {.name = "semantic_dim", .type = KeyType::integer, .min = 1, .max = 1024},
                {.name = "style_dim", .type = KeyType::integer, .min = 1, .max = 1024},
                {.name = "detail_dim", .type = KeyType::integer, .min = 2, .max = 1024},
                {.name = "geometry_dim", .type = KeyType::integer, .min = 2, .max = 1024},
                {.name = "caption_detail_dims", .type = KeyType::integer, .min = 0, .max = 1024},
                {.name = "image_dim", .type = KeyType::integer, .min = 1, .max = 65536},
                {.name = "text_dim", .type = KeyType::integer, .min = 1, .max = 65536},
                {.name = "render_hidden", .type = KeyType::integer, .min = 1, .max = 65536},
                {.name = "captions_per_image", .type = KeyType::integer, .min = 1, .max = 64},
                {.name = "concept_spread", .type = KeyType::real, .min = 0, .max = 100},
                {.name = "detail_amplitude", .type = KeyType::real, .min = 0, .max = 100},
                {.name = "image_noise", .type = KeyType::real, .min = 0, .max = 100},
                {.name = "caption_noise", .type = KeyType::real, .min = 0, .max = 100},
                {.name = "train", .type = KeyType::integer, .min = 16, .max = 1e7},
                {.name = "probe", .type = KeyType::integer, .min = 16, .max = 1e7},
                {.name = "eval", .type = KeyType::integer, .min = 16, .max = 1e7}};
    }
    std::vector<ColumnSpec> outputs(const TaskGroup& group,
                                    const YamlChecker& checker) const override {
        const auto spec = world_spec(group.params, 0);  // the seed does not matter here
        if (spec.caption_detail_dims > spec.detail_dim) {
            checker.fail(group.node, "tasks." + group.name + ".caption_detail_dims",
                         "must not exceed detail_dim (" + std::to_string(spec.detail_dim) + ")");
        }
        return {{"images", ColumnType::i64, 0}, {"captions", ColumnType::i64, 0}};
    }

    std::vector<fs::path> artifacts(const TaskContext& ctx) const override {
        const fs::path dir = ZooPaths{ctx.out_dir}.world_dir(ctx.group.name);
        std::vector<fs::path> files = {dir / "world.json"};
        for (const auto& split : zoo::kSplits) files.push_back(dir / (split + ".safetensors"));
        return files;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const zoo::WorldSpec spec = world_spec(ctx.params, ctx.experiment_seed);
        const zoo::World world(spec);
        const ZooPaths paths{ctx.out_dir};
        const fs::path dir = paths.world_dir(ctx.group.name);
        fs::create_directories(dir);
        const std::int64_t train = ctx.integer("train", 8192), probe = ctx.integer("probe", 2048),
                           eval = ctx.integer("eval", 1000);
        std::int64_t images = 0, captions = 0;
        for (const auto& split : zoo::kSplits) {
            if (ctx.cancel.load()) throw TaskCancelled{};
            const std::int64_t n = split == "train" ? train : split == "probe" ? probe : eval;
            const zoo::Split s = world.make_split(split, static_cast<int>(n));
            zoo::write_split(dir / (split + ".safetensors"), s);
            images += s.images.rows();
            captions += s.captions.rows();
        }
        nlohmann::json j = {
            {"world", zoo::world_spec_to_json(spec)},
            {"splits", {{"train", train}, {"probe", probe}, {"flickr", eval}, {"coco", eval}}}};
        std::ofstream(dir / "world.json.tmp") << j.dump(2) << "\n";
        fs::rename(dir / "world.json.tmp", dir / "world.json");
        return {images, captions};
    }

  private:
    static zoo::WorldSpec world_spec(const std::map<std::string, Scalar>& p,
                                     std::uint64_t experiment_seed) {
        zoo::WorldSpec s;
        auto integer = [&](const char* key, int fallback) {
            auto it = p.find(key);
            return it == p.end() ? fallback : static_cast<int>(it->second.integer);
        };
        auto real = [&](const char* key, double fallback) {
            auto it = p.find(key);
            return it == p.end() ? fallback : it->second.as_double();
        };
        auto seed = p.find("seed");
        // Without a `seed` key the world follows the experiment seed, so a seed-replicate
        // array (run --seed N) draws a new world, and with it a new model library.
        s.seed =
            seed == p.end() ? experiment_seed : static_cast<std::uint64_t>(seed->second.integer);
        s.concepts = integer("concepts", s.concepts);
        s.semantic_dim = integer("semantic_dim", s.semantic_dim);
        s.style_dim = integer("style_dim", s.style_dim);
        s.detail_dim = integer("detail_dim", s.detail_dim);
        s.geometry_dim = integer("geometry_dim", s.geometry_dim);
        s.caption_detail_dims = integer("caption_detail_dims", s.caption_detail_dims);
        s.image_dim = integer("image_dim", s.image_dim);
        s.text_dim = integer("text_dim", s.text_dim);
        s.render_hidden = integer("render_hidden", s.render_hidden);
        s.captions_per_image = integer("captions_per_image", s.captions_per_image);
        s.concept_spread = real("concept_spread", s.concept_spread);
        s.detail_amplitude = real("detail_amplitude", s.detail_amplitude);
        s.image_noise = real("image_noise", s.image_noise);
        s.caption_noise = real("caption_noise", s.caption_noise);
        return s;
    }
};
}  // namespace

const TaskKind& zoo_world_task() {
    static const ZooWorldTask kind;
    return kind;
}

}  // namespace compatbench
