// Pieces shared by the COMPASS task kinds (probe_knn, pair_similarity, align_pair): the
// k-NN artifact of a model and the pair keys.
//   <out>/artifacts/knn/<group>/<model>.safetensors   "knn" (I32 n x k, methods.md §1.1
//                                                     lists) and "probe" (F32 n x d, the
//                                                     paired probe features they came from)
#pragma once

#include <yaml-cpp/yaml.h>
#include <string>
#include <vector>

#include "similarity/similarity.h"
#include "tasks/feature_catalog.h"

namespace compatbench {

fs::path knn_artifact(const fs::path& out_dir, const std::string& group, const std::string& model);
void write_knn_artifact(const fs::path& path, const similarity::KnnLists& lists, const MatF& probe);
struct KnnArtifact {
    similarity::KnnLists lists;
    MatF probe;
};
KnnArtifact read_knn_artifact(const fs::path& path);

// Appends `item` to a comma-separated label (a key column such as a merge's members).
void append_csv(std::string& list, const std::string& item);
// A list parameter (ListedTask::lists) from texts or integers, and back.
std::vector<Scalar> list_of(const std::vector<std::string>& texts);
std::vector<Scalar> list_of(const std::vector<int>& values);
std::vector<int> ints_of(const std::vector<Scalar>& list);

// An integer list key (`k: [10, 20]` or `k: 10`), each within [lo, hi]; `fallback` if absent.
std::vector<int> int_list_key(const GroupSpec& group, const std::string& key,
                              const YamlChecker& checker, std::vector<int> fallback, int lo,
                              int hi);
// A string list key; `fallback` if absent.
std::vector<std::string> string_list_key(const GroupSpec& group, const std::string& key,
                                         const YamlChecker& checker,
                                         std::vector<std::string> fallback);

// A manifest file named by the `manifest` key of `group` (relative to the config file's
// folder), loaded and checked against `rules`; its own paths are relative to its folder,
// except those written {out}/..., which lie in the run's output folder ("@out/...", opened
// through catalog_path when a task runs).
struct Manifest {
    fs::path dir;
    YAML::Node root;
    YamlChecker checker;  // errors name the manifest file
    std::string resolve(const std::string& path) const;
};
Manifest load_manifest(const GroupSpec& group, const YamlChecker& checker,
                       const std::vector<KeyRule>& rules);

// The earlier group named by `key` of `group`, which must be of kind `kind`.
const GroupSpec& earlier_group(const GroupSpec& group, const std::string& key,
                               const std::vector<GroupSpec>& earlier, const std::string& kind,
                               const YamlChecker& checker);

}  // namespace compatbench
