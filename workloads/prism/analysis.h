// The PRISM study's analysis (methods.md §3) on plain columns: per merge operator and
// coefficient, per K, the κ sweep, paired ablations with sign tests, and the drift exponent
// of the interference score along fine-tuning checkpoints. The runner's `prism` analysis
// reads `kway_merge` tables into Merges and writes a PrismResult back; nothing here knows a
// table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stats/fit.h"

namespace compatbench::prism {

// One entry per K-way merge (the columns of a kway_merge table).
struct Merges {
    std::vector<std::string> backbone, method, members;
    std::vector<double> step, k, coef, kappa;
    std::vector<double> merged_mean, base_mean, retention, destructive, update_pct, keep_fraction,
        lambda_mean, interference, screen_score;
    std::size_t size() const { return backbone.size(); }
};

// The operators in the order their rows are listed.
inline const std::vector<std::string> kMethodOrder = {"task_arithmetic", "ties",        "dare",
                                                      "slerp",           "model_stock", "prism",
                                                      "prism_hard",      "norm_matched"};

// Means over the merges of one operator at one coefficient (κ = 1 for the PRISM family).
struct OperatorRow {
    std::string method;
    double coef;
    std::int64_t n;
    double merged_mean, merged_sd, base_mean, retention, destructive, update_pct, keep_fraction;
};
// Means over the merges of one operator and K at the analysis's coefficient.
struct KRow {
    std::string method;
    std::int64_t k, n;
    double merged_mean, base_mean, retention, destructive, interference, screen_score;
};
// Means over the merges of one operator at one κ (> 0) at the κ sweep's coefficient.
struct KappaRow {
    std::string method;
    double kappa;
    std::int64_t n;
    double merged_mean, retention, destructive, update_pct, keep_fraction, lambda_mean;
};
// Paired differences a − b of merged accuracy on the same (backbone, step, K, c).
struct AblationRow {
    std::string a, b;
    std::int64_t n;
    double mean_diff, sd_diff;
    stats::SignTest sign;
};
// score ≈ prefactor · step^exponent along one backbone's checkpoints (or "all", pooled).
struct DriftRow {
    std::string backbone, members;
    stats::PowerFit fit;
    std::int64_t first_step, last_step;
    double first_score, last_score, last_merged_mean;
    std::int64_t last_destructive;  // merges at the last checkpoint that were destructive
};

// PRISM's recovery (methods.md §3.3) over the merges of one backbone at one c (or of every
// backbone, "all"), task arithmetic and PRISM (κ = 1) paired on the same members: PRISM − TA
// on the merges task arithmetic destroys, with a sign test; and the pipeline that screens
// first (the TA merge's screening score above `threshold`: PRISM, else task arithmetic)
// against always one or the other, by mean merged accuracy and destructive count.
struct RecoveryRow {
    std::string backbone;
    double coef;
    std::int64_t n, ta_destroyed;
    double diff_destroyed, diff_all;  // PRISM − TA: mean over TA-destroyed merges, over all
    stats::SignTest sign;             // over the TA-destroyed merges
    std::int64_t flagged;
    double always_ta, always_prism, screened;
    std::int64_t prism_destructive, screened_destructive;
};

struct PrismResult {
    std::vector<OperatorRow> operators;
    std::vector<KRow> by_k;
    std::vector<KappaRow> kappa;
    std::vector<AblationRow> ablation;
    std::vector<std::string> notes;  // empty tables, undefined fits
};

// `coef`: the coefficient of the by-K table; `kappa_coef`: the κ sweep's.
PrismResult analyse(const Merges& m, double coef, double kappa_coef);
// The recovery table (above) at a screening threshold given in advance.
std::vector<RecoveryRow> recovery(const Merges& m, double threshold);
// The rows of method `a` with the row of method `b` at the same place (backbone, step, K,
// members, c; κ = 1 for the PRISM family), in place order: (row of a, row of b).
std::vector<std::pair<std::size_t, std::size_t>> paired_places(const Merges& m,
                                                               const std::string& a,
                                                               const std::string& b);
// The drift table of merges along fine-tuning checkpoints (§3.1); notes as in analyse.
std::vector<DriftRow> drift(const Merges& d, std::vector<std::string>& notes);

}  // namespace compatbench::prism
