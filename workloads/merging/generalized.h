// mergekit's generalized task arithmetic (methods.md §3.2; mergekit's
// merge_methods/generalized_task_arithmetic.py and sparsify.py): each task vector τ_i is
// sparsified (magnitude, random, magnitude with outliers, DELLA's rank-scaled random drop)
// and optionally rescaled to its L1 norm, weighted by w_i, then mixed by sign consensus or
// summed, normalised by the weights that took part, and scaled by λ. TIES is its magnitude
// + consensus case; the study's DARE mixes through it after its own drop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "merging/operators.h"

namespace compatbench::merging {

// Which coordinates of one task vector survive sparsification, and its rescale factor.
struct Selection {
    bool all = true;     // nothing dropped (density >= 1, or no sparsification)
    double scale = 1.0;  // ‖τ‖₁ / ‖kept τ‖₁ with `rescale`, else 1
    std::vector<std::uint64_t> bits;
    double l1 = 0.0, kept_l1 = 0.0;  // with `rescale`: ‖τ‖₁ and ‖kept τ‖₁, summed in order
    bool kept(std::size_t j) const { return all || ((bits[j >> 6] >> (j & 63)) & 1U); }
};

// Sets (or clears) the bits of the m largest of mag[0..n): ties go to the lower index
// (torch's topk and sort leave them unspecified).
void mark_top(const std::vector<double>& mag, std::size_t n, std::size_t m,
              std::vector<std::uint64_t>& bits, bool on);

// Model i's value of a per-model list (γ, ε, …), or `fallback` when the list is empty.
double per_model(const std::vector<double>& v, std::size_t i, double fallback);

// Model i's density for this tensor.
double density_of(const MergeParams& p, std::size_t i);

// The seeded uniform draw of coordinate j of task vector i (DARE's and DELLA's masks).
struct Draws {
    std::uint64_t stream;
    Draws(const MergeParams& p, const std::string& name, std::size_t i);
    double operator()(std::size_t j) const;
};

// The probability that a random sparsification keeps a coordinate: `random`'s density, and
// DELLA's (d − ε) + 2ε·rank/(cols − 1) for the 0-based ascending rank of |τ| along dimension
// 1. In double here; in_dtype.cpp computes them as torch does in the dtype.
struct KeepProbability {
    virtual ~KeepProbability() = default;
    virtual double random(double density) const { return density; }
    virtual double della(std::size_t rank, std::size_t cols, double density, double epsilon) const;
};

// Which coordinates of task vector i survive sparsify.py's method, from |τ_i| in mag: the
// bits of those kept. std::invalid_argument for DELLA's ε out of range or a row of one
// coordinate.
void select_bits(const MergeParams& p, const TensorScope& s, std::size_t i, std::size_t n,
                 const std::vector<double>& mag, std::vector<std::uint64_t>& bits,
                 const KeepProbability& keep);

// How `select` reads |τ_ij|: in double from the stored values (exact), or as
// merge_in_dtype computes τ in a dtype (each value rounded to it, then their difference),
// with that arithmetic's keep probabilities (null: KeepProbability's). With a dtype the
// selection's `scale` stays 1: the caller rescales from l1 and kept_l1 as torch does.
struct SelectIn {
    Arithmetic arithmetic = Arithmetic::exact;
    const KeepProbability* keep = nullptr;
};

// One selection pass per model whose density is below 1 (|τ_ij| of every coordinate, one
// double each, as TIES reads them). std::invalid_argument for DELLA's ε out of range or a
// row of one coordinate.
std::vector<Selection> select(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                              const SelectIn& how = {});

// Over one block: τ_ij (in t[i]) becomes w_i · selected τ_ij, then `delta` the mixed update
// before λ: with consensus the τ that agree with the sign of their sum, else all of them,
// divided by the sum of the weights that took part when normalize is `mean`.
void combine(const MergeParams& p, const std::vector<Selection>& sel, std::size_t begin,
             std::size_t count, std::vector<std::vector<double>>& t, std::vector<double>& delta);

}  // namespace compatbench::merging
