// formats::TensorReader and SafetensorsFile::read_bytes: a tensor read a chunk at a time
// equals its mapped bytes, whatever the block sizes; a range outside the tensor, and a file
// shortened after it was opened, are errors that name the file, the tensor and the offset.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "formats/safetensors.h"
#include "formats/tensor_reader.h"

using namespace compatbench::formats;
namespace fs = std::filesystem;

namespace {
std::string write_file(const std::string& name, std::size_t n) {
    const fs::path dir = fs::path(::testing::TempDir()) / "tensor_reader_test";
    fs::create_directories(dir);
    std::vector<float> a(n), b(1000);
    for (std::size_t j = 0; j < n; ++j) a[j] = static_cast<float>(j % 4099) - 2000.5f;
    for (std::size_t j = 0; j < b.size(); ++j) b[j] = static_cast<float>(j);
    SafetensorsWriter w;
    w.add_f32("a", {n}, a, DType::BF16);
    w.add_f32("b", {b.size()}, b);
    const std::string path = (dir / name).string();
    w.write(path);
    return path;
}
}  // namespace

TEST(TensorReader, ChunksEqualTheMappedBytesForAnyBlockSize) {
    // 300,007 BF16 values: 600 KB, over three 256 KiB chunks.
    const std::size_t n = 300007;
    const auto file = SafetensorsFile::open(write_file("chunks.safetensors", n));
    const TensorInfo& t = file.at("a");
    const auto raw = file.raw(t);
    std::vector<std::uint8_t> buffer;
    for (std::size_t block :
         {std::size_t{2048}, std::size_t{16384}, std::size_t{1000}, std::size_t{200000}}) {
        TensorReader reader(file, t, buffer);
        EXPECT_EQ(reader.numel(), n);
        for (std::size_t begin = 0; begin < n; begin += block) {
            const std::size_t count = std::min(block, n - begin);
            ASSERT_EQ(std::memcmp(reader.elements(begin, count), raw.data() + 2 * begin, 2 * count),
                      0)
                << "block " << block << " at " << begin;
        }
    }
    // Backwards and repeated ranges are read again.
    TensorReader reader(file, t, buffer);
    for (std::size_t begin : {std::size_t{290000}, std::size_t{5}, std::size_t{5}})
        EXPECT_EQ(std::memcmp(reader.elements(begin, 10), raw.data() + 2 * begin, 20), 0);
    // The second tensor, F32, through the same buffer.
    TensorReader second(file, file.at("b"), buffer);
    float v[3];
    std::memcpy(v, second.elements(997, 3), sizeof v);
    EXPECT_EQ(v[0], 997.0f);
    EXPECT_EQ(v[2], 999.0f);
}

TEST(TensorReader, RangesOutsideAndShortenedFilesAreNamedErrors) {
    const std::string path = write_file("short.safetensors", 100000);
    const auto file = SafetensorsFile::open(path);
    const TensorInfo& t = file.at("a");
    std::vector<std::uint8_t> buffer;
    TensorReader reader(file, t, buffer);
    try {
        reader.elements(99999, 2);
        ADD_FAILURE() << "a range past the end was read";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find(path + ": tensor 'a': elements [99999, 100001)"),
                  std::string::npos)
            << e.what();
    }
    std::vector<std::uint8_t> out(8);
    EXPECT_THROW(file.read_bytes(t, t.bytes() - 4, out), FormatError);
    // Shortened to half its data after it was opened: the read names where the file ended.
    fs::resize_file(path, file.tensors().front().begin + 100000);
    TensorReader late(file, t, buffer);
    try {
        late.elements(0, 100000);
        ADD_FAILURE() << "a shortened file was read";
    } catch (const FormatError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(path + ": tensor 'a': cannot read at file offset ", 0), 0u) << what;
        EXPECT_NE(what.find("the file ended"), std::string::npos) << what;
    }
}
