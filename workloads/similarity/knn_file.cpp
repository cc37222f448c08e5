#include "similarity/knn_file.h"

#include <cstring>

#include "formats/matrix.h"
#include "formats/safetensors.h"

namespace compatbench::similarity {

void write_knn_file(const fs::path& path, const KnnLists& lists, const MatF& probe) {
    formats::SafetensorsWriter w;
    w.add("knn", formats::DType::I32,
          {static_cast<std::uint64_t>(lists.n), static_cast<std::uint64_t>(lists.k)},
          {reinterpret_cast<const std::uint8_t*>(lists.index.data()), lists.index.size() * 4});
    formats::add_matrix(w, "probe", probe);
    fs::create_directories(path.parent_path());
    w.write(path.string());
}

KnnFile read_knn_file(const fs::path& path) {
    const auto f = formats::SafetensorsFile::open(path.string());
    const auto& t = f.at("knn");
    if (t.dtype != formats::DType::I32 || t.shape.size() != 2)
        throw formats::FormatError(path.string() + ": tensor 'knn' must be a 2-D I32 matrix");
    KnnFile a;
    a.lists.n = static_cast<int>(t.shape[0]);
    a.lists.k = static_cast<int>(t.shape[1]);
    a.lists.index.resize(t.numel());
    const auto raw = f.raw(t);
    std::memcpy(a.lists.index.data(), raw.data(), raw.size());
    for (auto i : a.lists.index) {
        if (i < 0 || i >= a.lists.n)
            throw formats::FormatError(path.string() + ": tensor 'knn' holds row " +
                                       std::to_string(i) + " of " + std::to_string(a.lists.n));
    }
    a.probe = formats::read_matrix(f, "probe");
    return a;
}

}  // namespace compatbench::similarity
