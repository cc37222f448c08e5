#include "merging/tsv.h"

#include <stdexcept>

#include "common/eigen.h"
#include "merging/last_pass.h"

namespace compatbench::merging {

namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// τ_i = θ_i − θ0 of model i as a rows × cols matrix.
RowMajor task_vector(TensorBlocks& in, std::size_t i, std::size_t rows, std::size_t cols) {
    RowMajor tau(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    double* d = tau.data();
    last_pass::read_blocks(
        in, 1 << 14, [&](std::size_t begin, std::size_t count, const float* base, const auto& x) {
            for (std::size_t j = 0; j < count; ++j)
                d[begin + j] = static_cast<double>(x[i][j]) - static_cast<double>(base[j]);
        });
    return tau;
}

// The orthogonal factor of the polar decomposition, P Qᵀ of the thin SVD P Σ Qᵀ.
Eigen::MatrixXd polar(const Eigen::MatrixXd& a) {
    const Eigen::BDCSVD<Eigen::MatrixXd> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
    return svd.matrixU() * svd.matrixV().transpose();
}

}  // namespace

bool tsv_decorrelates(const TensorScope& scope) {
    return scope.matrix && scope.name.find("text_projection") == std::string::npos;
}

std::vector<double> tsv_update(const TensorScope& scope, TensorBlocks& in) {
    const std::size_t cols = scope.row_length, n = in.numel(), t = in.models();
    if (cols == 0 || n % cols != 0)
        throw std::invalid_argument(scope.name + ": TSV-Merge needs a matrix (" +
                                    std::to_string(n) + " values in rows of " +
                                    std::to_string(cols) + ")");
    const std::size_t rows = n / cols, r = std::min(rows, cols);
    // The authors' int(s.shape[0] * sv_reduction), sv_reduction = 1 / T, in double.
    const auto k =
        static_cast<std::size_t>(static_cast<double>(r) * (1.0 / static_cast<double>(t)));
    if (k == 0) return std::vector<double>(n, 0.0);
    const auto R = static_cast<Eigen::Index>(rows), C = static_cast<Eigen::Index>(cols),
               K = static_cast<Eigen::Index>(k), P = static_cast<Eigen::Index>(k * t);
    Eigen::MatrixXd u(R, P), v(C, P);
    Eigen::VectorXd s(P);
    for (std::size_t i = 0; i < t; ++i) {
        const Eigen::BDCSVD<Eigen::MatrixXd> svd(task_vector(in, i, rows, cols),
                                                 Eigen::ComputeThinU | Eigen::ComputeThinV);
        const auto at = static_cast<Eigen::Index>(i * k);
        u.middleCols(at, K) = svd.matrixU().leftCols(K);
        v.middleCols(at, K) = svd.matrixV().leftCols(K);
        s.segment(at, K) = svd.singularValues().head(K);
    }
    // The authors' sum_u and sum_v are padded with zero columns (rows) up to min(rows, cols);
    // the polar factor of [B 0] is [polar(B) ·] when B has full column rank, and the padding
    // meets zero singular values: the product is the same.
    const RowMajor merged = polar(u) * s.asDiagonal() * polar(v).transpose();
    return {merged.data(), merged.data() + merged.size()};
}

}  // namespace compatbench::merging
