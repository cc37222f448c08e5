#include "similarity/similarity.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "common/hash.h"
#include "stats/summary.h"

namespace compatbench::similarity {

namespace {

void check_row(double norm, Eigen::Index row) {
    if (!(norm > 0.0) || !std::isfinite(norm))
        throw std::invalid_argument("feature row " + std::to_string(row) +
                                    (std::isfinite(norm) ? " is all zeros" : " is not finite") +
                                    ": cannot be L2-normalised");
}

using Entry = std::pair<float, std::int32_t>;

// Ranks entries by similarity (descending), then index (ascending): methods.md §1.1.
inline bool ranks_before(const Entry& a, const Entry& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// The running k nearest candidates of one row. Columns are offered in increasing index
// order, so a candidate equal to the current k-th similarity ranks after every kept one and
// is rejected: ties go to the lower index without comparing indices here.
class RowTopK {
  public:
    // `any_order`: columns may come in any index order (equal values are then kept and
    // ranked by index when compacting).
    void reset(int k, bool any_order = false) {
        k_ = static_cast<std::size_t>(k);
        any_order_ = any_order;
        buffer_.clear();
        buffer_.reserve(2 * k_);
        threshold_ = -std::numeric_limits<float>::infinity();
    }
    void offer(float value, std::int32_t index) {
        if (!(value > threshold_) && !(any_order_ && value == threshold_)) return;
        buffer_.emplace_back(value, index);
        if (buffer_.size() == 2 * k_) compact();
    }
    void finish(std::int32_t* out) {
        compact();
        std::sort(buffer_.begin(), buffer_.end(), ranks_before);
        for (std::size_t i = 0; i < k_; ++i) out[i] = buffer_[i].second;
    }

  private:
    void compact() {
        if (buffer_.size() <= k_) return;
        std::nth_element(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(k_ - 1),
                         buffer_.end(), ranks_before);
        buffer_.resize(k_);
        threshold_ = buffer_[k_ - 1].first;
        for (const Entry& e : buffer_) threshold_ = std::min(threshold_, e.first);
    }
    std::size_t k_ = 0;
    bool any_order_ = false;
    std::vector<Entry> buffer_;
    float threshold_ = 0.0f;
};

// For each row, the first row with the same bits (itself when it has no earlier copy).
std::vector<int> first_copies(const MatF& features) {
    const auto n = static_cast<int>(features.rows());
    std::unordered_map<std::uint64_t, std::vector<int>> by_hash;
    std::vector<int> first(static_cast<std::size_t>(n));
    const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows = features;
    for (int i = 0; i < n; ++i) {
        const float* r = rows.row(i).data();
        const auto bytes = static_cast<std::size_t>(rows.cols()) * sizeof(float);
        const std::uint64_t h = fnv1a64(std::string_view(reinterpret_cast<const char*>(r), bytes));
        first[static_cast<std::size_t>(i)] = i;
        for (int j : by_hash[h])
            if (std::memcmp(rows.row(j).data(), r, bytes) == 0) {
                first[static_cast<std::size_t>(i)] = j;
                break;
            }
        if (first[static_cast<std::size_t>(i)] == i) by_hash[h].push_back(i);
    }
    return first;
}

// k-NN lists when some rows are exact copies of others: similarities are formed between
// the distinct rows only, so every copy of a row gets the same value and ties go to the
// lower index exactly. Each distinct row keeps its k + 1 best columns (its own copies and
// itself included); a row's list is that list without the row itself.
void knn_lists_with_copies(const MatF& unit, const std::vector<int>& first, int k, int block,
                           KnnLists& lists) {
    const int n = static_cast<int>(unit.rows());
    std::vector<int> distinct;
    std::vector<std::vector<std::int32_t>> copies(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        if (first[static_cast<std::size_t>(i)] == i) distinct.push_back(i);
        copies[static_cast<std::size_t>(first[static_cast<std::size_t>(i)])].push_back(i);
    }
    const MatF u = unit(distinct, Eigen::all);
    const int m = static_cast<int>(distinct.size());
    RowTopK top;
    std::vector<std::int32_t> best(static_cast<std::size_t>(k + 1));
    MatF sim;
    for (int i0 = 0; i0 < m; i0 += block) {
        const int bi = std::min(block, m - i0);
        sim.noalias() = u * u.middleRows(i0, bi).transpose();  // column i: row i0 + i
        for (int i = 0; i < bi; ++i) {
            top.reset(k + 1, true);
            for (int v = 0; v < m; ++v)
                for (std::int32_t c :
                     copies[static_cast<std::size_t>(distinct[static_cast<std::size_t>(v)])])
                    top.offer(sim(v, i), c);
            top.finish(best.data());
            for (std::int32_t r :
                 copies[static_cast<std::size_t>(distinct[static_cast<std::size_t>(i0 + i)])]) {
                std::int32_t* out = lists.index.data() + static_cast<std::size_t>(r) * k;
                int j = 0;
                for (std::int32_t c : best)
                    if (c != r && j < k) out[j++] = c;
            }
        }
    }
}

}  // namespace

KnnLists knn_lists(const MatF& features, int k, int block) {
    const int n = static_cast<int>(features.rows());
    if (k < 1 || k >= n)
        throw std::invalid_argument("k = " + std::to_string(k) +
                                    " needs 1 <= k < n = " + std::to_string(n) + " probe samples");
    // Row norms column by column (contiguous in a column-major matrix), in double.
    Eigen::VectorXd squares = Eigen::VectorXd::Zero(n);
    for (Eigen::Index j = 0; j < features.cols(); ++j)
        squares.array() += features.col(j).cast<double>().array().square();
    Eigen::VectorXf inverse(n);
    for (Eigen::Index i = 0; i < n; ++i) {
        const double norm = std::sqrt(squares[i]);
        check_row(norm, i);
        inverse[i] = static_cast<float>(1.0 / norm);
    }
    const MatF unit = inverse.asDiagonal() * features;
    KnnLists lists;
    lists.n = n;
    lists.k = k;
    lists.index.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
    block = std::max(1, block);
    const std::vector<int> first = first_copies(features);
    for (int i = 0; i < n; ++i)
        if (first[static_cast<std::size_t>(i)] != i) {
            knn_lists_with_copies(unit, first, k, block, lists);
            return lists;
        }
    // Similarity is symmetric: row block I is multiplied with rows i0.. only (half the
    // products), and the result serves the rows of I (against columns i0..) and every later
    // row (against the columns of I). Each row meets its columns in increasing order, as
    // RowTopK requires: columns before its own block from earlier blocks, the rest here.
    std::vector<RowTopK> top(static_cast<std::size_t>(n));
    for (auto& t : top) t.reset(k);
    MatF sim;
    for (int i0 = 0; i0 < n; i0 += block) {
        const int bi = std::min(block, n - i0);
        const int rest = n - i0;
        // Column i: row i0 + i against rows i0 .. n-1 (contiguous).
        sim.noalias() = unit.bottomRows(rest) * unit.middleRows(i0, bi).transpose();
        for (int i = 0; i < bi; ++i) {
            const float* col = sim.col(i).data();
            RowTopK& own = top[static_cast<std::size_t>(i0 + i)];
            for (int r = 0; r < rest; ++r) {
                if (r != i) own.offer(col[r], i0 + r);
            }
            // Later rows meet column i0 + i.
            for (int r = bi; r < rest; ++r)
                top[static_cast<std::size_t>(i0 + r)].offer(col[r], i0 + i);
        }
        for (int i = 0; i < bi; ++i) {
            RowTopK& own = top[static_cast<std::size_t>(i0 + i)];
            own.finish(lists.index.data() + static_cast<std::size_t>(i0 + i) * k);
            own = RowTopK();
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

NullEase mutual_knn_null(const KnnLists& a, const KnnLists& b, int k, int draws,
                         std::uint64_t seed) {
    if (draws < 2) throw std::invalid_argument("a permutation null needs at least 2 draws");
    if (a.n != b.n || k < 1 || k > a.k || k > b.k)
        throw std::invalid_argument("a permutation null of k = " + std::to_string(k) +
                                    " needs lists of one sample count with k neighbours each");
    const auto n = static_cast<std::size_t>(b.n);
    std::vector<std::int32_t> perm(n), inverse(n);
    KnnLists shuffled;  // the first k of b's lists are all the overlap reads
    shuffled.n = b.n;
    shuffled.k = k;
    shuffled.index.resize(n * static_cast<std::size_t>(k));
    std::vector<double> eases;
    std::uint64_t state = seed;
    for (int d = 0; d < draws; ++d) {
        std::iota(perm.begin(), perm.end(), 0);
        for (std::size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[splitmix64(state++) % i]);
        for (std::size_t i = 0; i < n; ++i)
            inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int32_t>(i);
        for (int i = 0; i < b.n; ++i) {
            const std::int32_t* from = b.row(perm[static_cast<std::size_t>(i)]);
            std::int32_t* to = shuffled.index.data() + static_cast<std::size_t>(i) * k;
            for (int j = 0; j < k; ++j) to[j] = inverse[static_cast<std::size_t>(from[j])];
        }
        eases.push_back(mutual_knn(a, shuffled, k));
    }
    return {stats::mean(eases), stats::sample_sd(eases)};
}

MatD normalized_rows(const MatD& x) {
    // Column by column: contiguous in a column-major matrix.
    Eigen::VectorXd squares = Eigen::VectorXd::Zero(x.rows());
    for (Eigen::Index j = 0; j < x.cols(); ++j) squares.array() += x.col(j).array().square();
    Eigen::VectorXd inverse(x.rows());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const double norm = std::sqrt(squares[i]);
        check_row(norm, i);
        inverse[i] = 1.0 / norm;
    }
    return inverse.asDiagonal() * x;
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
