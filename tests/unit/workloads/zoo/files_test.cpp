// A model's parameters in file order: what merges of stored models read and write must be the
// row-major order of the safetensors file, not Eigen's column-major memory.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/safetensors.h"
#include "zoo/files.h"

using namespace compatbench;
using namespace compatbench::zoo;

TEST(ZooFiles, ParamValuesFollowTheFileOrder) {
    zoo::EncoderSpec spec;
    spec.name = "layout";
    spec.width = 12;
    spec.depth = 2;
    spec.out_dim = 5;  // non-square matrices: a transposed copy would not even fit
    zoo::Encoder enc(spec, 7);
    const fs::path dir = fs::temp_directory_path() / "compatbench_artifacts_test";
    fs::remove_all(dir);
    const fs::path weights = dir / "layout.safetensors", sidecar = dir / "layout.json";
    write_model(weights, sidecar, enc,
                {{"name", "layout"}, {"spec", encoder_spec_to_json(spec)}, {"input_dim", 7}});
    const auto file = formats::SafetensorsFile::open(weights.string());
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
    zoo::Encoder loaded = read_model(weights, sidecar);
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

TEST(ZooFiles, SplitsAndSpecsRoundTrip) {
    WorldSpec spec;
    spec.seed = 11;
    spec.concepts = 6;
    const World world(spec);
    const Split split = world.make_split("probe", 9);
    const fs::path dir = fs::temp_directory_path() / "compatbench_files_test";
    fs::remove_all(dir);
    write_split(dir / "probe.safetensors", split);
    const Split back = read_split(dir / "probe.safetensors", "probe");
    EXPECT_EQ(back.images, split.images);
    EXPECT_EQ(back.captions, split.captions);
    EXPECT_EQ(back.caption_image, split.caption_image);
    EXPECT_EQ(back.scenes.concept_id, split.scenes.concept_id);
    EXPECT_EQ(back.scenes.geometry, split.scenes.geometry);
    EXPECT_EQ(world_spec_to_json(world_spec_from_json(world_spec_to_json(spec))),
              world_spec_to_json(spec));
    EncoderSpec e;
    e.name = "enc";
    e.modality = Modality::text;
    e.paradigm = Paradigm::clip;
    EXPECT_EQ(encoder_spec_to_json(encoder_spec_from_json(encoder_spec_to_json(e))),
              encoder_spec_to_json(e));
    // A missing tensor is an error that names the file and the tensor.
    formats::SafetensorsWriter w;
    w.add_f32("images", {1, 1}, std::vector<float>{1.0f});
    w.write((dir / "bad.safetensors").string());
    try {
        read_split(dir / "bad.safetensors", "bad");
        FAIL() << "a split without captions was read";
    } catch (const std::exception& ex) {
        EXPECT_NE(std::string(ex.what()).find("bad.safetensors"), std::string::npos) << ex.what();
        EXPECT_NE(std::string(ex.what()).find("captions"), std::string::npos) << ex.what();
    }
}
