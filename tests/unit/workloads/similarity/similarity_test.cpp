// methods.md §1 reference values and properties of the k-NN kernel.
#include <gtest/gtest.h>

#include "test_support.h"

#include <cmath>
#include <set>

#include "nn/random.h"
#include "similarity/similarity.h"

using namespace compatbench::similarity;
using compatbench::MatD;
using compatbench::MatF;

namespace {
MatD ref_x() {
    MatD x(6, 3);
    x << 1, .2, .1, .9, .3, 0, .1, 1, .2, 0, .8, .5, .3, .1, 1, .2, .4, .9;
    return x;
}
MatD ref_y() {
    MatD y(6, 2);
    y << 1, .1, .8, .5, .2, 1, .6, .9, .9, .2, .1, .8;
    return y;
}
}  // namespace

TEST(MutualKnn, MethodsReferenceValues) {
    const auto a = knn_lists(MatF(ref_x().cast<float>()), 3);
    const auto b = knn_lists(MatF(ref_y().cast<float>()), 3);
    EXPECT_DOUBLE_EQ(mutual_knn(a, b, 1), 0.16666666666666666);
    EXPECT_DOUBLE_EQ(mutual_knn(a, b, 2), 0.5);
    EXPECT_DOUBLE_EQ(mutual_knn(a, b, 3), 0.6666666666666666);
    // Computing the lists at the smaller k gives the same prefix.
    EXPECT_DOUBLE_EQ(mutual_knn(knn_lists(MatF(ref_x().cast<float>()), 2),
                                knn_lists(MatF(ref_y().cast<float>()), 2), 2),
                     0.5);
}

TEST(MutualKnn, TiesGoToTheLowerIndexAndSelfIsExcluded) {
    // Rows 1..4 are the same vector: for row 0 they tie, so the lower indices win.
    MatF x(6, 2);
    x << 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1;
    const auto l = knn_lists(x, 3);
    EXPECT_EQ(std::vector<int>(l.row(0), l.row(0) + 3), (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(std::vector<int>(l.row(2), l.row(2) + 3), (std::vector<int>{1, 3, 4}));
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 3; ++j) EXPECT_NE(l.row(i)[j], i);
}

TEST(MutualKnn, BlockSizeDoesNotChangeTheLists) {
    const MatF x = compatbench::test::random_matrix(300, 16, 7);
    const auto whole = knn_lists(x, 20, 300);
    for (int block : {1, 7, 64, 1000}) EXPECT_EQ(knn_lists(x, 20, block).index, whole.index);
}

TEST(MutualKnn, MatchesBruteForceSortedSimilarities) {
    const MatF x = compatbench::test::random_matrix(120, 8, 11);
    const auto l = knn_lists(x, 10, 32);
    const MatD u = normalized_rows(x.cast<double>());
    const MatD s = u * u.transpose();
    for (int i = 0; i < 120; ++i) {
        std::vector<std::pair<double, int>> all;
        for (int j = 0; j < 120; ++j)
            if (j != i) all.emplace_back(-s(i, j), j);
        std::sort(all.begin(), all.end());
        std::set<int> want, got(l.row(i), l.row(i) + 10);
        for (int j = 0; j < 10; ++j) want.insert(all[static_cast<std::size_t>(j)].second);
        EXPECT_EQ(got, want) << "row " << i;
    }
}

TEST(MutualKnn, IdenticalAndUnrelatedModels) {
    const MatF x = compatbench::test::random_matrix(200, 12, 3);
    const auto a = knn_lists(x, 10);
    EXPECT_DOUBLE_EQ(mutual_knn(a, a, 10), 1.0);
    // A rotation and scaling keeps cosine neighbourhoods.
    Eigen::MatrixXf q =
        Eigen::HouseholderQR<Eigen::MatrixXf>(compatbench::test::random_matrix(12, 12, 4))
            .householderQ();
    EXPECT_DOUBLE_EQ(mutual_knn(a, knn_lists(MatF(3.0f * x * q), 10), 10), 1.0);
    const double chance =
        mutual_knn(a, knn_lists(compatbench::test::random_matrix(200, 12, 5), 10), 10);
    EXPECT_LT(chance, 0.15);  // expected about k / n = 0.05
}

TEST(MutualKnn, BadInputIsAnErrorNamingTheRow) {
    MatF x = ref_x().cast<float>();
    x.row(4).setZero();
    try {
        knn_lists(x, 2);
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("row 4"), std::string::npos) << e.what();
    }
    EXPECT_THROW(knn_lists(MatF(ref_x().cast<float>()), 6), std::invalid_argument);
    EXPECT_THROW(mutual_knn(knn_lists(MatF(ref_x().cast<float>()), 2),
                            knn_lists(MatF(ref_y().cast<float>()), 2), 3),
                 std::invalid_argument);
}

TEST(LinearCka, MethodsReferenceValue) {
    EXPECT_NEAR(linear_cka(ref_x(), ref_y()), 0.46137786843561407, 1e-12);
    EXPECT_NEAR(linear_cka(ref_x(), ref_x()), 1.0, 1e-12);
}

TEST(LinearCka, EqualsTheKernelFormula) {
    const MatD x = compatbench::test::random_matrix(50, 7, 21).cast<double>(),
               y = compatbench::test::random_matrix(50, 4, 22).cast<double>();
    const MatD xn = normalized_rows(x), yn = normalized_rows(y);
    const MatD h = MatD::Identity(50, 50) - MatD::Constant(50, 50, 1.0 / 50);
    const MatD k = xn * xn.transpose(), l = yn * yn.transpose();
    const auto hsic = [&](const MatD& a, const MatD& b) { return (a * h * b * h).trace(); };
    EXPECT_NEAR(linear_cka(x, y), hsic(k, l) / std::sqrt(hsic(k, k) * hsic(l, l)), 1e-12);
}

TEST(EffectiveRank, MethodsReferenceValue) {
    MatD a(4, 3);
    a << 3, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 2;
    EXPECT_NEAR(effective_rank(a), 2.7786375553141704, 1e-12);
    EXPECT_NEAR(effective_rank(MatD::Identity(5, 5)), 5.0, 1e-12);
    EXPECT_NEAR(effective_rank(MatD::Ones(6, 4)), 1.0, 1e-12);
    EXPECT_TRUE(std::isnan(effective_rank(MatD::Zero(3, 3))));
    // Centring removes the shared mean direction.
    EXPECT_TRUE(std::isnan(effective_rank(MatD::Ones(6, 4), true)));
}

TEST(MutualKnn, ExactDuplicateRowsTieExactly) {
    // Captions repeated verbatim give identical feature rows. Each row's similarity to two
    // identical rows must be the same float, so the lower index always ranks first, whatever
    // block the rows fall in (blocks of 7 split duplicates across blocks).
    const MatF base = compatbench::test::random_matrix(150, 24, 11);
    MatF x(300, 24);
    for (int i = 0; i < 150; ++i) x.row(2 * i) = x.row(2 * i + 1) = base.row(i);
    for (int block : {7, 64, 300}) {
        const auto lists = knn_lists(x, 11, block);
        for (int r = 0; r < 300; ++r) {
            const std::int32_t* row = lists.row(r);
            std::vector<int> position(300, -1);
            for (int j = 0; j < 11; ++j) position[static_cast<std::size_t>(row[j])] = j;
            for (int c = 0; c < 300; c += 2) {  // c and c + 1 are identical rows
                if (c == r || c + 1 == r || position[static_cast<std::size_t>(c + 1)] < 0) continue;
                EXPECT_GE(position[static_cast<std::size_t>(c)], 0)
                    << "row " << r << " keeps " << c + 1 << " but not its twin " << c;
                EXPECT_LT(position[static_cast<std::size_t>(c)],
                          position[static_cast<std::size_t>(c + 1)])
                    << "row " << r << ", block " << block;
            }
            // A row's own twin is its nearest neighbour.
            EXPECT_EQ(row[0], r % 2 ? r - 1 : r + 1) << r;
        }
    }
}

TEST(MutualKnn, PermutationNullSitsAtChanceAndIsSeeded) {
    // A model against itself: ease 1; with its rows shuffled, about k/(n-1) (chance).
    const auto a = knn_lists(compatbench::test::random_matrix(200, 12, 5), 10);
    EXPECT_DOUBLE_EQ(mutual_knn(a, a, 10), 1.0);
    const NullEase null = mutual_knn_null(a, a, 10, 100, 42);
    EXPECT_NEAR(null.mean, 10.0 / 199.0, 0.01);
    EXPECT_GT(null.sd, 0.0);
    EXPECT_LT(null.sd, 0.02);
    // The same seed, the same draws; another seed, others.
    EXPECT_EQ(mutual_knn_null(a, a, 10, 100, 42).mean, null.mean);
    EXPECT_NE(mutual_knn_null(a, a, 10, 100, 43).mean, null.mean);
    // At a smaller k the prefix of the same lists.
    EXPECT_NEAR(mutual_knn_null(a, a, 5, 100, 42).mean, 5.0 / 199.0, 0.01);
    EXPECT_THROW(mutual_knn_null(a, a, 10, 1, 42), std::invalid_argument);
}
