// compatbench and a numpy-only implementation read each other's files.
#include <gtest/gtest.h>

#include "test_support.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "formats/half.h"
#include "formats/safetensors.h"

using namespace compatbench::formats;
namespace fs = std::filesystem;

namespace {
bool have_numpy() {
    return std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0;
}
const std::string kScript =
    std::string(COMPATBENCH_SOURCE_DIR) + "/tests/checks/safetensors_fixture.py";

}  // namespace

TEST(SafetensorsPython, NumpyReadsWhatWeWrite) {
    if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy";
    const fs::path p = fs::path(::testing::TempDir()) / "for_numpy.safetensors";
    SafetensorsWriter w;
    const std::vector<float> v = {1.0f, -0.5f, 3.25f, 1e-3f, 7.0f, -8.5f};
    w.add_f32("x.f32", {2, 3}, v, DType::F32);
    w.add_f32("x.bf16", {6}, v, DType::BF16);
    w.add_f32("x.f16", {3, 2}, v, DType::F16);
    w.set_metadata("format", "pt");
    w.write(p.string());
    const auto j = nlohmann::json::parse(
        compatbench::test::run_command("/usr/bin/python3 " + kScript + " dump " + p.string()));
    EXPECT_EQ(j["metadata"]["format"], "pt");
    EXPECT_EQ(j["data_start"].get<int>() % 8, 0);
    const auto f = SafetensorsFile::open(p.string());
    for (const char* name : {"x.f32", "x.bf16", "x.f16"}) {
        const auto ours = f.read_f32(f.at(name));
        const auto theirs = j["tensors"][name]["values"].get<std::vector<double>>();
        ASSERT_EQ(ours.size(), theirs.size()) << name;
        for (std::size_t i = 0; i < ours.size(); ++i)
            EXPECT_EQ(static_cast<double>(ours[i]), theirs[i]) << name << "[" << i << "]";
        EXPECT_EQ(j["tensors"][name]["shape"].get<std::vector<std::uint64_t>>(), f.at(name).shape);
    }
}

TEST(SafetensorsPython, WeReadWhatNumpyWrites) {
    if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy";
    const fs::path p = fs::path(::testing::TempDir()) / "from_numpy.safetensors";
    ASSERT_EQ(std::system(("/usr/bin/python3 " + kScript + " write " + p.string()).c_str()), 0);
    const auto f = SafetensorsFile::open(p.string());
    EXPECT_EQ(f.metadata().at("who"), "numpy");
    EXPECT_EQ(f.read_f32(f.at("w")), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
    EXPECT_EQ(f.read_f32(f.at("h")), (std::vector<float>{1, -2, 0.5f, 65504}));
    EXPECT_EQ(f.read_f32(f.at("b")), (std::vector<float>{1.0f, -2.0f, 3.140625f}));
    const auto raw = f.raw(f.at("i"));
    std::int32_t ints[2];
    std::memcpy(ints, raw.data(), 8);
    EXPECT_EQ(ints[0], 7);
    EXPECT_EQ(ints[1], -7);
    EXPECT_EQ(f.at("w").shape, (std::vector<std::uint64_t>{2, 3}));
}

TEST(SafetensorsPython, NumpyRoundsToBf16AsWeDo) {
    if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy";
    const fs::path p = fs::path(::testing::TempDir()) / "bf16_from_numpy.safetensors";
    ASSERT_EQ(std::system(("/usr/bin/python3 " + kScript + " bf16 " + p.string()).c_str()), 0);
    const auto f = SafetensorsFile::open(p.string());
    const auto x = f.read_f32(f.at("x"));
    const auto raw = f.raw(f.at("x_bf16"));
    ASSERT_EQ(raw.size(), 2 * x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        std::uint16_t theirs;
        std::memcpy(&theirs, raw.data() + 2 * i, 2);
        ASSERT_EQ(theirs, f32_to_bf16(x[i])) << "value " << i << " = " << x[i];
    }
}

// The same broken files are refused by both readers, each naming the file.
TEST(SafetensorsPython, BothRefuseTheSameBrokenFiles) {
    if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy";
    const auto with_header = [](const std::string& json, std::size_t data_bytes) {
        std::string s(8, '\0');
        const std::uint64_t n = json.size();
        std::memcpy(s.data(), &n, 8);  // little-endian host
        return s + json + std::string(data_bytes, '\0');
    };
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"short", std::string("\x01\x02", 2)},
        {"past_end", std::string("\xe8\x03\0\0\0\0\0\0{}", 10)},
        {"not_json", with_header("{x}", 0)},
        {"dtype", with_header(R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}})", 4)},
        {"offsets", with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8)},
        {"size", with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)},
        {"keys", with_header(R"({"w":{"dtype":"F32","shape":[1]}})", 0)},
    };
    for (const auto& [name, bytes] : cases) {
        const fs::path p = fs::path(::testing::TempDir()) / ("broken_" + name + ".safetensors");
        {
            std::ofstream out(p, std::ios::binary);
            out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        }
        EXPECT_THROW(SafetensorsFile::open(p.string()), FormatError) << name;
        const std::string theirs = compatbench::test::run_command(
            "/usr/bin/python3 " + kScript + " dump " + p.string() + " 2>&1; echo rc=$?");
        EXPECT_NE(theirs.find("SafetensorsError: " + p.string()), std::string::npos)
            << name << ": " << theirs;
        EXPECT_NE(theirs.find("rc=1"), std::string::npos) << name;
    }
}
