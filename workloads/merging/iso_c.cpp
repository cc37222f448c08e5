#include "merging/iso_c.h"

#include <stdexcept>

#include "common/eigen.h"
#include "merging/last_pass.h"

namespace compatbench::merging {

bool iso_c_flattens(const TensorScope& scope) {
    return scope.matrix && scope.name.find("text_projection") == std::string::npos;
}

std::vector<double> iso_c_update(const TensorScope& scope, TensorBlocks& in) {
    const std::size_t cols = scope.row_length, n = in.numel();
    if (cols == 0 || n % cols != 0)
        throw std::invalid_argument(scope.name + ": Iso-C needs a matrix (" + std::to_string(n) +
                                    " values in rows of " + std::to_string(cols) + ")");
    using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    RowMajor sum =
        RowMajor::Zero(static_cast<Eigen::Index>(n / cols), static_cast<Eigen::Index>(cols));
    double* d = sum.data();
    last_pass::read_blocks(
        in, 1 << 14, [&](std::size_t begin, std::size_t count, const float* base, const auto& x) {
            for (const float* xi : x)
                for (std::size_t j = 0; j < count; ++j)
                    d[begin + j] += static_cast<double>(xi[j]) - static_cast<double>(base[j]);
        });
    const Eigen::BDCSVD<Eigen::MatrixXd> svd(sum, Eigen::ComputeThinU | Eigen::ComputeThinV);
    const double mean = svd.singularValues().size() ? svd.singularValues().mean() : 0.0;
    const RowMajor flat = mean * svd.matrixU() * svd.matrixV().transpose();
    return {flat.data(), flat.data() + flat.size()};
}

}  // namespace compatbench::merging
