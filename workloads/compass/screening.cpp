#include "compass/screening.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "common/hash.h"

namespace compatbench::compass {

double auroc(std::span<const double> score, std::span<const std::uint8_t> positive) {
    std::vector<double> pos, neg;
    for (std::size_t i = 0; i < score.size(); ++i) (positive[i] ? pos : neg).push_back(score[i]);
    if (pos.empty() || neg.empty()) return std::numeric_limits<double>::quiet_NaN();
    double wins = 0.0;
    for (double p : pos)
        for (double n : neg) wins += p > n ? 1.0 : (p == n ? 0.5 : 0.0);
    return wins / (static_cast<double>(pos.size()) * static_cast<double>(neg.size()));
}

Interval auroc_interval(std::span<const double> score, std::span<const std::uint8_t> positive,
                        int draws, std::uint64_t seed, double level) {
    const std::size_t n = score.size();
    const auto both = std::count(positive.begin(), positive.end(), 1);
    if (n == 0 || draws < 1 || both == 0 || both == static_cast<std::ptrdiff_t>(n)) return {};
    std::vector<double> values, s(n);
    std::vector<std::uint8_t> p(n);
    std::uint64_t state = seed;
    while (static_cast<int>(values.size()) < draws) {
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t pick = splitmix64(state++) % n;
            s[i] = score[pick];
            p[i] = positive[pick];
        }
        const double a = auroc(s, p);
        if (!std::isnan(a)) values.push_back(a);
    }
    std::sort(values.begin(), values.end());
    // The percentiles as numpy's default (linear between order statistics).
    const auto at = [&](double q) {
        const double h = q * static_cast<double>(values.size() - 1);
        const auto lo = static_cast<std::size_t>(std::floor(h));
        const std::size_t hi = std::min(lo + 1, values.size() - 1);
        return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
    };
    return {at((1.0 - level) / 2.0), at((1.0 + level) / 2.0)};
}

Confusion confusion(std::span<const double> score, std::span<const std::uint8_t> positive,
                    double threshold) {
    Confusion c;
    for (std::size_t i = 0; i < score.size(); ++i) {
        const bool flagged = score[i] > threshold;
        if (positive[i])
            (flagged ? c.tp : c.fn)++;
        else
            (flagged ? c.fp : c.tn)++;
    }
    return c;
}

BestThreshold best_threshold(std::span<const double> score,
                             std::span<const std::uint8_t> positive) {
    std::vector<double> v(score.begin(), score.end());
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    std::vector<double> cuts;
    if (!v.empty()) cuts.push_back(v.front() - 1.0);
    for (std::size_t i = 0; i + 1 < v.size(); ++i) cuts.push_back(0.5 * (v[i] + v[i + 1]));
    BestThreshold best;
    best.youden = -std::numeric_limits<double>::infinity();
    for (double t : cuts) {
        const Confusion c = confusion(score, positive, t);
        const double p = static_cast<double>(c.tp + c.fn), n = static_cast<double>(c.fp + c.tn);
        const double j = (p > 0 ? static_cast<double>(c.tp) / p : 0.0) -
                         (n > 0 ? static_cast<double>(c.fp) / n : 0.0);
        if (j > best.youden) best = {t, j, c};
    }
    return best;
}

ScreeningSummary screen(std::span<const double> score, std::span<const std::uint8_t> positive,
                        std::span<const std::string> group) {
    ScreeningSummary out;
    out.n = static_cast<std::int64_t>(score.size());
    out.positives = std::count(positive.begin(), positive.end(), std::uint8_t{1});
    out.auroc = auroc(score, positive);
    out.best = best_threshold(score, positive);
    // Every other group in name order fits the threshold; the rest are predicted.
    const std::set<std::string> groups(group.begin(), group.end());
    std::set<std::string> fit_groups;
    bool take = true;
    for (const auto& g : groups) {
        if (take) fit_groups.insert(g);
        take = !take;
    }
    std::vector<double> fit_score, test_score;
    std::vector<std::uint8_t> fit_positive, test_positive;
    for (std::size_t i = 0; i < score.size(); ++i) {
        const bool fit = fit_groups.count(group[i]) > 0;
        (fit ? fit_score : test_score).push_back(score[i]);
        (fit ? fit_positive : test_positive).push_back(positive[i]);
    }
    out.fit_n = static_cast<std::int64_t>(fit_score.size());
    out.test_n = static_cast<std::int64_t>(test_score.size());
    out.fitted_threshold = best_threshold(fit_score, fit_positive).threshold;
    out.predicted = confusion(test_score, test_positive, out.fitted_threshold);
    if (out.test_n > 0)
        out.accuracy = static_cast<double>(out.predicted.tp + out.predicted.tn) /
                       static_cast<double>(out.test_n);
    return out;
}

}  // namespace compatbench::compass
