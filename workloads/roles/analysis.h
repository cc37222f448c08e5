// The encoder-roles study's analysis (methods.md §4) on plain columns: from the scores of
// every trained subset of the encoder pool, Capacity and Necessity, rankings under
// train-time (TR) and inference-time masking (IM), the best subset per size, per-category
// saturation, the pre-projector effective rank and the role taxonomy. The runner's
// `encoder_roles` analysis reads an `encoder_subset` table into Replicates and writes a
// RolesResult back; nothing here knows a table.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace compatbench::roles {

// One trained subset's benchmark scores as its row holds them: the mean per category (in
// the order of `categories`; `bench_category[b]` is benchmark b's), then the mean over all
// benchmarks. All NaN when `scores` is empty (an evaluation that did not run).
std::vector<double> category_means(std::span<const double> scores,
                                   std::span<const std::string> bench_category,
                                   std::span<const std::string> categories);

// One row per trained replicate of a subset (bit e of `mask` is encoder e).
struct Replicates {
    std::vector<std::string> encoders, categories;
    std::vector<unsigned> mask;
    std::vector<std::int64_t> replicate;                  // the replicate of each row
    std::vector<double> average, im_average, params;      // TR score, IM score, parameter count
    std::map<std::string, std::vector<double>> category;  // TR score per category
    std::vector<std::vector<double>> erank;               // per encoder: its block's effective rank
};

// Replicate means per subset. Maps are keyed by mask; S(U) = tr[U].
struct Subsets {
    std::vector<std::string> encoders, categories;
    unsigned full = 0;
    std::map<unsigned, double> tr, im, sd, params, replicates;
    std::map<std::string, std::map<unsigned, double>> category;
    std::map<unsigned, std::vector<double>> erank;  // per encoder, NaN where absent

    double at(const std::map<unsigned, double>& m, unsigned mask) const;
    unsigned bit(std::size_t e) const { return 1u << e; }
    std::string names(unsigned mask) const;  // "a+b"
};
Subsets subset_means(const Replicates& r);

struct CapacityRow {
    std::string encoder, category;
    double capacity, necessity, singleton, leave_one_out, full;
};
struct RankingRow {
    std::string encoder;
    double tr_singleton;
    std::int64_t tr_singleton_rank;
    double tr_loo_drop;
    std::int64_t tr_loo_rank;
    double im_singleton;
    std::int64_t im_singleton_rank;
    double im_loo_drop;
    std::int64_t im_loo_rank;
    double tr_context_var, im_context_var;
    std::int64_t contexts;
};
struct AgreementRow {
    std::string ranking;
    std::int64_t n;
    double spearman, spearman_p, kendall, kendall_p;
    std::string tr_first, im_first;
};
struct SizeRow {
    std::int64_t size, subsets;
    std::string best;
    double best_score, best_sd, fraction_of_full, mean_score;
    std::string im_best;
    double im_best_score;
};
// A pair's anchor is its member with the higher singleton score, its complement the other;
// gap_closed = (S(pair) - S({complement})) / (S(full) - S({complement})), the seed's
// definition (from the weaker member), gap_closed_from_anchor the same from the anchor.
struct BestPairRow {
    std::string pair, chosen_by;
    double score;
    std::string anchor;
    double anchor_score, anchor_delta_rank;
    std::string complement;
    double complement_score, complement_delta_rank, gap_closed, gap_closed_from_anchor;
};
struct SaturationRow {
    std::string category;
    std::vector<double> best_by_size;  // size 1..n
    std::int64_t saturation_size;
};
struct ErankRow {
    std::string encoder;
    double singleton_erank, singleton_score;
    std::vector<double> mean_erank_by_size;  // size 1..n
};
// Δrank of an encoder in a subset of two or more: its erank there minus its singleton's.
struct DeltaRankRow {
    std::string subset;
    std::int64_t size;
    std::string encoder;
    double erank_alone, erank_in_subset, delta_rank;
};
// One of the seed's claims judged by the rule of methods.md §4: "agrees", "disagrees", or
// "untested" (the regime gate failed or the statistic is undefined). The row `regime` is the
// gate itself: "holds" or "fails".
// `p` is the p-value the rule was registered with (Student t for a Spearman rho); `p_exact`
// the exact permutation p where n <= 10 (NaN for a claim without a test).
struct ClaimRow {
    std::string claim, statistic;
    std::int64_t n;
    double value, p;
    std::string paper, verdict;
    double p_exact = std::numeric_limits<double>::quiet_NaN();
};
struct SummaryRow {
    std::string statistic;
    std::int64_t n;
    double r, p;
};
struct TaxonomyRow {
    std::string encoder;
    double capacity, necessity, capacity_median, necessity_median;
    std::string top_category;
    double top_category_share, delta_rank_with_core;
    std::string role;
};

struct RolesResult {
    std::vector<CapacityRow> capacity_necessity;
    std::vector<RankingRow> rankings;
    std::vector<AgreementRow> ranking_agreement;
    std::vector<SizeRow> by_size;
    std::vector<BestPairRow> best_pair;  // empty for fewer than two encoders
    std::vector<SaturationRow> saturation;
    std::vector<ErankRow> erank;
    std::vector<DeltaRankRow> delta_rank;
    std::vector<SummaryRow> erank_summary;
    std::vector<TaxonomyRow> taxonomy;
    std::vector<ClaimRow> claims;
    std::vector<std::string> notes;  // missing subsets, undefined statistics
};

// `tolerance`: saturation is the first size whose best score is within it of the maximum.
RolesResult analyse(const Subsets& s, double tolerance);

}  // namespace compatbench::roles
