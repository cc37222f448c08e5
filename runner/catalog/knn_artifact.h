// The k-NN artifact of a model of a probe_knn group, read by pair_similarity:
//   <out>/artifacts/knn/<group>/<model>.safetensors   (similarity/knn_file.h)
#pragma once

#include <filesystem>
#include <string>

#include "similarity/knn_file.h"

namespace compatbench {

inline std::filesystem::path knn_artifact(const std::filesystem::path& out_dir,
                                          const std::string& group, const std::string& model) {
    return out_dir / "artifacts" / "knn" / group / (model + ".safetensors");
}

}  // namespace compatbench
