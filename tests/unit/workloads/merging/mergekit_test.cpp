// mergekit's semantics (docs/mergekit.md): settings, gradients and filters as config.py's
// evaluate_setting; the planner's slices, layer renumbering and parameter precedence as
// plan.py; generalized task arithmetic's sparsification and mixing as sparsify.py and
// generalized_task_arithmetic.py, on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "merging/generalized.h"
#include "merging/mergekit.h"

using namespace compatbench::merging;
namespace mk = compatbench::merging::mergekit;

namespace {

mk::Setting number(double v) {
    mk::Setting s;
    s.number = v;
    return s;
}
mk::Setting gradient(std::vector<double> g) {
    mk::Setting s;
    s.kind = mk::Setting::Kind::gradient;
    s.gradient = std::move(g);
    return s;
}

}  // namespace

TEST(Mergekit, GradientsInterpolateAndFiltersFallThrough) {
    const mk::Setting g = gradient({0, 0.5, 0.3, 0.7, 1});
    EXPECT_DOUBLE_EQ(*mk::evaluate(g, "x", 0.0), 0.0);
    EXPECT_DOUBLE_EQ(*mk::evaluate(g, "x", 1.0), 1.0);
    EXPECT_NEAR(*mk::evaluate(g, "x", 0.375), 0.4, 1e-12);  // 1.5 points: halfway 0.5 -> 0.3
    mk::Setting f;
    f.kind = mk::Setting::Kind::filters;
    f.filters = {"self_attn", "mlp"};
    f.values = {gradient({0, 1}), number(0.25)};
    EXPECT_DOUBLE_EQ(*mk::evaluate(f, "model.layers.3.self_attn.q_proj.weight", 0.5), 0.5);
    EXPECT_DOUBLE_EQ(*mk::evaluate(f, "model.layers.3.mlp.up_proj.weight", 0.5), 0.25);
    EXPECT_FALSE(mk::evaluate(f, "model.norm.weight", 0.5));  // falls through to the next level
    f.filters.push_back("");
    f.values.push_back(number(9));
    EXPECT_DOUBLE_EQ(*mk::evaluate(f, "model.norm.weight", 0.5), 9.0);
}

TEST(Mergekit, LayersOfTheUsualLayouts) {
    EXPECT_EQ(mk::layer_of("model.layers.12.mlp.up_proj.weight"), 12);
    EXPECT_EQ(mk::layer_of("transformer.h.3.attn.c_attn.weight"), 3);
    EXPECT_FALSE(mk::layer_of("model.embed_tokens.weight"));
    EXPECT_FALSE(mk::layer_of("lm_head.weight"));
}

TEST(Mergekit, SlicesRenumberLayersAndTakeEmbeddingsFirstHeadsLast) {
    mk::ModelInfo a, b;
    for (int l = 0; l < 4; ++l) {
        a.names.push_back("model.layers." + std::to_string(l) + ".w");
        b.names.push_back("model.layers." + std::to_string(l) + ".w");
    }
    for (auto* m : {&a, &b}) {
        m->names.insert(m->names.end(), {"model.embed_tokens.weight", "lm_head.weight"});
        m->layers = 4;
    }
    mk::Config c;
    c.method = "passthrough";
    c.models = {"a", "b"};
    c.slices = {{{{0, std::pair{0, 3}, {}}}, {}, {}}, {{{1, std::pair{2, 4}, {}}}, {}, {}}};
    const mk::Plan p = mk::plan(c, {a, b});
    EXPECT_EQ(p.layers, 5);
    EXPECT_TRUE(p.layers_changed);
    ASSERT_EQ(p.tensors.size(), 7u);  // 5 layers, the embeddings, the head (sorted by name)
    for (const auto& t : p.tensors) {
        if (t.name == "model.embed_tokens.weight") {
            EXPECT_EQ(t.base.checkpoint, 0u);
        }
        if (t.name == "lm_head.weight") {
            EXPECT_EQ(t.base.checkpoint, 1u);
        }
        if (t.name == "model.layers.4.w") {
            EXPECT_EQ(t.base.checkpoint, 1u);
            EXPECT_EQ(t.base.tensor, "model.layers.3.w");  // layer 2 + 1 of the second slice
        }
    }
}

TEST(Mergekit, BaseListedAmongModelsIsNoTaskVectorAndPrecedenceHolds) {
    mk::ModelInfo m{{"model.layers.0.w", "model.layers.1.w", "model.norm.weight"}, 2};
    mk::Config c;
    c.method = "ties";
    c.models = {"base", "a", "b"};
    c.base = 0;
    c.parameters["density"] = gradient({1, 0.5});  // a per-model parameter, for all models
    mk::Source a{1, std::nullopt, {}}, b{2, std::nullopt, {}};
    a.parameters["weight"] = number(0.3);
    a.parameters["density"] = number(0.2);  // its own beats the merge's
    c.listed = {{0, std::nullopt, {}}, a, b};
    const mk::Plan p = mk::plan(c, {m, m, m});
    ASSERT_EQ(p.tensors.size(), 3u);
    const PlannedTensor& l1 = p.tensors[1];  // model.layers.1.w, at t = 1
    ASSERT_EQ(l1.name, "model.layers.1.w");
    EXPECT_EQ(l1.base.checkpoint, 0u);
    ASSERT_EQ(l1.models.size(), 2u);  // the base listed in models is left out
    EXPECT_EQ(l1.params.weights, (std::vector<double>{0.3, 1.0}));
    EXPECT_EQ(l1.params.densities, (std::vector<double>{0.2, 0.5}));
    EXPECT_EQ(l1.params.normalize, Normalize::mean);                            // ties' default
    EXPECT_EQ(p.tensors[2].params.densities, (std::vector<double>{0.2, 1.0}));  // norm: t = 0
}

TEST(Mergekit, RefusesWhatMergekitCannotMerge) {
    mk::ModelInfo m{{"w"}, 0};
    mk::Config c;
    c.models = {"base", "a", "b"};
    c.base = 0;
    c.listed = {{1, std::nullopt, {}}, {2, std::nullopt, {}}};
    c.method = "slerp";
    c.parameters["t"] = number(0.5);
    EXPECT_THROW(mk::plan(c, {m, m, m}), std::invalid_argument);  // two models besides the base
    c.method = "della";
    c.parameters.clear();
    c.parameters["density"] = number(0.1);
    c.parameters["epsilon"] = number(0.15);
    EXPECT_THROW(mk::plan(c, {m, m, m}), std::invalid_argument);  // density − ε <= 0
    c.method = "linear";
    c.parameters.clear();
    EXPECT_THROW(mk::plan(c, {m, m, m}), std::invalid_argument);  // linear needs weights
    EXPECT_EQ(mk::find_method("no_such_method"), nullptr);
    c.method = "arcee_fusion";  // exactly one model besides the base
    EXPECT_THROW(mk::plan(c, {m, m, m}), std::invalid_argument);
    c.method = "nuslerp";  // two models besides the base, not one
    c.listed.pop_back();
    c.parameters["weight"] = number(1.0);
    EXPECT_THROW(mk::plan(c, {m, m, m}), std::invalid_argument);
    c.method = "karcher";  // max_iter a whole number
    c.parameters["max_iter"] = number(2.5);
    EXPECT_THROW(mk::plan(c, {m, m, m}), std::invalid_argument);
    c.listed.push_back({2, std::nullopt, {}});
    c.parameters.clear();
    c.method = "ties";
    c.parameters["density"] = number(-0.5);
    EXPECT_THROW(mk::plan(c, {m, m, m}), std::invalid_argument);  // below 0
}

TEST(Mergekit, RefusesWhatWouldBeDroppedSilently) {
    mk::ModelInfo m{{"model.layers.0.w", "model.layers.1.w", "model.layers.2.w"}, 2};
    mk::Config c;
    c.method = "passthrough";
    c.models = {"a"};
    c.listed = {{0, std::nullopt, {}}};
    EXPECT_THROW(mk::plan(c, {m}), std::invalid_argument);  // layer 2 beyond the 2 layers
    m.layers = 3;
    EXPECT_NO_THROW(mk::plan(c, {m}));
    c.listed.clear();
    c.slices = {{{{0, std::pair{0, 4}, {}}}, {}, {}}};
    EXPECT_THROW(mk::plan(c, {m}), std::invalid_argument);  // layer_range past the end
    c.slices = {{{{0, std::pair{0, 3}, {}}}, {}, {}}};
    m.names.push_back("visual.blocks.0.w");  // a second stack of layers: a vision tower
    EXPECT_THROW(mk::plan(c, {m}), std::invalid_argument);
}

TEST(Generalized, MagnitudeOutliersAndConsensusByHand) {
    // One tensor of 6 coordinates, two task vectors.
    const std::vector<float> base(6, 0.0f), a = {6, -5, 4, -3, 2, 1}, b = {-1, 1, -1, 1, -1, 1};
    SpanBlocks in(base, {a, b});
    MergeParams p;
    p.method = Method::generalized;
    p.sparsify = Sparsify::magnitude;
    p.densities = {0.5, 1.0};  // a keeps its 3 largest |τ|: 6, -5, 4
    TensorScope s;
    s.name = "w";
    auto sel = select(p, s, in);
    for (std::size_t j = 0; j < 6; ++j) EXPECT_EQ(sel[0].kept(j), j < 3) << j;
    EXPECT_TRUE(sel[1].all);
    // Breadcrumbs: γ = 0.2 drops int(0.2·6) = 1 largest, density 0.5 keeps 3: 5, 4, 3.
    p.sparsify = Sparsify::magnitude_outliers;
    p.gammas = {0.2, 0.2};
    sel = select(p, s, in);
    for (std::size_t j = 0; j < 6; ++j) EXPECT_EQ(sel[0].kept(j), j >= 1 && j <= 3) << j;
    p.gammas = {0.1, 0.1};  // int(0.6) = 0 outliers: mergekit's slice keeps nothing
    sel = select(p, s, in);
    for (std::size_t j = 0; j < 6; ++j) EXPECT_FALSE(sel[0].kept(j)) << j;
    // Consensus of w·τ with weights 1 and 2, everything kept: coordinate 0 sums 6 − 2 > 0,
    // so only a agrees: 6 / 1; coordinate 1: −5 + 2 < 0, a agrees: −5 / 1.
    p.sparsify = Sparsify::none;
    p.consensus = true;
    p.weights = {1, 2};
    std::vector<std::vector<double>> t = {{6, -5, 4, -3, 2, 1}, {-1, 1, -1, 1, -1, 1}};
    std::vector<double> delta(6);
    combine(p, {}, 0, 6, t, delta);
    EXPECT_DOUBLE_EQ(delta[0], 6.0);
    EXPECT_DOUBLE_EQ(delta[1], -5.0);
    EXPECT_DOUBLE_EQ(delta[5], (1.0 + 2.0) / 3.0);  // both agree: (1·1 + 2·1) / (1 + 2)
    p.normalize = Normalize::sum;                   // dare_ties' default: no division
    t = {{6, -5, 4, -3, 2, 1}, {-1, 1, -1, 1, -1, 1}};
    combine(p, {}, 0, 6, t, delta);
    EXPECT_DOUBLE_EQ(delta[5], 3.0);
}

TEST(Generalized, DellaKeepsLargerMagnitudesMoreOftenAndRescalesToTheL1Norm) {
    const std::size_t rows = 200, cols = 50;
    std::vector<float> base(rows * cols, 0.0f), a(rows * cols);
    for (std::size_t j = 0; j < a.size(); ++j) a[j] = static_cast<float>(j % cols + 1);
    SpanBlocks in(base, {a});
    MergeParams p;
    p.method = Method::generalized;
    p.sparsify = Sparsify::della;
    p.densities = {0.5};
    p.epsilons = {0.4};  // p from 0.1 (smallest of a row) to 0.9 (largest)
    p.rescale = true;
    TensorScope s;
    s.name = "w";
    s.row_length = cols;
    const auto sel = select(p, s, in);
    std::size_t low = 0, high = 0;
    double l1 = 0, kept = 0;
    for (std::size_t j = 0; j < a.size(); ++j) {
        low += sel[0].kept(j) && j % cols == 0;
        high += sel[0].kept(j) && j % cols == cols - 1;
        l1 += a[j];
        kept += sel[0].kept(j) ? a[j] : 0;
    }
    EXPECT_NEAR(static_cast<double>(low) / rows, 0.1, 0.07);
    EXPECT_NEAR(static_cast<double>(high) / rows, 0.9, 0.07);
    EXPECT_DOUBLE_EQ(sel[0].scale, l1 / kept);
    s.row_length = 0;  // more than two dimensions: mergekit ranks along dimension 1
    EXPECT_THROW(select(p, s, in), std::invalid_argument);
    s.row_length = cols;
    p.epsilons = {0.5};  // density − ε = 0: refused as mergekit refuses it
    EXPECT_THROW(select(p, s, in), std::invalid_argument);
}
