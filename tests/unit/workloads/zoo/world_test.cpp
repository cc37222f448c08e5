#include <gtest/gtest.h>

#include "zoo/world.h"

using namespace compatbench::zoo;

namespace {
// Nearest-class-mean accuracy of `x` for `labels`, fitted on the first half, scored on the second.
double nearest_mean_accuracy(const Mat& x, const std::vector<int>& labels, int classes) {
    const Eigen::Index half = x.rows() / 2;
    Mat means = Mat::Zero(classes, x.cols());
    std::vector<int> count(static_cast<std::size_t>(classes), 0);
    for (Eigen::Index i = 0; i < half; ++i) {
        means.row(labels[static_cast<std::size_t>(i)]) += x.row(i);
        ++count[static_cast<std::size_t>(labels[static_cast<std::size_t>(i)])];
    }
    for (int c = 0; c < classes; ++c)
        means.row(c) /= static_cast<float>(std::max(1, count[static_cast<std::size_t>(c)]));
    int hits = 0;
    for (Eigen::Index i = half; i < x.rows(); ++i) {
        Eigen::Index best = 0;
        (means.rowwise() - x.row(i)).rowwise().squaredNorm().minCoeff(&best);
        hits += best == labels[static_cast<std::size_t>(i)];
    }
    return static_cast<double>(hits) / static_cast<double>(x.rows() - half);
}
}  // namespace

TEST(World, SameSeedSameBytesOtherSeedOtherWorld) {
    WorldSpec spec;
    const World a(spec), b(spec);
    const Split sa = a.make_split("train", 64), sb = b.make_split("train", 64);
    EXPECT_EQ(sa.images, sb.images);
    EXPECT_EQ(sa.captions, sb.captions);
    EXPECT_EQ(sa.scenes.concept_id, sb.scenes.concept_id);
    spec.seed = 2;
    EXPECT_NE(World(spec).make_split("train", 64).images, sa.images);
}

TEST(World, SplitsAreDisjointDrawsAndPrefixStable) {
    const World w(WorldSpec{});
    const Split probe1024 = w.make_split("probe", 1024), probe2048 = w.make_split("probe", 2048);
    // The same scenes; renderings equal up to float rounding (GEMM blocking depends on the
    // matrix height, so the zoo slices the smaller probe set out of the larger one).
    EXPECT_EQ(probe2048.scenes.semantic.topRows(1024), probe1024.scenes.semantic);
    EXPECT_EQ(std::vector<int>(probe2048.scenes.concept_id.begin(),
                               probe2048.scenes.concept_id.begin() + 1024),
              probe1024.scenes.concept_id);
    EXPECT_TRUE(probe2048.images.topRows(1024).isApprox(probe1024.images, 1e-5f));
    EXPECT_TRUE(probe2048.captions.topRows(1024 * 5).isApprox(probe1024.captions, 1e-5f));
    const Split flickr = w.make_split("flickr", 1024);
    EXPECT_GT((flickr.images - probe1024.images).norm(), 1.0f);
}

TEST(World, CaptionsDescribeTheirImage) {
    const World w(WorldSpec{});
    const Split s = w.make_split("eval", 200);
    ASSERT_EQ(s.captions.rows(), 1000);
    EXPECT_EQ(s.caption_image[7], 1);
    // Captions of one image are closer to each other than to other images' captions.
    double same = 0, other = 0;
    for (int i = 0; i < 200; ++i) {
        same += (s.captions.row(5 * i) - s.captions.row(5 * i + 1)).norm();
        other += (s.captions.row(5 * i) - s.captions.row(5 * ((i + 1) % 200))).norm();
    }
    EXPECT_LT(same, 0.8 * other);
}

TEST(World, ConceptsAreVisibleAndAugmentationKeepsContent) {
    WorldSpec spec;
    const World w(spec);
    const Split s = w.make_split("train", 4096);
    // Concepts are recoverable from raw images and captions, far above chance (1/64).
    EXPECT_GT(nearest_mean_accuracy(s.images, s.scenes.concept_id, spec.concepts), 0.2);
    std::vector<int> caption_concept;
    for (int img : s.caption_image)
        caption_concept.push_back(s.scenes.concept_id[static_cast<std::size_t>(img)]);
    EXPECT_GT(nearest_mean_accuracy(s.captions, caption_concept, spec.concepts), 0.2);
    // A second view: other style, same content. Closer to its own image than others are.
    const Mat view = w.augmented_view(s.scenes, 7);
    double own = 0, shuffled = 0;
    for (Eigen::Index i = 0; i < 500; ++i) {
        own += (view.row(i) - s.images.row(i)).norm();
        shuffled += (view.row(i) - s.images.row((i + 1) % 500)).norm();
    }
    EXPECT_LT(own, shuffled);
    EXPECT_GT((view - s.images).norm(), 1.0f);
    EXPECT_NE(w.augmented_view(s.scenes, 8), view);
}
