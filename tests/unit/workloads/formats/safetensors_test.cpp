#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "formats/half.h"
#include "formats/safetensors.h"

using namespace compatbench::formats;
namespace fs = std::filesystem;

namespace {
fs::path temp(const std::string& name) {
    const fs::path dir = fs::path(::testing::TempDir()) / "safetensors_test";
    fs::create_directories(dir);
    return dir / name;
}

std::vector<std::uint8_t> read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void write_all(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
}

// A file with a hand-written header (padded, no alignment) and `data` bytes.
std::vector<std::uint8_t> raw_file(const std::string& header, std::size_t data,
                                   std::uint64_t size_field = ~0ull) {
    std::vector<std::uint8_t> bytes(8 + header.size() + data, 0x5a);
    const std::uint64_t n = size_field == ~0ull ? header.size() : size_field;
    for (std::size_t i = 0; i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(n >> (8 * i));
    std::memcpy(bytes.data() + 8, header.data(), header.size());
    return bytes;
}

std::string expect_error(const std::vector<std::uint8_t>& bytes, const std::string& name) {
    const fs::path p = temp(name);
    write_all(p, bytes);
    try {
        SafetensorsFile::open(p.string());
    } catch (const FormatError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(p.string() + ": ", 0), 0u) << "error does not name the file: " << what;
        return what;
    }
    ADD_FAILURE() << name << " was accepted";
    return {};
}
}  // namespace

TEST(Safetensors, RoundTripEveryFloatDtypeAndMetadata) {
    std::vector<float> values(3 * 5);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = 0.37f * static_cast<float>(i) - 2.0f;
    SafetensorsWriter w;
    w.add_f32("a.weight", {3, 5}, values, DType::F32);
    w.add_f32("b.bf16", {15}, values, DType::BF16);
    w.add_f32("c.f16", {5, 3}, values, DType::F16);
    w.add_f32("d.f64", {15}, values, DType::F64);
    const std::int64_t ints[] = {-1, 2, 1ll << 40};
    w.add("e.ids", DType::I64, {3}, {reinterpret_cast<const std::uint8_t*>(ints), sizeof ints});
    w.add("scalar", DType::F32, {}, {reinterpret_cast<const std::uint8_t*>(values.data()), 4});
    w.set_metadata("format", "pt");
    w.set_metadata("source", "test");
    const fs::path p = temp("roundtrip.safetensors");
    w.write(p.string());

    const auto bytes = read_all(p);
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ((8 + n) % 8, 0u) << "data must start 8-byte aligned";

    const auto f = SafetensorsFile::open(p.string());
    ASSERT_EQ(f.tensors().size(), 6u);
    EXPECT_EQ(f.metadata().at("format"), "pt");
    EXPECT_EQ(f.read_f32(f.at("a.weight")), values);
    EXPECT_EQ(f.read_f32(f.at("d.f64")), values);
    const auto bf = f.read_f32(f.at("b.bf16"));
    const auto hf = f.read_f32(f.at("c.f16"));
    for (std::size_t i = 0; i < values.size(); ++i) {
        EXPECT_EQ(bf[i], bf16_to_f32(f32_to_bf16(values[i])));
        EXPECT_EQ(hf[i], f16_to_f32(f32_to_f16(values[i])));
    }
    EXPECT_EQ(f.at("c.f16").shape, (std::vector<std::uint64_t>{5, 3}));
    EXPECT_EQ(f.at("scalar").numel(), 1u);
    EXPECT_EQ(std::memcmp(f.raw(f.at("e.ids")).data(), ints, sizeof ints), 0);
    std::vector<float> wrong(3);
    EXPECT_THROW(f.read_f32(f.at("e.ids")), FormatError);
    EXPECT_THROW(f.read_f32(f.at("a.weight"), wrong), FormatError);
    EXPECT_THROW(f.at("missing"), FormatError);
}

TEST(Safetensors, ShardedRoundTripThroughTheIndex) {
    SafetensorsWriter w;
    std::vector<float> v(100);
    for (int t = 0; t < 7; ++t) {
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = static_cast<float>(t * 1000 + static_cast<int>(i));
        w.add_f32("layer." + std::to_string(t), {10, 10}, v, DType::BF16);
    }
    const fs::path dir = temp("sharded");
    fs::remove_all(dir);
    const auto files = w.write_sharded(dir.string(), 450);  // 200 bytes each: 2 per shard
    ASSERT_EQ(files.size(), 5u);                            // 4 shards + index
    EXPECT_TRUE(fs::exists(dir / "model-00004-of-00004.safetensors"));
    const auto c = Checkpoint::open(dir.string());
    EXPECT_EQ(c.names().size(), 7u);
    const auto& info = c.info("layer.6");
    const auto back = c.file_of("layer.6").read_f32(info);
    EXPECT_EQ(back[99], bf16_to_f32(f32_to_bf16(6099.0f)));  // 6112 in bfloat16
    EXPECT_EQ(c.metadata().at("total_size"), "1400");
    // One shard: a plain model.safetensors, opened through the folder too.
    const fs::path one = temp("single");
    fs::remove_all(one);
    EXPECT_EQ(w.write_sharded(one.string(), 1u << 20).size(), 1u);
    EXPECT_EQ(Checkpoint::open(one.string()).names().size(), 7u);
    // An index naming a tensor its shard lacks.
    std::ofstream(dir / "model.safetensors.index.json")
        << R"({"weight_map": {"ghost": "model-00001-of-00004.safetensors"}})";
    EXPECT_THROW(Checkpoint::open(dir.string()), FormatError);
    std::ofstream(dir / "model.safetensors.index.json")
        << R"({"weight_map": {"x": "../etc/passwd"}})";
    EXPECT_THROW(Checkpoint::open(dir.string()), FormatError);
}

TEST(Safetensors, WriterRefusesBadInput) {
    SafetensorsWriter w;
    const std::uint8_t four[4] = {};
    EXPECT_THROW(w.add("", DType::F32, {1}, four), std::invalid_argument);
    EXPECT_THROW(w.add("x", DType::F32, {2}, four), std::invalid_argument);
    w.add("x", DType::F32, {1}, four);
    EXPECT_THROW(w.add("x", DType::F32, {1}, four), std::invalid_argument);
}

// Each broken file must fail with a message that names the file, the tensor or field, and
// the reason.
TEST(Safetensors, BrokenFilesGiveClearErrors) {
    const std::string ok = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    EXPECT_NO_THROW(SafetensorsFile::open([&] {
        auto p = temp("ok.safetensors");
        write_all(p, raw_file(ok, 8));
        return p.string();
    }()));
    struct Case {
        const char* name;
        std::vector<std::uint8_t> bytes;
        const char* message;
    };
    const Case cases[] = {
        {"short", {1, 2, 3}, "too short"},
        {"huge_header", raw_file(ok, 8, 1ull << 40), "exceeds the cap"},
        {"past_eof", raw_file(ok, 8, 5000), "runs past the end of the file"},
        {"not_object_start", raw_file("[1,2]", 0), "does not start with '{'"},
        {"not_json", raw_file("{\"t\": nope}", 0), "not valid JSON"},
        {"bad_utf8", raw_file("{\"\xff\xfe\":1}", 0), "not valid JSON"},
        {"duplicate",
         raw_file(
             R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             8),
         "name 't' appears twice"},
        {"bad_dtype", raw_file(R"({"t":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2),
         "tensor 't': unsupported dtype 'F8_E4M3'"},
        {"size_mismatch", raw_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
         "tensor 't': shape [3] of F32 needs 12 bytes but data_offsets span 8"},
        {"overflow",
         raw_file(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                  8),
         "tensor 't': element count overflows"},
        {"negative_shape",
         raw_file(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
         "tensor 't': shape must be a list of non-negative integers"},
        {"reversed", raw_file(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8),
         "tensor 't': data_offsets end 0 is before begin 8"},
        {"overlap",
         raw_file(
             R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             8),
         "tensor 'b': data_offsets [4, 8) overlap"},
        {"hole", raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
         "tensor 'a': data_offsets begin 4 leaves a hole"},
        {"past_buffer", raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
         "tensor 'a': data_offsets end 16 is past the data buffer"},
        {"trailing", raw_file(ok, 12), "4 bytes after the last tensor"},
        {"missing_field", raw_file(R"({"t":{"dtype":"F32","shape":[2]}})", 8),
         "tensor 't': missing field 'data_offsets'"},
        {"extra_field",
         raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8),
         "tensor 't': unexpected field 'x'"},
        {"metadata_type", raw_file(R"({"__metadata__":{"k":1}})", 0),
         "__metadata__['k'] must be a string"},
        {"float_offsets",
         raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}})", 8),
         "tensor 't': data_offsets must be"},
        {"entry_not_object", raw_file(R"({"t":3})", 0), "tensor 't': expected an object"},
        // Found by the fuzzer: a number too large for a double throws out_of_range.
        {"number_overflow", raw_file(R"({"s":9e9999999909})", 0), "header is not usable JSON"},
    };
    for (const auto& c : cases) {
        const std::string what = expect_error(c.bytes, std::string(c.name) + ".safetensors");
        EXPECT_NE(what.find(c.message), std::string::npos) << c.name << ": " << what;
    }
    EXPECT_THROW(SafetensorsFile::open(temp("does-not-exist").string()), FormatError);
}

// A seeded generator of damaged files: every one is either read or refused with a
// FormatError (never a crash, never an out-of-bounds read: run it under ASan too).
TEST(Safetensors, SeededMutationsNeverCrash) {
    SafetensorsWriter w;
    std::vector<float> v(24, 1.5f);
    w.add_f32("a", {2, 3, 4}, v, DType::F32);
    w.add_f32("b", {24}, v, DType::BF16);
    w.set_metadata("k", "v");
    const fs::path good = temp("mutate-base.safetensors");
    w.write(good.string());
    const auto base = read_all(good);
    std::mt19937_64 rng(2026);
    int accepted = 0, refused = 0;
    for (int i = 0; i < 3000; ++i) {
        auto bytes = base;
        const int kind = static_cast<int>(rng() % 4);
        if (kind == 0) {
            bytes[rng() % bytes.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
        } else if (kind == 1) {
            bytes.resize(rng() % bytes.size());
        } else if (kind == 2) {
            bytes[8 + rng() % 120] =
                static_cast<std::uint8_t>("{}[]\",:0123456789 -ex"[rng() % 21]);
        } else {
            for (int k = 0; k < 8; ++k)
                bytes[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(rng());
        }
        try {
            const auto header = parse_header(bytes, "mutant");
            for (const auto& t : header.tensors) ASSERT_LE(header.data_start + t.end, bytes.size());
            ++accepted;
        } catch (const FormatError&) {
            ++refused;
        }
    }
    EXPECT_GT(refused, 1000);
    EXPECT_EQ(accepted + refused, 3000);
}
