// Random inputs (with many ties) against scipy.stats, computed by Debian's python3-scipy.
// Skipped, saying so, where /usr/bin/python3 has no scipy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stats/correlation.h"
#include "stats/kruskal.h"

namespace cs = compatbench::stats;

namespace {

bool have_scipy() {
    return std::system("/usr/bin/python3 -c 'import scipy.stats' > /dev/null 2>&1") == 0;
}

std::string join(const std::vector<double>& v) {
    std::ostringstream s;
    s.precision(17);
    for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
    return s.str();
}

void expect_close(double got, double want, double rel, const std::string& what) {
    if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << what;
        return;
    }
    EXPECT_LE(std::fabs(got - want), rel * std::max(std::fabs(want), 1e-3))
        << what << ": " << got << " vs " << want;
}

}  // namespace

TEST(ScipyCrossCheck, RandomInputsWithTies) {
    if (!have_scipy())
        GTEST_SKIP() << "/usr/bin/python3 has no scipy (apt-get install python3-scipy)";
    std::mt19937_64 rng(12345);
    const std::string dir = ::testing::TempDir();
    const std::string input = dir + "/stats_cases.txt", output = dir + "/stats_scipy.txt";
    struct Case {
        std::vector<double> x, y;
        std::vector<std::vector<double>> groups;
    };
    std::vector<Case> cases;
    std::ofstream in(input);
    for (int c = 0; c < 60; ++c) {
        std::uniform_int_distribution<int> size(5, 60), levels(3, 12), ngroups(2, 5);
        const int n = size(rng);
        const int lv = levels(rng);  // few levels: many ties
        std::uniform_int_distribution<int> pick(0, lv - 1);
        std::normal_distribution<double> noise(0.0, 1.0);
        Case k;
        for (int i = 0; i < n; ++i) {
            const double a = c % 2 ? pick(rng) : noise(rng);
            k.x.push_back(a);
            k.y.push_back(c % 3 ? 0.5 * a + pick(rng) : noise(rng));
        }
        const int g = ngroups(rng);
        for (int j = 0; j < g; ++j) {
            std::vector<double> grp;
            for (int i = 0; i < size(rng) / 4 + 1; ++i) grp.push_back(pick(rng) + 0.3 * j);
            k.groups.push_back(grp);
        }
        in << join(k.x) << ";" << join(k.y);
        for (const auto& grp : k.groups) in << ";" << join(grp);
        in << "\n";
        cases.push_back(k);
    }
    in.close();
    const std::string script =
        "import sys, scipy.stats as s, numpy as np\n"
        "out = open(sys.argv[2], 'w')\n"
        "for line in open(sys.argv[1]):\n"
        "    parts = [np.array([float(v) for v in p.split(',')]) for p in "
        "line.strip().split(';')]\n"
        "    x, y, groups = parts[0], parts[1], parts[2:]\n"
        "    p = s.pearsonr(x, y); ci = p.confidence_interval(0.95)\n"
        "    sp = s.spearmanr(x, y); kw = s.kruskal(*groups)\n"
        "    out.write(' '.join(repr(float(v)) for v in [p.statistic, p.pvalue, ci.low, ci.high, "
        "sp.correlation, sp.pvalue, kw.statistic, kw.pvalue]) + '\\n')\n";
    const std::string script_path = dir + "/stats_scipy.py";
    std::ofstream(script_path) << script;
    const std::string cmd = "/usr/bin/python3 " + script_path + " " + input + " " + output;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream want(output);
    for (std::size_t c = 0; c < cases.size(); ++c) {
        double w[8];
        for (double& v : w) {
            std::string token;
            want >> token;
            v = token == "nan" ? NAN : std::stod(token);
        }
        const auto p = cs::pearson(cases[c].x, cases[c].y);
        const auto s = cs::spearman(cases[c].x, cases[c].y);
        const auto k = cs::kruskal_wallis(cases[c].groups);
        const std::string tag = "case " + std::to_string(c);
        expect_close(p.r, w[0], 1e-12, tag + " pearson r");
        expect_close(p.p, w[1], 1e-9, tag + " pearson p");
        expect_close(p.ci_low, w[2], 1e-12, tag + " ci low");
        expect_close(p.ci_high, w[3], 1e-12, tag + " ci high");
        expect_close(s.r, w[4], 1e-12, tag + " spearman rho");
        // spearmanr's p is Student t; ours is exact up to n = 10 (inference_scipy_test.cpp).
        if (cases[c].x.size() > cs::kExactPermutationMax)
            expect_close(s.p, w[5], 1e-9, tag + " spearman p");
        expect_close(k.h, w[6], 1e-12, tag + " kruskal H");
        expect_close(k.p, w[7], 1e-9, tag + " kruskal p");
    }
}
