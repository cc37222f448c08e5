// The probe's caption rows: the first caption of each of the first n images, and errors that
// say what is missing.
#include <gtest/gtest.h>

#include "catalog/feature_catalog.h"

using compatbench::first_caption_rows;

TEST(FeatureCatalog, FirstCaptionOfEachProbeImage) {
    // Captions 0..5 belong to images 1, 0, 0, 2, 1, 2.
    const std::vector<int> caption_image = {1, 0, 0, 2, 1, 2};
    EXPECT_EQ(first_caption_rows(caption_image, 3), (std::vector<int>{1, 0, 3}));
    EXPECT_EQ(first_caption_rows(caption_image, 2), (std::vector<int>{1, 0}));
}

TEST(FeatureCatalog, AShortProbeSplitSaysHowManyImagesItHas) {
    const std::vector<int> caption_image = {0, 1, 2, 2};
    try {
        first_caption_rows(caption_image, 5);
        FAIL() << "a probe of 5 images from a split of 3 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "the probe needs 5 images (the `probe` key); the probe split has 3");
    }
    // An image in the middle without a caption is named.
    try {
        first_caption_rows({0, 2}, 3);
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "image 1 of the probe split has no caption");
    }
}
