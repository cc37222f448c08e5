// A model's parameters in file order: what merges of stored models read and write must be the
// row-major order of the safetensors file, not Eigen's column-major memory.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/safetensors.h"
#include "tasks/zoo_artifacts.h"

using namespace compatbench;

TEST(ZooArtifacts, ParamValuesFollowTheFileOrder) {
    zoo::EncoderSpec spec;
    spec.name = "layout";
    spec.width = 12;
    spec.depth = 2;
    spec.out_dim = 5;  // non-square matrices: a transposed copy would not even fit
    zoo::Encoder enc(spec, 7);
    const fs::path dir = fs::temp_directory_path() / "compatbench_artifacts_test";
    fs::remove_all(dir);
    const ZooPaths paths{dir};
    write_model(paths, enc,
                {{"name", "layout"}, {"spec", encoder_spec_to_json(spec)}, {"input_dim", 7}});
    const auto file = formats::SafetensorsFile::open(paths.model("layout").string());
    int matrices = 0;
    for (auto& p : enc.params()) {
        const auto stored = file.read_f32(file.at(p.name));
        const auto values = param_values(p);
        ASSERT_EQ(stored.size(), values.size()) << p.name;
        for (std::size_t j = 0; j < values.size(); ++j) ASSERT_EQ(stored[j], values[j]) << p.name;
        matrices += p.shape.size() == 2;
    }
    EXPECT_EQ(matrices, 3);

    // Setting file-order values and reading them back is the identity; a model loaded from
    // the file and one given the file's values encode alike.
    zoo::Encoder loaded = read_model(paths, "layout");
    zoo::Encoder set(spec, 7);
    auto ps = set.params();
    for (auto& p : ps) {
        const auto stored = file.read_f32(file.at(p.name));
        set_param_values(p, stored);
        EXPECT_EQ(param_values(p), stored) << p.name;
    }
    const zoo::Mat x = zoo::Mat::Random(9, 7);
    EXPECT_TRUE(loaded.encode(x).isApprox(set.encode(x), 0.0f));
    EXPECT_THROW(set_param_values(ps.front(), std::vector<float>(3)), std::invalid_argument);
    fs::remove_all(dir);
}
