// Pieces shared by the zoo task kinds: where the library's files lie in a run's folder,
// model-list parsing and the /zoo/models columns.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "formats/json_file.h"
#include "kind/task_kind.h"
#include "zoo/files.h"

namespace compatbench {

namespace fs = std::filesystem;

// The library's files (zoo/files.h) in a run's folder:
//   <out>/artifacts/<world group>/world.json and <split>.safetensors
//   <out>/artifacts/models/<name>.safetensors and <name>.json
//   <out>/artifacts/features/<name>/<split>.safetensors   "features": one row per image
//                                                         (vision) or caption (text)
struct ZooPaths {
    fs::path out;
    fs::path world_dir(const std::string& world_group) const {
        return out / "artifacts" / world_group;
    }
    fs::path model(const std::string& name) const {
        return out / "artifacts" / "models" / (name + ".safetensors");
    }
    fs::path sidecar(const std::string& name) const {
        return out / "artifacts" / "models" / (name + ".json");
    }
    fs::path features(const std::string& name, const std::string& split) const {
        return out / "artifacts" / "features" / name / (split + ".safetensors");
    }
};

inline void write_model(const ZooPaths& paths, zoo::Encoder& encoder, const nlohmann::json& sidecar,
                        nn::Linear<float>* head = nullptr) {
    const std::string name = sidecar.at("name").get<std::string>();
    zoo::write_model(paths.model(name), paths.sidecar(name), encoder, sidecar, head);
}
inline zoo::Encoder read_model(const ZooPaths& paths, const std::string& name,
                               nlohmann::json* sidecar = nullptr) {
    return zoo::read_model(paths.model(name), paths.sidecar(name), sidecar);
}

// What a zoo task reads of the world its group names (`world_group` parameter): the spec
// file, the renderer rebuilt from it (for augmented views) and the splits it asks for.
struct ZooWorld {
    fs::path dir;
    nlohmann::json file;  // world.json
    zoo::World world;
    zoo::Split split(const std::string& name) const;
};
ZooWorld load_zoo_world(const TaskContext& ctx);

// Columns of /zoo/models (shared by zoo_encoder and zoo_finetune groups).
std::vector<ColumnSpec> zoo_model_columns();

// The earlier zoo_world group named by the entry's `world` key (ConfigError if none).
const TaskGroup& zoo_world_group(const TaskGroup& group, const std::vector<TaskGroup>& earlier,
                                 const YamlChecker& checker);

// The outputs row of a trained model: modality, family, paradigm, params, train_loss,
// probe_acc (ridge probe of the concept: fitted on train features, scored on probe).
Row zoo_model_row(zoo::Encoder& encoder, const std::string& modality_label,
                  const zoo::TrainSummary& summary, const zoo::Split& train,
                  const zoo::Split& probe, int captions_per_image);

// The task head ("head.weight", "head.bias") stored with a fine-tune's weights.
nn::Linear<float> read_head(const fs::path& path);

// Runs `body`, turning a cancellation seen inside the trainer into TaskCancelled.
template <class F>
auto cancellable(const TaskContext& ctx, F&& body) {
    try {
        return body();
    } catch (const std::runtime_error&) {
        if (ctx.cancel.load()) throw TaskCancelled{};
        throw;
    }
}

}  // namespace compatbench
