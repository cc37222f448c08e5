// The inference kernels against references computed by Debian's python3-scipy (skipped, saying
// so, where /usr/bin/python3 has no scipy), plus checks that need no Python:
//  - Spearman's and Kendall's exact permutation p for n <= 10 (methods.md §5.1) against
//    scipy.stats.permutation_test(permutation_type="pairings", n_resamples=inf);
//  - the Mann–Whitney U test (methods.md §5.1) against scipy.stats.mannwhitneyu;
//  - the multiway cluster bootstrap (methods.md §5.2) against a numpy reimplementation that
//    makes the same seeded draws, row for row, and takes np.quantile's percentile interval;
//  - verdicts, design problems and undefined draws, by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "common/hash.h"
#include "stats/bootstrap.h"
#include "stats/correlation.h"
#include "stats/summary.h"
#include "stats/verdict.h"

namespace cs = compatbench::stats;

namespace {

constexpr const char* kNoScipy = "/usr/bin/python3 has no scipy (apt-get install python3-scipy)";

bool have_scipy() {
    return std::system("/usr/bin/python3 -c 'import scipy.stats' > /dev/null 2>&1") == 0;
}

std::string join(const std::vector<double>& v) {
    std::ostringstream s;
    s.precision(17);  // round-trips every double
    for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
    return s.str();
}

void expect_close(double got, double want, double rel, const std::string& what) {
    if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << what << ": " << got << " vs nan";
        return;
    }
    EXPECT_LE(std::fabs(got - want), rel * std::max(std::fabs(want), 1e-3))
        << what << ": " << got << " vs " << want;
}

// The whitespace-separated words a script wrote, read in order (never throws: a missing word
// reads as NaN, or 0 as a count, and fails the test).
struct Words {
    std::vector<std::string> items;
    std::size_t next = 0;
    std::string word() {
        if (next < items.size()) return items[next++];
        ADD_FAILURE() << "the script wrote too few values";
        return "nan";
    }
    double number() { return std::strtod(word().c_str(), nullptr); }
    std::size_t count() {
        return static_cast<std::size_t>(std::strtoull(word().c_str(), nullptr, 10));
    }
};

// Runs `script` with /usr/bin/python3 on `cases` (its first argument, a file); true when it
// succeeded, with the words of its output file (its second argument) in `out`.
bool run_python(const std::string& name, const char* script, const std::string& cases, Words& out) {
    const std::string base = ::testing::TempDir() + "/" + name;
    std::ofstream(base + ".py") << script;
    std::ofstream(base + "_in.txt") << cases;
    const std::string cmd =
        "/usr/bin/python3 " + base + ".py " + base + "_in.txt " + base + "_out.txt";
    if (std::system(cmd.c_str()) != 0) {
        ADD_FAILURE() << cmd << " failed";
        return false;
    }
    std::ifstream in(base + "_out.txt");
    for (std::string w; in >> w;) out.items.push_back(w);
    return true;
}

// ---- §5.1: exact permutation p of Spearman and Kendall ------------------------------------
// scipy's own null and comparison (relative tolerance 1e-14) with vectorised rho and tau-b.
// For n = 10 permutation_test would list 3.6M tuples in Python (minutes): the same null is
// enumerated in numpy chunks and compared by scipy's rule.
constexpr const char* kCorrelationScript = R"py(
import sys, numpy as np, scipy.stats as s
def ranks(v):  # average ranks along the last axis, as scipy.stats.rankdata
    lt = (v[..., None, :] < v[..., :, None]).sum(-1)
    return lt + ((v[..., None, :] == v[..., :, None]).sum(-1) + 1) / 2.0
def unit(v):
    v = v - v.mean(axis=-1, keepdims=True)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)
def spearman_statistic(x):
    rx = unit(ranks(x))
    return lambda y, axis=-1: (unit(ranks(y)) * rx).sum(-1)
def kendall_statistic(x):  # tau-b: its denominator does not change with the ordering of y
    i, j = np.triu_indices(len(x), 1)
    sx = np.sign(x[i] - x[j])
    def statistic(y, axis=-1):
        sy = np.sign(y[..., i] - y[..., j])
        return (sx * sy).sum(-1) / np.sqrt(np.count_nonzero(sx) * np.count_nonzero(sy, axis=-1))
    return statistic
def all_orderings(n):  # the n! permutations of range(n), one a row
    p = np.zeros((1, 0), dtype=np.int8)
    for k in range(n):
        q = np.empty((len(p) * (k + 1), k + 1), dtype=np.int8)
        for pos in range(k + 1):
            b = q[pos * len(p):(pos + 1) * len(p)]
            b[:, :pos], b[:, pos], b[:, pos + 1:] = p[:, :pos], k, p[:, pos:]
        p = q
    return p
def exact_p(y, statistic):
    if len(y) <= 9:
        return s.permutation_test((y,), statistic, vectorized=True, permutation_type='pairings',
                                  n_resamples=np.inf, alternative='two-sided').pvalue
    observed, orders, le, ge = statistic(y), all_orderings(len(y)), 0, 0
    gamma = max(1e-14, abs(1e-14 * observed))  # permutation_test's tolerance
    for c in range(0, len(orders), 400000):
        null = statistic(y[orders[c:c + 400000]])
        le += np.count_nonzero(null <= observed + gamma)
        ge += np.count_nonzero(null >= observed - gamma)
    return min(1.0, 2.0 * min(le, ge) / len(orders))
out = open(sys.argv[2], 'w')
for line in open(sys.argv[1]):
    x, y = (np.array([float(v) for v in p.split(',')]) for p in line.split(';'))
    sp, kt = s.spearmanr(x, y), s.kendalltau(x, y)
    assert abs(spearman_statistic(x)(y) - sp.statistic) < 1e-12
    assert abs(kendall_statistic(x)(y) - kt.statistic) < 1e-12
    values = [sp.statistic, exact_p(y, spearman_statistic(x)),
              kt.statistic, exact_p(y, kendall_statistic(x))]
    out.write(' '.join(repr(float(v)) for v in values) + '\n')
)py";

TEST(ExactPermutation, MatchesScipyPermutationTest) {
    if (!have_scipy()) GTEST_SKIP() << kNoScipy;
    std::mt19937_64 rng(2024);
    std::normal_distribution<double> normal(0.0, 1.0);
    const auto constant = [](const std::vector<double>& v) {
        return std::all_of(v.begin(), v.end(), [&](double a) { return a == v[0]; });
    };
    // 40 cases with n in 3..8 (odd ones: two to four levels, many ties), then n = 9 without
    // ties (Kendall from the discordant-pair distribution). n = 10 (3.6M orderings, seconds of
    // numpy) is checked against values enumerated once: stats_test.cpp SP1 and Kendall, and
    // the hand values below.
    std::vector<std::vector<double>> xs, ys;
    std::string cases;
    for (int c = 0; c < 41; ++c) {
        std::size_t n = c == 40 ? 9 : 10;
        if (c < 40) n = 3 + static_cast<std::size_t>(rng() % 6);
        const bool ties = c % 2 == 1;
        std::uniform_int_distribution<int> level(0, 1 + static_cast<int>(rng() % 3));
        std::vector<double> x(n), y(n);
        do {
            for (std::size_t i = 0; i < n; ++i) {
                x[i] = ties ? level(rng) : normal(rng);
                y[i] = ties ? level(rng) + 0.5 * x[i] : 0.5 * x[i] + normal(rng);
            }
        } while (constant(x) || constant(y));
        cases += join(x) + ";" + join(y) + "\n";
        xs.push_back(x);
        ys.push_back(y);
    }
    Words want;
    ASSERT_TRUE(run_python("exact_permutation", kCorrelationScript, cases, want));
    for (std::size_t c = 0; c < xs.size(); ++c) {
        const std::string tag =
            "case " + std::to_string(c) + " (n=" + std::to_string(xs[c].size()) + ")";
        const auto s = cs::spearman(xs[c], ys[c]);
        const auto k = cs::kendall(xs[c], ys[c]);
        expect_close(s.r, want.number(), 1e-12, tag + " rho");
        expect_close(s.p, want.number(), 1e-9, tag + " spearman p");
        expect_close(k.r, want.number(), 1e-12, tag + " tau");
        expect_close(k.p, want.number(), 1e-9, tag + " kendall p");
    }
}

// By hand: the p of the largest statistic is (number of orderings reaching it) * 2 / n!.
TEST(ExactPermutation, HandValues) {
    // n = 5, rho = 0.9 (sum d^2 = 2): the identity and the 4 adjacent swaps reach it, so
    // p = 2 * 5/120. tau = 0.8 (one discordant pair): P(D <= 1) = (1 + 4)/120, the same p.
    const std::vector<double> x = {1, 2, 3, 4, 5}, y = {1, 2, 3, 5, 4};
    EXPECT_NEAR(cs::spearman(x, y).r, 0.9, 1e-12);
    EXPECT_DOUBLE_EQ(cs::spearman(x, y).p, 10.0 / 120.0);
    EXPECT_NEAR(cs::kendall(x, y).r, 0.8, 1e-12);
    EXPECT_DOUBLE_EQ(cs::kendall(x, y).p, 10.0 / 120.0);
    // rho = tau = 1: only the identity, p = 2/120 (no longer the t distribution's 0).
    EXPECT_DOUBLE_EQ(cs::spearman(x, x).p, 2.0 / 120.0);
    EXPECT_DOUBLE_EQ(cs::kendall(x, x).p, 2.0 / 120.0);
    // n = 10: 2/10! untied; with one tie in both (x = y) the swap of the tied pair also
    // reaches the maximum: 4/10! (Kendall by enumeration here, with ties).
    std::vector<double> ten(10), tied(10);
    for (std::size_t i = 0; i < 10; ++i) {
        ten[i] = static_cast<double>(i);
        tied[i] = static_cast<double>(i == 0 ? 0 : i - 1);
    }
    EXPECT_DOUBLE_EQ(cs::spearman(ten, ten).p, 2.0 / 3628800.0);
    EXPECT_DOUBLE_EQ(cs::kendall(ten, ten).p, 2.0 / 3628800.0);
    EXPECT_DOUBLE_EQ(cs::spearman(tied, tied).p, 4.0 / 3628800.0);
    EXPECT_DOUBLE_EQ(cs::kendall(tied, tied).p, 4.0 / 3628800.0);
}

// ---- §5.1: Mann–Whitney U ----------------------------------------------------------------
constexpr const char* kMannWhitneyScript = R"py(
import sys, numpy as np, scipy.stats as s
out = open(sys.argv[2], 'w')
for line in open(sys.argv[1]):
    x, y = (np.array([float(v) for v in p.split(',')]) for p in line.split(';'))
    r = s.mannwhitneyu(x, y, alternative='two-sided', method='auto')
    both = np.concatenate([x, y])  # scipy's 'auto': exact when a group has <= 8 and no ties
    exact = (len(x) <= 8 or len(y) <= 8) and len(np.unique(both)) == len(both)
    out.write(f'{float(r.statistic)!r} {float(r.pvalue)!r} {int(exact)}\n')
)py";

TEST(MannWhitney, MatchesScipy) {
    if (!have_scipy()) GTEST_SKIP() << kNoScipy;
    std::mt19937_64 rng(99);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<std::vector<double>> xs, ys;
    std::string cases;
    for (int c = 0; c < 40; ++c) {
        std::vector<double> x, y;
        if (c < 25) {  // no ties: 0..19 a group of at most 8 (exact), 20..24 both of 9..20
            std::size_t nx = 1 + rng() % 8, ny = 1 + rng() % 12;
            if (c >= 20) {
                nx = 9 + rng() % 12;
                ny = 9 + rng() % 12;
            }
            if (c % 2) std::swap(nx, ny);
            for (std::size_t i = 0; i < nx; ++i) x.push_back(normal(rng));
            for (std::size_t i = 0; i < ny; ++i) y.push_back(0.7 + normal(rng));
        } else {  // three to seven levels, groups of 3..29: ties, the normal approximation
            std::uniform_int_distribution<int> level(0, 2 + static_cast<int>(rng() % 5));
            const std::size_t nx = 3 + rng() % 27, ny = 3 + rng() % 27;
            for (std::size_t i = 0; i < nx; ++i) x.push_back(level(rng));
            for (std::size_t i = 0; i < ny; ++i) y.push_back(1 + level(rng));
        }
        cases += join(x) + ";" + join(y) + "\n";
        xs.push_back(x);
        ys.push_back(y);
    }
    Words want;
    ASSERT_TRUE(run_python("mann_whitney", kMannWhitneyScript, cases, want));
    for (std::size_t c = 0; c < xs.size(); ++c) {
        const std::string tag = "case " + std::to_string(c);
        const auto m = cs::mann_whitney(xs[c], ys[c]);
        const double u = want.number(), p = want.number();
        EXPECT_DOUBLE_EQ(m.u, u) << tag;
        EXPECT_DOUBLE_EQ(m.auc, u / static_cast<double>(xs[c].size() * ys[c].size())) << tag;
        expect_close(m.p, p, 1e-9, tag + " p");
        EXPECT_EQ(m.exact, want.count() == 1) << tag;
    }
}

// ---- §5.2: the multiway cluster bootstrap ------------------------------------------------
// The reference draws with splitmix64 (common/hash.h, wrapping at 64 bits) and resamples as
// bootstrap.cpp's resampled_rows: factors in order; a top-level factor draws as many picks as
// it has models and multiplies each row's weight by the product of its members' counts
// (unless a factor is nested in it); a nested factor, for each parent model in id order and
// each of its copies, draws its children (by id) anew and adds the product of the row's
// members' counts. The statistic is taken on np.repeat(rows, weight).
constexpr const char* kBootstrapScript = R"py(
import sys, numpy as np, scipy.stats as s
M = 2**64 - 1
def splitmix64(x):
    x = (x + 0x9e3779b97f4a7c15) & M
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
    return x ^ (x >> 31)
def picks(seed, draw):  # the j-th pick: splitmix64(splitmix64(splitmix64(seed) + draw) + j) % n
    base, j = splitmix64((splitmix64(seed) + draw) & M), [0]
    def pick(n):
        j[0] += 1
        return splitmix64((base + j[0] - 1) & M) % n
    return pick
def resampled_rows(rows, factors, seed, draw):
    pick, counts, weight = picks(seed, draw), {}, np.ones(rows, dtype=np.int64)
    has_child = {parent for parent, _, _ in factors if parent >= 0}
    for i, (parent, labels, members) in enumerate(factors):
        if parent < 0:
            c = np.zeros(labels, dtype=np.int64)
            for _ in range(labels): c[pick(labels)] += 1
            counts[i] = c
            if i not in has_child:
                weight *= [np.prod(c[m]) for m in members]
            continue
        of, w = factors[parent][2], np.zeros(rows, dtype=np.int64)
        for p in range(factors[parent][1]):
            mine = [r for r in range(rows) if of[r][0] == p]
            kids = sorted({m for r in mine for m in members[r]})
            for _ in range(counts[parent][p]):
                c = dict.fromkeys(kids, 0)
                for _ in kids: c[kids[pick(len(kids))]] += 1
                for r in mine: w[r] += np.prod([c[m] for m in members[r]])
        weight *= w
    return np.repeat(np.arange(rows), weight)
def cosine(a, b):  # Pearson r as correlation.cpp: NaN below 3 values or for a constant
    if len(a) < 3: return np.nan
    a, b = a - a.mean(), b - b.mean()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return np.nan if na == 0 or nb == 0 else float(np.clip(np.dot(a / na, b / nb), -1, 1))
statistics = {'pearson': cosine, 'mean': lambda x, y: x.mean(),
              'spearman': lambda x, y: cosine(s.rankdata(x), s.rankdata(y))}
lines, out = [l.split() for l in open(sys.argv[1]) if l.strip()], open(sys.argv[2], 'w')
while lines:
    name, seed, draws, rows, nf = lines.pop(0)
    seed, draws, rows, factors = int(seed), int(draws), int(rows), []
    for _ in range(int(nf)):
        f = lines.pop(0)
        factors.append((int(f[0]), int(f[1]), [[int(m) for m in r.split('+')] for r in f[2:]]))
    x, y = (np.array([float(v) for v in lines.pop(0)[0].split(',')]) for _ in range(2))
    values, undefined = [], 0
    for d in range(draws):
        r = resampled_rows(rows, factors, seed, d)
        if d < 20: out.write(' '.join(str(v) for v in [len(r), *r]) + '\n')
        v = statistics[name](x[r], y[r]) if len(r) else np.nan
        if np.isnan(v): undefined += 1
        else: values.append(v)
    lo, hi = np.quantile(values, [(1 - 0.95) / 2, (1 + 0.95) / 2])
    out.write(f'{lo!r} {hi!r} {np.std(values, ddof=1)!r} {undefined}\n')
)py";

struct BootstrapCase {
    std::string statistic;  // "pearson", "spearman" or "mean" (of x)
    std::uint64_t seed = 0;
    std::size_t draws = 200;
    cs::ClusterDesign design;
    std::vector<double> x, y;
    std::string describe;  // what design.describe() should say
};

// "<statistic> <seed> <draws> <rows> <factors>", a line per factor "<parent> <models>
// <row 0's model ids joined by +> ...", then x and y.
std::string serialise(const BootstrapCase& k) {
    std::ostringstream out;
    out << k.statistic << ' ' << k.seed << ' ' << k.draws << ' ' << k.design.rows << ' '
        << k.design.factors.size() << '\n';
    for (const auto& f : k.design.factors) {
        out << f.parent << ' ' << f.labels.size();
        for (const auto& m : f.members) {
            out << ' ';
            for (std::size_t i = 0; i < m.size(); ++i) out << (i ? "+" : "") << m[i];
        }
        out << '\n';
    }
    out << join(k.x) << '\n' << join(k.y) << '\n';
    return out.str();
}

cs::ResampleStatistic statistic_of(const BootstrapCase& k) {
    return [&k](std::span<const std::size_t> rows) {
        const auto a = cs::pick(k.x, rows), b = cs::pick(k.y, rows);
        if (k.statistic == "pearson") return cs::pearson(a, b).r;
        if (k.statistic == "spearman") return cs::spearman_rho(a, b);
        return cs::mean(a);
    };
}

// (a) crossed: 4 vision x 3 text encoders, 12 alignment pairs, Pearson r. (b) nested: pairs
// of 4 fine-tunes within each of 3 backbones (6 pairs each), Spearman rho. (c) 3 tasks x
// pairs from one pool of 4 models (a row holds two members of the pool), the mean of x: a
// draw that picks one model four times has no pair, no rows, an undefined mean.
// Values are multiples of 1/8: sums are exact, so a constant resample is seen as constant.
std::vector<BootstrapCase> bootstrap_cases() {
    std::vector<BootstrapCase> out(3);
    BootstrapCase& a = out[0];
    const double va[] = {0.5, 1.25, -0.75, 2.0}, tb[] = {0.25, -0.5, 1.0};
    std::vector<std::string> vision, text;
    for (int v = 0; v < 4; ++v)
        for (int t = 0; t < 3; ++t) {
            vision.push_back("vision" + std::to_string(v));
            text.push_back("text" + std::to_string(t));
            a.x.push_back(va[v] + tb[t]);
            a.y.push_back(va[v] - 0.5 * tb[t] + 0.25 * ((3 * v + t) * 5 % 4));
        }
    a.statistic = "pearson";
    a.seed = 7;
    a.describe = "vision × text";
    a.design.rows = a.x.size();
    a.design.factors = {cs::factor_from_labels("vision", {vision}),
                        cs::factor_from_labels("text", {text})};

    BootstrapCase& b = out[1];
    std::vector<std::string> backbone, model_a, model_b;
    for (int k = 0; k < 3; ++k)
        for (int i = 0; i < 4; ++i)
            for (int j = i + 1; j < 4; ++j) {
                const std::string ft = "backbone" + std::to_string(k) + "/ft";
                backbone.push_back("backbone" + std::to_string(k));
                model_a.push_back(ft + std::to_string(i));
                model_b.push_back(ft + std::to_string(j));
                b.x.push_back(k + 0.25 * (i + j));
                const int row = static_cast<int>(b.x.size()) - 1;
                b.y.push_back(0.5 * (row * 7 % 5) + 0.5 * k + 0.125 * i);
            }
    b.statistic = "spearman";
    b.seed = 11;
    b.describe = "backbone > model_a+model_b";
    b.design.rows = b.x.size();
    b.design.factors.push_back(cs::factor_from_labels("backbone", {backbone}));
    b.design.factors.push_back(cs::factor_from_labels("model_a+model_b", {model_a, model_b}));
    b.design.factors.back().parent = 0;

    BootstrapCase& c = out[2];
    std::vector<std::string> task, first, second;
    for (int t = 0; t < 3; ++t)
        for (int i = 0; i < 4; ++i)
            for (int j = i + 1; j < 4; ++j) {
                task.push_back("task" + std::to_string(t));
                first.push_back("m" + std::to_string(i));
                second.push_back("m" + std::to_string(j));
                c.x.push_back(0.5 * t + i - 0.25 * j);
            }
    c.y = c.x;
    c.statistic = "mean";
    c.seed = 3;
    c.describe = "task × model_a+model_b";
    c.design.rows = c.x.size();
    c.design.factors = {cs::factor_from_labels("task", {task}),
                        cs::factor_from_labels("model_a+model_b", {first, second})};
    return out;
}

TEST(ClusterBootstrap, MatchesNumpyReference) {
    if (!have_scipy()) GTEST_SKIP() << kNoScipy;
    const auto cases = bootstrap_cases();
    std::string input;
    for (const auto& k : cases) input += serialise(k);
    Words want;
    ASSERT_TRUE(run_python("cluster_bootstrap", kBootstrapScript, input, want));
    for (const auto& k : cases) {
        const std::string tag = k.describe;
        EXPECT_EQ(k.design.describe(), k.describe);
        ASSERT_EQ(cs::design_problem(k.design), "") << tag;
        for (std::size_t d = 0; d < 20; ++d) {
            std::vector<std::size_t> rows(want.count());
            for (auto& r : rows) r = want.count();
            EXPECT_EQ(cs::resampled_rows(k.design, k.seed, d), rows) << tag << ", draw " << d;
        }
        const double lo = want.number(), hi = want.number(), se = want.number();
        const std::size_t undefined = want.count();
        const auto got = cs::bootstrap_interval(k.design, k.draws, k.seed, statistic_of(k));
        ASSERT_TRUE(got.ok()) << tag << ": " << got.reason;
        EXPECT_NEAR(got.lo, lo, 1e-12) << tag;
        EXPECT_NEAR(got.hi, hi, 1e-12) << tag;
        EXPECT_NEAR(got.se, se, 1e-12) << tag;
        EXPECT_EQ(got.draws, k.draws) << tag;
        EXPECT_EQ(got.undefined, undefined) << tag;
    }
}

// Draw 0 of seed 0 by hand, a pool {A, B} with rows A, B, A: base = splitmix64(0 + 0) =
// 0xe220a8397b1dcdaf; pick 0 = splitmix64(base) = 0xa706dd2f4d197e6f, odd: B; pick 1 =
// splitmix64(base + 1) = 0x2a98f501af37e97f, odd: B. Counts A 0, B 2: row 1 twice.
TEST(ClusterBootstrap, PicksByHand) {
    EXPECT_EQ(compatbench::splitmix64(0), 0xe220a8397b1dcdafULL);
    EXPECT_EQ(compatbench::splitmix64(0xe220a8397b1dcdafULL), 0xa706dd2f4d197e6fULL);
    EXPECT_EQ(compatbench::splitmix64(0xe220a8397b1dcdafULL + 1), 0x2a98f501af37e97fULL);
    const std::vector<std::string> pool = {"A", "B", "A"};
    cs::ClusterDesign design;
    design.rows = 3;
    design.factors.push_back(cs::factor_from_labels("pool", {pool}));
    EXPECT_EQ(design.factors[0].labels, (std::vector<std::string>{"A", "B"}));
    EXPECT_EQ(cs::resampled_rows(design, 0, 0), (std::vector<std::size_t>{1, 1}));
    // Draw 1: A and B once each, every row once.
    EXPECT_EQ(cs::resampled_rows(design, 0, 1), (std::vector<std::size_t>{0, 1, 2}));
}

// ---- verdicts (methods.md §5.3), design problems and undefined draws ----------------------
TEST(Verdict, Judge) {
    const cs::Band band{0.5, 1.0};
    EXPECT_EQ(cs::judge(0.6, 0.9, band), cs::Verdict::agrees);
    EXPECT_EQ(cs::judge(0.5, 1.0, band), cs::Verdict::agrees);  // the band is closed
    EXPECT_EQ(cs::judge(0.1, 0.4, band), cs::Verdict::disagrees);
    EXPECT_EQ(cs::judge(1.1, 1.3, band), cs::Verdict::disagrees);
    EXPECT_EQ(cs::judge(0.4, 0.7, band), cs::Verdict::inconclusive);
    EXPECT_EQ(cs::judge(0.2, 1.2, band), cs::Verdict::inconclusive);  // wider than the band
    EXPECT_EQ(cs::judge(cs::kNaN, 0.7, band), cs::Verdict::untested);
    EXPECT_EQ(cs::judge(0.6, cs::kNaN, band), cs::Verdict::untested);
    const cs::Band at_least_zero{0.0, std::numeric_limits<double>::infinity()};
    EXPECT_EQ(cs::judge(0.1, 5.0, at_least_zero), cs::Verdict::agrees);
    const auto [lo, hi] = cs::se_interval(0.5, cs::kNaN);
    EXPECT_EQ(cs::judge(lo, hi, band), cs::Verdict::untested);
    EXPECT_STREQ(cs::verdict_name(cs::Verdict::inconclusive), "inconclusive");
}

// Four rows: r = 0.83 lies in the band, but draws of two distinct rows give r = +-1 (rows 1
// and 2 alone: -1), so the interval reaches far below the band: inconclusive, never agrees.
TEST(Verdict, TooSmallStudyCannotAgree) {
    const std::vector<double> x = {1, 2, 3, 4}, y = {1, 3, 2, 5};
    EXPECT_NEAR(cs::pearson(x, y).r, 5.5 / std::sqrt(43.75), 1e-12);
    const auto ci = cs::bootstrap_interval(
        cs::independent_rows(4), 200, 1, [&](std::span<const std::size_t> rows) {
            return cs::pearson(cs::pick(x, rows), cs::pick(y, rows)).r;
        });
    ASSERT_TRUE(ci.ok()) << ci.reason;
    EXPECT_EQ(ci.undefined, 1u);  // draw 76 picks row 2 four times: x is constant (numpy)
    EXPECT_LT(ci.lo, 0.0);
    EXPECT_GE(ci.hi, 0.8);
    EXPECT_EQ(cs::judge(ci.lo, ci.hi, cs::Band{0.8, 1.0}), cs::Verdict::inconclusive);
}

TEST(ClusterBootstrap, DesignProblems) {
    EXPECT_EQ(cs::design_problem(cs::ClusterDesign{}), "no cluster factor");
    EXPECT_EQ(cs::design_problem(cs::independent_rows(4)), "");
    const std::vector<std::string> same = {"m", "m", "m"}, other = {"a", "b", "c"};
    cs::ClusterDesign one;
    one.rows = 3;
    one.factors.push_back(cs::factor_from_labels("model", {same}));
    EXPECT_NE(cs::design_problem(one).find("fewer than two clusters"), std::string::npos)
        << cs::design_problem(one);
    const auto ci =
        cs::bootstrap_interval(one, 100, 1, [](std::span<const std::size_t>) { return 0.0; });
    EXPECT_FALSE(ci.ok());
    EXPECT_EQ(ci.reason, cs::design_problem(one));
    EXPECT_EQ(cs::judge(ci.lo, ci.hi, cs::Band{}), cs::Verdict::untested);
    cs::ClusterDesign late;  // a nested factor listed before its parent
    late.rows = 3;
    late.factors = {cs::factor_from_labels("child", {other}),
                    cs::factor_from_labels("parent", {other})};
    late.factors[0].parent = 1;
    EXPECT_NE(cs::design_problem(late).find("listed before"), std::string::npos);
    cs::ClusterDesign pairs;  // a parent with two models per row
    pairs.rows = 3;
    pairs.factors = {cs::factor_from_labels("parent", {other, other}),
                     cs::factor_from_labels("child", {other})};
    pairs.factors[1].parent = 0;
    EXPECT_NE(cs::design_problem(pairs).find("one model per row"), std::string::npos);
}

// An AUROC of six rows with one positive: a draw without row 0 (or of row 0 alone) has one
// class, so the statistic is NaN there; those draws are counted, not dropped.
TEST(ClusterBootstrap, UndefinedDrawsAreCounted) {
    const std::vector<double> label = {1, 0, 0, 0, 0, 0};
    const std::vector<double> score = {0.9, 0.1, 0.4, 0.35, 0.8, 0.2};
    const auto design = cs::independent_rows(6);
    const cs::ResampleStatistic auroc = [&](std::span<const std::size_t> rows) {
        std::vector<double> pos, neg;
        for (std::size_t r : rows) (label[r] > 0 ? pos : neg).push_back(score[r]);
        if (pos.empty() || neg.empty()) return cs::kNaN;
        return cs::mann_whitney(pos, neg).auc;
    };
    std::size_t one_class = 0;
    for (std::size_t d = 0; d < 200; ++d) {
        const auto rows = cs::resampled_rows(design, 9, d);
        if (std::find(rows.begin(), rows.end(), std::size_t{0}) == rows.end() ||
            std::all_of(rows.begin(), rows.end(), [](std::size_t r) { return r == 0; }))
            ++one_class;
    }
    const auto ci = cs::bootstrap_interval(design, 200, 9, auroc);
    ASSERT_TRUE(ci.ok()) << ci.reason;
    EXPECT_EQ(ci.draws, 200u);
    EXPECT_EQ(ci.undefined, one_class);
    EXPECT_EQ(ci.undefined, 69u);  // (5/6)^6 of the draws, about 67, is expected (numpy: 69)
    // Undefined in more than half of the draws: no interval, and the reason says so.
    const auto none = cs::bootstrap_interval(design, 200, 9,
                                             [](std::span<const std::size_t>) { return cs::kNaN; });
    EXPECT_EQ(none.reason, "undefined in 200 of 200 draws");
    EXPECT_EQ(none.undefined, 200u);
    EXPECT_EQ(cs::judge(none.lo, none.hi, cs::Band{}), cs::Verdict::untested);
}

}  // namespace
