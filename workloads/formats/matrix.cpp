#include "formats/matrix.h"

#include <cstdint>
#include <vector>

namespace compatbench::formats {

namespace {
using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
}  // namespace

void add_matrix(SafetensorsWriter& writer, const std::string& name, const MatF& m, DType stored) {
    const RowMajorF rows = m;
    writer.add_f32(name,
                   {static_cast<std::uint64_t>(m.rows()), static_cast<std::uint64_t>(m.cols())},
                   {rows.data(), static_cast<std::size_t>(rows.size())}, stored);
}

MatF read_matrix(const SafetensorsFile& file, const TensorInfo& tensor) {
    if (tensor.shape.size() != 2)
        throw FormatError(file.path() + ": tensor '" + tensor.name + "' must be 2-D, has " +
                          std::to_string(tensor.shape.size()) + " dimensions");
    const std::vector<float> values = file.read_f32(tensor);
    return Eigen::Map<const RowMajorF>(values.data(), static_cast<Eigen::Index>(tensor.shape[0]),
                                       static_cast<Eigen::Index>(tensor.shape[1]));
}

MatF read_matrix(const SafetensorsFile& file, const std::string& name) {
    return read_matrix(file, file.at(name));
}

}  // namespace compatbench::formats
