// The model library's files, written like real models and data (docs/zoo.md):
//   world.json                 the world spec and split sizes
//   <split>.safetensors        images, captions, caption_image, concept, latents
//   <name>.safetensors + .json weights (F32, row-major like torch) and a sidecar (name,
//                              modality, family, paradigm, spec, seed, training summary)
// Where they lie in a run's folder is the runner's business (catalog/zoo_common.h).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "zoo/encoder.h"
#include "zoo/finetune.h"

namespace compatbench::zoo {

namespace fs = std::filesystem;

// The splits every world has, with their sizes from the world spec file.
inline const std::vector<std::string> kSplits = {"train", "probe", "flickr", "coco"};

nlohmann::json world_spec_to_json(const WorldSpec& spec);
WorldSpec world_spec_from_json(const nlohmann::json& j);

void write_split(const fs::path& path, const Split& split);
// Throws formats::FormatError (file and tensor named) for a missing or malformed file.
Split read_split(const fs::path& path, const std::string& name);
// The world spec and split sizes written by a zoo_world task.
nlohmann::json read_world_file(const fs::path& world_dir);

// The weights (and a task head's, named "head.*") and the JSON sidecar, each written whole.
void write_model(const fs::path& weights, const fs::path& sidecar_file, Encoder& encoder,
                 const nlohmann::json& sidecar, nn::Linear<float>* head = nullptr);
// Loads weights into a fresh encoder built from the sidecar's spec.
Encoder read_model(const fs::path& weights, const fs::path& sidecar_file,
                   nlohmann::json* sidecar = nullptr);

// A parameter's values in the order its safetensors file holds them (row-major, like
// torch), and back: Eigen keeps matrices column-major in memory, so code that treats the
// values of a model and of its file alike (merges, checkpoints) goes through these.
std::vector<float> param_values(const nn::Param<float>& param);
void set_param_values(nn::Param<float>& param, std::span<const float> values);

nlohmann::json encoder_spec_to_json(const EncoderSpec& spec);
EncoderSpec encoder_spec_from_json(const nlohmann::json& j);

// Rows of `split` an encoder of `modality` reads: images, or the first caption of each image.
Mat encoder_inputs(const Split& split, Modality modality, int captions_per_image);

}  // namespace compatbench::zoo
