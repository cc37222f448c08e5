// methods.md §3.1, §3.2: the interference decomposition on hand-computed cases, and the
// two-pass model merge.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "formats/half.h"
#include "merging/checkpoint_merge.h"
#include "merging/evaluation.h"
#include "merging/interference.h"
#include "merging/model_merge.h"
#include "merging/stream.h"
#include "test_support.h"

using namespace compatbench::merging;

TEST(Interference, HandComputedDecomposition) {
    // Coordinate 0: τ = (1, 3): mean 2, mean|τ| 2, mean τ² 5 -> I = 1, D = 1, C = 0.
    // Coordinate 1: τ = (1, -1): mean 0, mean|τ| 1, mean τ² 1 -> I = 1, D = 0, C = 1.
    // Coordinate 2: τ = (0, 0): all zero.
    const std::vector<float> base = {1, -2, 0.5f}, a = {2, -1, 0.5f}, b = {4, -3, 0.5f};
    const std::span<const float> models[] = {a, b};
    const auto s = interference(base, models);
    EXPECT_EQ(s.sign_conflicts, 1u);  // coordinate 1
    EXPECT_EQ(s.count, 3u);
    EXPECT_DOUBLE_EQ(s.interference, 2.0);
    EXPECT_DOUBLE_EQ(s.dispersion, 1.0);
    EXPECT_DOUBLE_EQ(s.cancellation, 1.0);
    EXPECT_DOUBLE_EQ(s.mean_interference(), 2.0 / 3);
    EXPECT_DOUBLE_EQ(s.rho(), 0.5);
    EXPECT_DOUBLE_EQ(screening_score(s.mean_interference(), 2, 0.5), 0.5 * std::sqrt(1.0 / 3));
    InterferenceSums total = s;
    total.add(s);
    EXPECT_EQ(total.count, 6u);
    EXPECT_DOUBLE_EQ(total.rho(), 0.5);
    EXPECT_TRUE(std::isnan(InterferenceSums{}.rho()));
}

TEST(Interference, EqualsTheAmbiguityIdentity) {
    // I_j = mean τ² - τ̄² for K = 5 random task vectors (population variance).
    // K = 5 (models known at compile time) and K = 11 (counted at run time): one kernel.
    for (int k : {5, 11}) {
        const auto m = compatbench::test::random_matrix(5000, k, 3);
        const std::vector<float> base(5000, 0.25f);
        std::vector<std::vector<float>> cols(static_cast<std::size_t>(k));
        std::vector<std::span<const float>> models;
        for (int i = 0; i < k; ++i) {
            auto& c = cols[static_cast<std::size_t>(i)];
            for (int j = 0; j < 5000; ++j) c.push_back(0.25f + m(j, i));
            models.emplace_back(c);
        }
        double want = 0.0;
        for (int j = 0; j < 5000; ++j) {
            const double mean = m.row(j).cast<double>().mean();
            want += m.row(j).cast<double>().array().square().mean() - mean * mean;
        }
        const auto s = interference(base, models);
        EXPECT_EQ(s.count, 5000u);
        EXPECT_NEAR(s.interference, want, 1e-5 * want);  // float32 per coordinate
        EXPECT_NEAR(s.dispersion + s.cancellation, s.interference, 1e-9 * want);
        EXPECT_GT(s.rho(), 0.3);  // random signs cancel a lot
    }
    const std::vector<float> base = {1, 2}, short_model = {1};
    const std::span<const float> bad[] = {short_model};
    EXPECT_THROW(interference(base, bad), std::invalid_argument);
}

namespace {
// Two tensors of K = 2 models: "w" (2-D) in scope, "b" out of scope.
MemorySource two_tensors() {
    std::vector<MemorySource::Tensor> t(2);
    t[0] = {"layer.w", true, {1, 2, 3, 4}, {{2, 2, 3, 4}, {1, 4, 3, 2}}};
    t[1] = {"layer.b", false, {0, 0}, {{1, 1}, {-1, 3}}};
    return MemorySource(std::move(t));
}
}  // namespace

TEST(ModelMerge, TwoPassesOverTheScope) {
    const MemorySource source = two_tensors();
    MergeParams p;  // task arithmetic, mean, c = 1
    ModelMerge merge(p, {"*.w"});
    EXPECT_FALSE(merge.needs_rho());
    for (std::size_t i = 0; i < source.size(); ++i) merge.measure(source, i);
    // Only "layer.w": τ = (1, 0, 0, 0) and (0, 2, 0, -2) -> per coordinate I = 1/4, 1, 0, 1.
    EXPECT_EQ(merge.sums().count, 4u);
    EXPECT_DOUBLE_EQ(merge.sums().interference, 2.25);
    EXPECT_EQ(merge.merge(source, 0, 1.0), (std::vector<float>{1.5f, 3, 3, 3}));
    EXPECT_EQ(merge.merge(source, 1, 1.0), (std::vector<float>{0, 0}));  // keeps θ0
    // Totals over the in-scope tensor: ‖θ - θ0‖² = ‖τ̄‖² = 0.25 + 1 + 1.
    EXPECT_DOUBLE_EQ(merge.totals().update_pct(), 100.0);
    EXPECT_DOUBLE_EQ(merge.totals().keep_fraction(), 0.75);
    EXPECT_EQ(merge.totals().lambda_n, 1.0);
    MergeTotals twice = merge.totals();
    twice.add(merge.totals());
    EXPECT_DOUBLE_EQ(twice.numel, 8.0);
    EXPECT_EQ(MergeTotals::from_values(twice.values()).values(), twice.values());
}

TEST(ModelMerge, RhoForThePrismFamily) {
    MergeParams p;
    p.method = Method::prism;
    EXPECT_TRUE(ModelMerge(p, {}).needs_rho());
    EXPECT_DOUBLE_EQ(ModelMerge::rho_of(InterferenceSums{}), 0.0);  // nothing to gate
    InterferenceSums s;
    s.interference = 2.0;
    s.cancellation = 0.5;
    EXPECT_DOUBLE_EQ(ModelMerge::rho_of(s), 0.25);
}

TEST(Interference, StreamedFromFilesEqualsInMemory) {
    // BF16 read in place (K = 2), F16 converted a block at a time (K = 9, counted at run
    // time): the same kernel as interference() on the float32 values, to the bit. 200,003
    // values: the files are read in several chunks (formats::TensorReader).
    const int n = 200003;
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(::testing::TempDir()) / "stream_interference";
    fs::create_directories(dir);
    const auto m = compatbench::test::random_matrix(n, 10, 7);
    for (const auto& [dtype, k] : {std::pair{compatbench::formats::DType::BF16, 2},
                                   std::pair{compatbench::formats::DType::F16, 9}}) {
        std::vector<compatbench::formats::SafetensorsFile> files;
        std::vector<std::vector<float>> values;
        for (int i = 0; i <= k; ++i) {
            std::vector<float> v(m.col(i).data(), m.col(i).data() + n);
            compatbench::formats::SafetensorsWriter w;
            w.add_f32("w", {std::uint64_t{n}}, v, dtype);
            std::string name = "m";  // (GCC 12 warns falsely on "m" + std::to_string(i))
            name += std::to_string(i);
            name += ".safetensors";
            const std::string path = (dir / name).string();
            w.write(path);
            files.push_back(compatbench::formats::SafetensorsFile::open(path));
            values.push_back(files.back().read_f32(files.back().at("w")));
        }
        std::vector<TensorRef> refs;
        std::vector<std::span<const float>> models;
        for (int i = 1; i <= k; ++i) {
            refs.push_back(
                {&files[static_cast<std::size_t>(i)], &files[static_cast<std::size_t>(i)].at("w")});
            models.emplace_back(values[static_cast<std::size_t>(i)]);
        }
        const auto streamed = stream_interference({&files[0], &files[0].at("w")}, refs);
        const auto memory = interference(values[0], models);
        EXPECT_EQ(streamed.count, std::uint64_t{n});
        EXPECT_EQ(streamed.interference, memory.interference);
        EXPECT_EQ(streamed.cancellation, memory.cancellation);
        EXPECT_EQ(streamed.sign_conflicts, memory.sign_conflicts);
        EXPECT_GT(streamed.sign_conflicts, 0u);
    }
}

TEST(MergeScores, MeansRetentionAndDestructive) {
    // methods.md §3.3: retention is the mean of merged / fine-tuned, not a ratio of means.
    const double merged[] = {0.4, 0.9}, finetuned[] = {0.8, 0.9}, base[] = {0.5, 0.9};
    const MergeScores s = merge_scores(merged, finetuned, base);
    EXPECT_DOUBLE_EQ(s.merged, 0.65);
    EXPECT_DOUBLE_EQ(s.finetuned, 0.85);
    EXPECT_DOUBLE_EQ(s.base, 0.7);
    EXPECT_DOUBLE_EQ(s.retention, 0.75);
    EXPECT_TRUE(s.destructive);  // 0.65 < 0.7
    const double better[] = {0.6, 0.9};
    EXPECT_FALSE(merge_scores(better, finetuned, base).destructive);
    EXPECT_THROW(merge_scores(std::span(merged, 1), finetuned, base), std::invalid_argument);
    // By a margin: 0.05 below the base is destructive past two standard errors of 0.02, not of
    // 0.03; equal to the base never is.
    EXPECT_TRUE(with_margin(s, 0.02, 2.0).destructive);
    EXPECT_FALSE(with_margin(s, 0.03, 2.0).destructive);
    EXPECT_FALSE(with_margin(merge_scores(base, finetuned, base), 0.0, 2.0).destructive);
    EXPECT_THROW(with_margin(s, NAN, 2.0), std::invalid_argument);
}

TEST(CheckpointMerge, StreamedFileEqualsTheMergeInMemory) {
    // A PRISM merge of K = 3 checkpoints written block by block into a sharded safetensors
    // layout: every merged tensor equals ModelMerge's values in memory, and a tensor that is
    // not floating point keeps the base's bytes.
    namespace fs = std::filesystem;
    namespace fmt = compatbench::formats;
    const fs::path dir = fs::path(::testing::TempDir()) / "checkpoint_merge";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto m = compatbench::test::random_matrix(600, 4, 11);
    const std::vector<std::uint8_t> step = {7, 0, 0, 0, 0, 0, 0, 0};
    std::vector<fmt::Checkpoint> models;
    for (int i = 0; i <= 3; ++i) {
        std::vector<float> v(m.col(i).data(), m.col(i).data() + 600);
        fmt::SafetensorsWriter w;
        w.add_f32("a.weight", {20, 20}, std::span(v).first(400));
        w.add_f32("b.bias", {200}, std::span(v).subspan(400), fmt::DType::BF16);
        w.add("step", fmt::DType::I64, {1}, step);
        const std::string path = (dir / ("m" + std::to_string(i) + ".safetensors")).string();
        w.write(path);
        if (i > 0) models.push_back(fmt::Checkpoint::open(path));
    }
    const auto base = fmt::Checkpoint::open((dir / "m0.safetensors").string());
    const CheckpointSource source(base, models);
    MergeParams p;
    p.method = Method::prism;
    ModelMerge streamed(p, {}), in_memory(p, {});
    for (std::size_t i = 0; i < source.size(); ++i) {
        streamed.measure(source, i);
        in_memory.measure(source, i);
    }
    const double rho = ModelMerge::rho_of(streamed.sums());
    fmt::CheckpointLayout layout = merged_layout(source);
    layout.plan((dir / "out").string(), 1000);  // two shards
    fs::create_directories(dir / "out");
    layout.create();
    int merged_tensors = 0;
    write_merged(streamed, source, rho, layout, all_tensors(source), [&] { ++merged_tensors; });
    EXPECT_EQ(merged_tensors, 2);
    EXPECT_EQ(layout.files().size(), 2u);
    const auto out = fmt::Checkpoint::open((dir / "out").string());
    for (std::size_t i = 0; i < source.size(); ++i) {
        const auto& name = source.name(i);
        const auto& info = out.info(name);
        EXPECT_EQ(info.dtype, source.info(i).dtype) << name;
        if (!source.mergeable(i)) {
            const auto raw = out.file_of(name).raw(info);
            EXPECT_EQ(std::vector<std::uint8_t>(raw.begin(), raw.end()), step);
            continue;
        }
        std::vector<float> want = in_memory.merge(source, i, rho);
        if (info.dtype == fmt::DType::BF16)
            for (auto& v : want) v = fmt::bf16_to_f32(fmt::f32_to_bf16(v));
        EXPECT_EQ(out.file_of(name).read_f32(info), want) << name;
    }
    EXPECT_EQ(streamed.totals().values(), in_memory.totals().values());
}
