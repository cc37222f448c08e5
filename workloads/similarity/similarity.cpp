#include "similarity/similarity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace compatbench::similarity {

namespace {

void check_row(double norm, Eigen::Index row) {
    if (!(norm > 0.0) || !std::isfinite(norm))
        throw std::invalid_argument("feature row " + std::to_string(row) +
                                    (std::isfinite(norm) ? " is all zeros" : " is not finite") +
                                    ": cannot be L2-normalised");
}

// Top-k of one similarity column (rows other than `self`), ordered by value descending and
// index ascending. Scanning indices in increasing order, a candidate replaces the current
// worst only when strictly greater: a tie keeps the lower index, as §1.1 requires.
void top_k(const float* sim, int n, int self, int k, std::int32_t* out,
           std::vector<std::pair<float, std::int32_t>>& heap) {
    // min-heap on value, then max on index: the front is the entry to drop first.
    const auto worse = [](const std::pair<float, std::int32_t>& a,
                          const std::pair<float, std::int32_t>& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    heap.clear();
    int j = 0;
    for (; j < n && static_cast<int>(heap.size()) < k; ++j) {
        if (j == self) continue;
        heap.emplace_back(sim[j], j);
        std::push_heap(heap.begin(), heap.end(), worse);
    }
    float threshold = heap.front().first;
    for (; j < n; ++j) {
        if (sim[j] > threshold && j != self) {
            std::pop_heap(heap.begin(), heap.end(), worse);
            heap.back() = {sim[j], j};
            std::push_heap(heap.begin(), heap.end(), worse);
            threshold = heap.front().first;
        }
    }
    std::sort(heap.begin(), heap.end(), worse);
    for (int i = 0; i < k; ++i) out[i] = heap[static_cast<std::size_t>(i)].second;
}

}  // namespace

KnnLists knn_lists(const MatF& features, int k, int block) {
    const int n = static_cast<int>(features.rows());
    if (k < 1 || k >= n)
        throw std::invalid_argument("k = " + std::to_string(k) +
                                    " needs 1 <= k < n = " + std::to_string(n) + " probe samples");
    MatF unit = features;
    for (Eigen::Index i = 0; i < unit.rows(); ++i) {
        const double norm = unit.row(i).cast<double>().norm();
        check_row(norm, i);
        unit.row(i) /= static_cast<float>(norm);
    }
    KnnLists lists;
    lists.n = n;
    lists.k = k;
    lists.index.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
    block = std::max(1, block);
    MatF sim;
    std::vector<std::pair<float, std::int32_t>> heap;
    heap.reserve(static_cast<std::size_t>(k));
    for (int r0 = 0; r0 < n; r0 += block) {
        const int b = std::min(block, n - r0);
        // Column j holds the similarities of row r0 + j to every row (contiguous).
        sim.noalias() = unit * unit.middleRows(r0, b).transpose();
        for (int j = 0; j < b; ++j) {
            top_k(sim.col(j).data(), n, r0 + j, k,
                  lists.index.data() + static_cast<std::size_t>(r0 + j) * k, heap);
        }
    }
    return lists;
}

std::vector<double> mutual_knn_overlap(const KnnLists& a, const KnnLists& b, int k) {
    if (a.n != b.n)
        throw std::invalid_argument("k-NN lists over different sample counts (" +
                                    std::to_string(a.n) + " and " + std::to_string(b.n) + ")");
    if (k < 1 || k > a.k || k > b.k)
        throw std::invalid_argument("k = " + std::to_string(k) + " exceeds the lists' k (" +
                                    std::to_string(std::min(a.k, b.k)) + ")");
    std::vector<int> stamp(static_cast<std::size_t>(a.n), -1);
    std::vector<double> overlap(static_cast<std::size_t>(a.n));
    for (int i = 0; i < a.n; ++i) {
        const std::int32_t* na = a.row(i);
        const std::int32_t* nb = b.row(i);
        for (int j = 0; j < k; ++j) stamp[static_cast<std::size_t>(na[j])] = i;
        int common = 0;
        for (int j = 0; j < k; ++j) common += stamp[static_cast<std::size_t>(nb[j])] == i;
        overlap[static_cast<std::size_t>(i)] = static_cast<double>(common) / k;
    }
    return overlap;
}

double mutual_knn(const KnnLists& a, const KnnLists& b, int k) {
    const auto o = mutual_knn_overlap(a, b, k);
    double sum = 0.0;
    for (double v : o) sum += v;
    return o.empty() ? std::numeric_limits<double>::quiet_NaN()
                     : sum / static_cast<double>(o.size());
}

MatD normalized_rows(const MatD& x) {
    MatD out = x;
    for (Eigen::Index i = 0; i < out.rows(); ++i) {
        const double norm = out.row(i).norm();
        check_row(norm, i);
        out.row(i) /= norm;
    }
    return out;
}

double linear_cka(const MatD& x, const MatD& y) {
    if (x.rows() != y.rows())
        throw std::invalid_argument("CKA of feature matrices with different row counts (" +
                                    std::to_string(x.rows()) + " and " + std::to_string(y.rows()) +
                                    ")");
    MatD xc = normalized_rows(x);
    MatD yc = normalized_rows(y);
    xc.rowwise() -= xc.colwise().mean();
    yc.rowwise() -= yc.colwise().mean();
    const double xy = (xc.transpose() * yc).squaredNorm();
    const double xx = (xc.transpose() * xc).norm();
    const double yy = (yc.transpose() * yc).norm();
    if (!(xx > 0.0) || !(yy > 0.0)) return std::numeric_limits<double>::quiet_NaN();
    return xy / (xx * yy);
}

double effective_rank(const MatD& a, bool center) {
    MatD m = a;
    if (center) m.rowwise() -= m.colwise().mean();
    const Eigen::VectorXd s = Eigen::BDCSVD<MatD>(m).singularValues();
    const double total = s.sum();
    if (!(total > 0.0)) return std::numeric_limits<double>::quiet_NaN();
    double entropy = 0.0;
    for (Eigen::Index i = 0; i < s.size(); ++i) {
        const double p = s[i] / total;
        if (p > 0.0) entropy -= p * std::log(p);
    }
    return std::exp(entropy);
}

}  // namespace compatbench::similarity
