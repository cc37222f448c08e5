// Where the studies find models' features: a zoo_features group (the model library) or a
// feature_set group (a user's exported features, docs/bring-your-own.md). Both give
// the same catalog, so every study task runs the same code on zoo and on real models.
//
// Files (roots starting with "@out/" are inside the run's output folder):
//   <features root>/<model>/<split>.safetensors   tensor "features" (rows x dim; F32, F16,
//                                                 BF16 or F64): one row per image for vision
//                                                 models, one per caption for text models
//   <pairing root>/<split>.safetensors            tensor "caption_image" (I64 or I32): the
//                                                 image row of each caption row
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/eigen.h"
#include "config/config.h"
#include "kind/task_kind.h"

namespace compatbench {

namespace fs = std::filesystem;

struct CatalogModel {
    std::string name;
    std::string modality;  // vision, text, backbone, pool, finetune
    std::string family;
    std::string paradigm;
    std::string base;  // fine-tunes: the backbone and the task ("" otherwise)
    std::string task;
    std::string checkpoint;       // weights (fine-tunes: safetensors file or folder)
    std::string base_checkpoint;  // fine-tunes: the backbone's weights
    std::string task_id;          // the task that writes its features (a dependency)
    bool zoo = false;             // a model of the library: weights at artifacts/models/<name>
};

struct FeatureCatalog {
    std::string group;  // the zoo_features or feature_set group
    std::string features_root;
    std::string pairing_root;
    std::string world_group;  // zoo only
    std::vector<CatalogModel> models;
    const CatalogModel* find(const std::string& name) const;
};

// The catalog of the earlier group named by `node` (a zoo_features or feature_set group);
// ConfigError at `path` otherwise.
FeatureCatalog feature_catalog(const YAML::Node& node, const std::string& path,
                               const std::vector<TaskGroup>& earlier, const YamlChecker& checker);

// Parameters that carry a catalog's roots to a task (added to ListedTask::params) and back.
void add_catalog_params(const FeatureCatalog& catalog, std::map<std::string, Scalar>& params);
fs::path catalog_path(const std::string& root, const fs::path& out_dir);
// Whether a root lies inside the run's output folder (its files exist only once tasks ran).
bool in_run_folder(const std::string& root);

// Reads a model's features of one split; FormatError naming the file and tensor for a
// missing file, a missing or non-2-D tensor or a non-float dtype.
MatF read_features(const TaskContext& ctx, const std::string& model, const std::string& split);
// caption_image of a split (FormatError naming the file for a missing tensor or bad value).
std::vector<int> read_caption_image(const TaskContext& ctx, const std::string& split);
std::vector<int> caption_image_of(const fs::path& pairing_root, const std::string& split);
// A user's model's files, from their headers (FormatError naming the file): every split's
// features present, 2-D, float, with one row per image (vision) or caption (text) of the
// split's pairing and the same dim in every split. Returns {dim, rows over the splits}.
std::pair<std::int64_t, std::int64_t> check_model_files(const fs::path& features_root,
                                                        const fs::path& pairing_root,
                                                        const std::string& model, bool vision,
                                                        const std::vector<std::string>& splits);

// Paired probe rows: the first `n` images and, for each, its first caption. Returns the
// caption rows; std::invalid_argument when fewer than `n` images have a caption.
std::vector<int> first_caption_rows(const std::vector<int>& caption_image, int n);

}  // namespace compatbench
