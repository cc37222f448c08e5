// Files of the model library under <out>/artifacts/, written like real models and data:
//   <world group>/world.json            the world spec and split sizes
//   <world group>/<split>.safetensors   images, captions, caption_image, concept, latents
//   models/<name>.safetensors + .json   weights (F32) and a sidecar (name, modality, family,
//                                       paradigm, spec, seed, training summary)
//   features/<name>/<split>.safetensors "features": one row per image (vision) or caption
// Every file is written to a temporary name and renamed when complete.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "zoo/encoder.h"
#include "zoo/finetune.h"

namespace compatbench {

namespace fs = std::filesystem;

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

// The splits every world has, with their sizes from the world spec file.
inline const std::vector<std::string> kZooSplits = {"train", "probe", "flickr", "coco"};

nlohmann::json world_spec_to_json(const zoo::WorldSpec& spec);
zoo::WorldSpec world_spec_from_json(const nlohmann::json& j);

// A JSON file; std::runtime_error naming the file when it is missing or malformed.
nlohmann::json read_json(const fs::path& path);

void write_split(const fs::path& path, const zoo::Split& split);
// Throws formats::FormatError (file and tensor named) for a missing or malformed file.
zoo::Split read_split(const fs::path& path, const std::string& name);
// The world spec and split sizes written by a zoo_world task.
nlohmann::json read_world_file(const fs::path& world_dir);

void write_model(const ZooPaths& paths, zoo::Encoder& encoder, const nlohmann::json& sidecar,
                 nn::Linear<float>* head = nullptr);
// Loads weights into a fresh encoder built from the sidecar's spec.
zoo::Encoder read_model(const ZooPaths& paths, const std::string& name,
                        nlohmann::json* sidecar = nullptr);

// A parameter's values in the order its safetensors file holds them (row-major, like
// torch), and back: Eigen keeps matrices column-major in memory, so code that treats the
// values of a model and of its file alike (merges, checkpoints) goes through these.
std::vector<float> param_values(const nn::Param<float>& param);
void set_param_values(nn::Param<float>& param, std::span<const float> values);

nlohmann::json encoder_spec_to_json(const zoo::EncoderSpec& spec);
zoo::EncoderSpec encoder_spec_from_json(const nlohmann::json& j);

// Rows of `split` an encoder of `modality` reads: images, or the first caption of each image.
zoo::Mat encoder_inputs(const zoo::Split& split, zoo::Modality modality, int captions_per_image);

}  // namespace compatbench
