// Which vision × text pairs to align (methods.md §1.1–§1.4, `compatbench advise align`): for
// every pair of the models' paired probe features, ease (mutual k-NN overlap at k), the
// ceiling of its paradigm pair over every pair given, score = ease × ceiling, linear CKA and
// the region; ranked by score (by ease when the paradigms are not known). Each model's k-NN
// lists and centred Gram matrix are formed once (`prepare`), so the pairs cost little.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/eigen.h"
#include "compass/compass.h"
#include "similarity/similarity.h"

namespace compatbench::compass {

// One model's probe, prepared: its k-NN lists and its centred, unit-norm Gram matrix
// H X Xᵀ H / ‖H X Xᵀ H‖ of the row-normalised features (CKA of two models is the inner
// product of theirs, §1.4).
struct PreparedModel {
    std::string name, paradigm;  // paradigm: "" when not known
    similarity::KnnLists lists;
    MatD gram;
};
PreparedModel prepare(std::string name, std::string paradigm, const MatF& probe, int k);

struct AlignPairAdvice {
    std::string vision, text;
    double ease = 0.0, ceiling = 0.0, score = 0.0, cka = 0.0;  // ceiling, score: NaN unknown
    std::string region;                                        // "" when ceiling is unknown
};

// Every vision × text pair, ranked by score (ease without paradigms; ties: the lower
// vision, then text index), the regions over all of them (§1.3). Paradigms are known only
// when every model has one.
std::vector<AlignPairAdvice> advise_alignment(const std::vector<PreparedModel>& vision,
                                              const std::vector<PreparedModel>& text, int k,
                                              const CeilingStat& stat);

// Linear CKA (§1.4) from two prepared Gram matrices.
double cka_of(const PreparedModel& a, const PreparedModel& b);

}  // namespace compatbench::compass
