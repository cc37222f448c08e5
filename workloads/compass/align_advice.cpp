// docs/methods.md §1.1–§1.4 for `compatbench advise align`.
#include "compass/align_advice.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace compatbench::compass {

PreparedModel prepare(std::string name, std::string paradigm, const MatF& probe, int k) {
    PreparedModel m{std::move(name), std::move(paradigm), similarity::knn_lists(probe, k), MatD()};
    const MatD x = similarity::normalized_rows(probe.cast<double>());
    const MatD centred = x.rowwise() - x.colwise().mean();  // H X: so H X Xᵀ H = Xc Xcᵀ
    m.gram.noalias() = centred * centred.transpose();
    const double norm = m.gram.norm();
    if (norm > 0) {
        m.gram /= norm;
    } else {
        m.gram.resize(0, 0);  // constant features: CKA is NaN, as linear_cka gives
    }
    return m;
}

double cka_of(const PreparedModel& a, const PreparedModel& b) {
    if (a.lists.n != b.lists.n)
        throw std::invalid_argument("'" + a.name + "' and '" + b.name + "' have " +
                                    std::to_string(a.lists.n) + " and " +
                                    std::to_string(b.lists.n) + " probe rows");
    if (a.gram.size() == 0 || b.gram.size() == 0) return NAN;
    return (a.gram.array() * b.gram.array()).sum();
}

namespace {

bool all_have_paradigms(const std::vector<PreparedModel>& models) {
    return std::all_of(models.begin(), models.end(),
                       [](const PreparedModel& m) { return !m.paradigm.empty(); });
}

void add_ceilings(std::vector<AlignPairAdvice>& pairs, const std::vector<PreparedModel>& vision,
                  const std::vector<PreparedModel>& text, const CeilingStat& stat) {
    std::vector<GridPair> grid;
    for (std::size_t i = 0; i < pairs.size(); ++i)
        grid.push_back(
            {vision[i / text.size()].paradigm, text[i % text.size()].paradigm, pairs[i].ease});
    const auto ceiling = ceilings(grid, stat);
    std::vector<double> ease, ceil;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        pairs[i].ceiling = ceiling.at({grid[i].paradigm_a, grid[i].paradigm_b});
        pairs[i].score = pairs[i].ease * pairs[i].ceiling;
        ease.push_back(pairs[i].ease);
        ceil.push_back(pairs[i].ceiling);
    }
    const auto region = regions(ease, ceil);
    for (std::size_t i = 0; i < pairs.size(); ++i) pairs[i].region = region[i];
}

}  // namespace

std::vector<AlignPairAdvice> advise_alignment(const std::vector<PreparedModel>& vision,
                                              const std::vector<PreparedModel>& text, int k,
                                              const CeilingStat& stat) {
    if (vision.empty() || text.empty())
        throw std::invalid_argument("advice needs at least one vision and one text model");
    std::vector<AlignPairAdvice> pairs;
    for (const auto& v : vision)
        for (const auto& t : text) {
            if (v.lists.n != t.lists.n)
                throw std::invalid_argument("'" + v.name + "' has " + std::to_string(v.lists.n) +
                                            " probe rows, '" + t.name + "' " +
                                            std::to_string(t.lists.n));
            pairs.push_back({v.name, t.name, similarity::mutual_knn(v.lists, t.lists, k), NAN, NAN,
                             cka_of(v, t), ""});
        }
    const bool known = all_have_paradigms(vision) && all_have_paradigms(text);
    if (known) add_ceilings(pairs, vision, text, stat);
    std::vector<std::size_t> order(pairs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const double x = known ? pairs[a].score : pairs[a].ease;
        const double y = known ? pairs[b].score : pairs[b].ease;
        return x > y || (std::isnan(y) && !std::isnan(x));
    });
    std::vector<AlignPairAdvice> out;
    for (std::size_t i : order) out.push_back(pairs[i]);
    return out;
}

}  // namespace compatbench::compass
