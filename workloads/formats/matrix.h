// Matrices in safetensors files: row-major on disk, as every reader (torch, numpy) expects,
// and Eigen's column-major MatF in memory. One copy each way, here.
#pragma once

#include <string>

#include "common/eigen.h"
#include "formats/safetensors.h"

namespace compatbench::formats {

// Adds `m` as the 2-D tensor `name`, stored as `stored` (F32, F16, BF16 or F64).
void add_matrix(SafetensorsWriter& writer, const std::string& name, const MatF& m,
                DType stored = DType::F32);
// Tensor `tensor` of `file` (any float dtype) as a matrix; FormatError naming the file and
// the tensor when it is not 2-D.
MatF read_matrix(const SafetensorsFile& file, const TensorInfo& tensor);
// The same by name (FormatError when there is no such tensor).
MatF read_matrix(const SafetensorsFile& file, const std::string& name);

}  // namespace compatbench::formats
