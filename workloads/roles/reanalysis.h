// The encoder-roles claims judged again (methods.md §4 "Re-analysis", §5.3): every claim
// with a band and a three-valued verdict, intervals from the spread over replicates (Student
// t), exact tests at small n, and the best pair chosen on one half of the replicates and
// tested on the other. The pre-registered verdicts (analysis.h ClaimRow) are left as they
// were; this is written beside them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "roles/analysis.h"

namespace compatbench::roles {

// The best pair chosen on the `selection` replicates, against the pair of the two best
// singletons there (the top-2 Capacity pair), both scored on the `test` replicates.
struct HeldOutPair {
    std::string selection, test;  // replicate numbers joined by '+'
    std::string chosen, capacity;
    double chosen_score, capacity_score;  // means over the test replicates
    double difference, se, lo, hi;        // chosen - capacity, paired by test replicate
    std::string reason;                   // why there is no interval ("" when there is)
};

struct ReanalysedClaim {
    std::string claim, statistic;
    std::int64_t n;
    double value, p, lo, hi;
    std::string paper, band, verdict, reason;
};

struct Reanalysis {
    HeldOutPair held_out;
    std::vector<ReanalysedClaim> claims;
};

// `pre`: analyse()'s result on the same replicates; `seed` splits the replicates.
Reanalysis reanalyse(const Replicates& r, const RolesResult& pre, std::uint64_t seed);

}  // namespace compatbench::roles
