// A model's k-NN lists on the probe set, stored beside the probe features they came from:
//   "knn"    I32 n x k   the lists (methods.md §1.1)
//   "probe"  F32 n x d   the paired probe features
#pragma once

#include <filesystem>

#include "common/eigen.h"
#include "similarity/similarity.h"

namespace compatbench::similarity {

namespace fs = std::filesystem;

void write_knn_file(const fs::path& path, const KnnLists& lists, const MatF& probe);
struct KnnFile {
    KnnLists lists;
    MatF probe;
};
// Throws formats::FormatError (file and tensor named) for a missing or malformed file, or a
// list entry that is not a row of the probe set.
KnnFile read_knn_file(const fs::path& path);

}  // namespace compatbench::similarity
