// The multi-encoder subset model (zoo/roles.h): it trains, masking only touches the masked
// encoders' blocks, its parameters round-trip, and each block has its own effective rank.
#include <gtest/gtest.h>

#include "zoo/roles.h"

using namespace compatbench::zoo;

namespace {
Encoder pool_encoder(Paradigm paradigm, int out_dim, std::uint64_t seed, const World& world,
                     const Split& train) {
    EncoderSpec spec;
    spec.name = paradigm_name(paradigm);
    spec.paradigm = paradigm;
    spec.width = 32;
    spec.out_dim = out_dim;
    spec.steps = 30;
    spec.seed = seed;
    TrainSummary s;
    return train_encoder(spec, world, train, s);
}
}  // namespace

TEST(Roles, MaskMembersAreTheSetBits) {
    EXPECT_EQ(mask_members(0b10110u, 5), (std::vector<int>{1, 2, 4}));
    EXPECT_TRUE(mask_members(0u, 5).empty());
}

TEST(Roles, SubsetModelTrainsMasksAndRoundTrips) {
    WorldSpec ws;
    ws.concepts = 16;
    const World world(ws);
    const Split train = world.make_split("train", 1024), eval = world.make_split("coco", 400);
    const auto benchmarks = pool_benchmarks(ws);
    ASSERT_EQ(benchmarks.size(), 16u);
    std::vector<Encoder> encs = {pool_encoder(Paradigm::supervised, 16, 1, world, train),
                                 pool_encoder(Paradigm::geometry, 12, 2, world, train)};
    SubsetModel model(encs, {0, 3}, 24, benchmarks, 7);
    SubsetSpec spec;
    spec.steps = 80;
    spec.batch = 128;
    TrainSummary summary;
    model.train(train, ws, spec, summary);
    EXPECT_LT(summary.final_loss, summary.first_loss);
    const auto plain = model.evaluate(eval, ws);
    ASSERT_EQ(plain.size(), 16u);
    // Zeroing an encoder that is not in the subset (pool slot 1) changes nothing; zeroing
    // slot 3 (the geometry encoder) changes the vision-centric scores.
    EXPECT_EQ(model.evaluate(eval, ws, 0b00010u), plain);
    EXPECT_NE(model.evaluate(eval, ws, 0b01000u), plain);
    // Parameters copied into a fresh model of the same shape give the same scores.
    SubsetModel copy(encs, {0, 3}, 24, benchmarks, 99);
    EXPECT_NE(copy.evaluate(eval, ws), plain);
    auto from = model.params(), to = copy.params();
    ASSERT_EQ(from.size(), to.size());
    for (std::size_t i = 0; i < from.size(); ++i) {
        ASSERT_EQ(from[i].name, to[i].name);
        std::copy(from[i].value, from[i].value + from[i].size, to[i].value);
    }
    EXPECT_EQ(copy.evaluate(eval, ws), plain);
    const auto ranks = model.block_erank(eval.images);
    ASSERT_EQ(ranks.size(), 2u);
    EXPECT_GT(ranks[0], 1.0);
    EXPECT_LE(ranks[0], 16.0);
    EXPECT_LE(ranks[1], 12.0);
}
