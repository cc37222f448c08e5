#include "stats/bootstrap.h"

#include <cmath>
#include <map>

#include "common/hash.h"
#include "stats/summary.h"

namespace compatbench::stats {

namespace {

// The nested factor of each factor (its index), or -1.
std::vector<int> nested_children(const ClusterDesign& design) {
    std::vector<int> child(design.factors.size(), -1);
    for (std::size_t f = 0; f < design.factors.size(); ++f)
        if (design.factors[f].parent >= 0)
            child[static_cast<std::size_t>(design.factors[f].parent)] = static_cast<int>(f);
    return child;
}

// The seeded picks of one draw: the j-th is splitmix64(splitmix64(splitmix64(seed) + draw) + j)
// mod n (the seed mixed first: seeds s and s + 1 share no draws).
class Picks {
  public:
    Picks(std::uint64_t seed, std::size_t draw) : base_(splitmix64(splitmix64(seed) + draw)) {}
    std::size_t operator()(std::size_t n) {
        return static_cast<std::size_t>(splitmix64(base_ + next_++) % n);
    }

  private:
    std::uint64_t base_, next_ = 0;
};

// How often each of n models is drawn in n picks with replacement.
std::vector<std::uint64_t> draw_counts(std::size_t n, Picks& pick) {
    std::vector<std::uint64_t> counts(n, 0);
    for (std::size_t k = 0; k < n; ++k) ++counts[pick(n)];
    return counts;
}

std::uint64_t product(const std::vector<std::uint64_t>& counts,
                      const std::vector<std::size_t>& members) {
    std::uint64_t w = 1;
    for (std::size_t m : members) w *= counts[m];
    return w;
}

// A nested factor's weight per row: over the copies of the row's parent model, the sum of
// the products of its models' counts, each copy's children drawn anew among that parent's.
std::vector<std::uint64_t> nested_weights(const ClusterFactor& f, const ClusterFactor& parent,
                                          const std::vector<std::uint64_t>& parent_counts,
                                          std::size_t rows, Picks& pick) {
    std::vector<std::vector<std::size_t>> rows_of(parent.labels.size());
    std::vector<std::map<std::size_t, std::size_t>> children(parent.labels.size());
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t p = parent.members[r][0];
        rows_of[p].push_back(r);
        for (std::size_t m : f.members[r]) children[p].emplace(m, 0);
    }
    std::vector<std::uint64_t> weight(rows, 0), counts(f.labels.size(), 0);
    for (std::size_t p = 0; p < rows_of.size(); ++p) {
        std::vector<std::size_t> ids;
        for (const auto& [m, unused] : children[p]) ids.push_back(m);
        for (std::uint64_t copy = 0; copy < parent_counts[p]; ++copy) {
            for (std::size_t m : ids) counts[m] = 0;
            for (std::size_t k = 0; k < ids.size(); ++k) ++counts[ids[pick(ids.size())]];
            for (std::size_t r : rows_of[p]) weight[r] += product(counts, f.members[r]);
        }
    }
    return weight;
}

}  // namespace

std::string ClusterDesign::describe() const {
    std::string out;
    for (const auto& f : factors) {
        if (!out.empty()) out += f.parent >= 0 ? " > " : " × ";
        out += f.name;
    }
    return out.empty() ? "rows" : out;
}

ClusterFactor factor_from_labels(std::string name,
                                 const std::vector<std::vector<std::string>>& columns) {
    ClusterFactor f;
    f.name = std::move(name);
    std::map<std::string, std::size_t> ids;
    const std::size_t rows = columns.empty() ? 0 : columns.front().size();
    f.members.resize(rows);
    for (std::size_t r = 0; r < rows; ++r)
        for (const auto& column : columns) {
            const auto [it, fresh] = ids.emplace(column.at(r), f.labels.size());
            if (fresh) f.labels.push_back(column[r]);
            f.members[r].push_back(it->second);
        }
    return f;
}

ClusterDesign independent_rows(std::size_t rows) {
    ClusterDesign d;
    d.rows = rows;
    ClusterFactor f;
    f.name = "rows";
    for (std::size_t r = 0; r < rows; ++r) {
        f.labels.push_back(std::to_string(r));
        f.members.push_back({r});
    }
    d.factors.push_back(std::move(f));
    return d;
}

std::string design_problem(const ClusterDesign& design) {
    if (design.factors.empty()) return "no cluster factor";
    const auto child = nested_children(design);
    for (std::size_t i = 0; i < design.factors.size(); ++i) {
        const ClusterFactor& f = design.factors[i];
        if (f.members.size() != design.rows)
            return f.name + ": " + std::to_string(f.members.size()) + " rows, not " +
                   std::to_string(design.rows);
        if (f.labels.size() < 2)
            return f.name + ": fewer than two clusters (" + std::to_string(f.labels.size()) + ")";
        for (const auto& m : f.members) {
            if (m.empty()) return f.name + ": a row that belongs to no model";
            for (std::size_t id : m)
                if (id >= f.labels.size()) return f.name + ": a model id past its labels";
        }
        if (f.parent < 0) continue;
        const auto p = static_cast<std::size_t>(f.parent);
        if (p >= i) return f.name + ": its parent must be listed before it";
        if (design.factors[p].parent >= 0) return f.name + ": its parent is itself nested";
        for (const auto& m : design.factors[p].members)
            if (m.size() != 1) return f.name + ": its parent must hold one model per row";
        for (std::size_t j = 0; j < design.factors.size(); ++j)
            if (j != i && design.factors[j].parent == f.parent)
                return design.factors[p].name + ": two factors nested in it";
        if (child[p] != static_cast<int>(i)) return f.name + ": nesting is inconsistent";
    }
    return {};
}

std::vector<std::size_t> resampled_rows(const ClusterDesign& design, std::uint64_t seed,
                                        std::size_t draw) {
    Picks pick(seed, draw);
    const auto child = nested_children(design);
    std::vector<std::uint64_t> weight(design.rows, 1);
    std::vector<std::vector<std::uint64_t>> counts(design.factors.size());
    for (std::size_t i = 0; i < design.factors.size(); ++i) {
        const ClusterFactor& f = design.factors[i];
        if (f.parent >= 0) {
            const auto p = static_cast<std::size_t>(f.parent);
            const auto w = nested_weights(f, design.factors[p], counts[p], design.rows, pick);
            for (std::size_t r = 0; r < design.rows; ++r) weight[r] *= w[r];
            continue;
        }
        counts[i] = draw_counts(f.labels.size(), pick);
        if (child[i] >= 0) continue;  // its nested factor's copies carry its weight
        for (std::size_t r = 0; r < design.rows; ++r) weight[r] *= product(counts[i], f.members[r]);
    }
    std::vector<std::size_t> rows;
    for (std::size_t r = 0; r < design.rows; ++r) rows.insert(rows.end(), weight[r], r);
    return rows;
}

BootstrapInterval bootstrap_interval(const ClusterDesign& design, std::size_t draws,
                                     std::uint64_t seed, const ResampleStatistic& statistic,
                                     double level) {
    BootstrapInterval out;
    out.reason = design_problem(design);
    if (!out.ok()) return out;
    if (draws == 0) {
        out.reason = "no bootstrap draws";
        return out;
    }
    std::vector<double> values;
    for (std::size_t d = 0; d < draws; ++d) {
        const auto rows = resampled_rows(design, seed, d);
        const double v = rows.empty() ? kNaN : statistic(rows);
        if (std::isnan(v))
            ++out.undefined;
        else
            values.push_back(v);
    }
    out.draws = draws;
    if (2 * out.undefined > draws) {
        out.reason = "undefined in " + std::to_string(out.undefined) + " of " +
                     std::to_string(draws) + " draws";
        return out;
    }
    out.lo = quantile(values, (1.0 - level) / 2.0);
    out.hi = quantile(values, (1.0 + level) / 2.0);
    out.se = sample_sd(values);
    return out;
}

}  // namespace compatbench::stats
