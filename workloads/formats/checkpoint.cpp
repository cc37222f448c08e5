// A checkpoint: one safetensors file, or a folder of shards with its index (declared in
// safetensors.h).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "formats/tensor_reader.h"

namespace compatbench::formats {

namespace fs = std::filesystem;

namespace {
[[noreturn]] void fail_in(const std::string& file, const std::string& what) {
    throw FormatError(file + ": " + what);
}
}  // namespace

Checkpoint Checkpoint::open(const std::string& path, const ReadLimits& limits) {
    Checkpoint c;
    c.path_ = path;
    fs::path single = path;
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    if (fs::is_directory(path)) {
        if (fs::exists(index)) {
            std::ifstream in(index);
            nlohmann::json j;
            try {
                j = nlohmann::json::parse(in);
            } catch (const nlohmann::json::exception& e) {
                fail_in(index.string(), std::string("not valid JSON: ") + e.what());
            }
            if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
                fail_in(index.string(), "expected an object with a 'weight_map' object");
            }
            std::map<std::string, std::size_t> file_index;
            for (const auto& [tensor, file] : j["weight_map"].items()) {
                if (!file.is_string())
                    fail_in(index.string(), "weight_map['" + tensor + "'] must be a file name");
                const std::string shard = file.get<std::string>();
                if (shard.find('/') != std::string::npos || shard == ".." || shard.empty()) {
                    fail_in(index.string(), "weight_map['" + tensor + "'] = '" + shard +
                                                "' is not a file in the folder");
                }
                if (!file_index.count(shard)) {
                    file_index[shard] = c.files_.size();
                    c.files_.push_back(std::make_unique<SafetensorsFile>(
                        SafetensorsFile::open((fs::path(path) / shard).string(), limits)));
                }
                const auto& f = *c.files_[file_index[shard]];
                if (!f.find(tensor))
                    fail_in(f.path(), "has no tensor '" + tensor + "' although " + index.string() +
                                          " maps it there");
                c.where_[tensor] = file_index[shard];
            }
            if (j.contains("metadata") && j["metadata"].is_object()) {
                for (const auto& [k, v] : j["metadata"].items())
                    c.metadata_[k] = v.is_string() ? v.get<std::string>() : v.dump();
            }
            return c;
        }
        single = fs::path(path) / "model.safetensors";
        if (!fs::exists(single))
            fail_in(path, "a folder without model.safetensors.index.json or model.safetensors");
    }
    c.files_.push_back(
        std::make_unique<SafetensorsFile>(SafetensorsFile::open(single.string(), limits)));
    for (const auto& t : c.files_[0]->tensors()) c.where_[t.name] = 0;
    c.metadata_ = c.files_[0]->metadata();
    return c;
}

std::vector<std::string> Checkpoint::names() const {
    std::vector<std::string> out;
    for (const auto& [name, file] : where_) out.push_back(name);
    return out;
}

const TensorInfo& Checkpoint::info(const std::string& name) const { return file_of(name).at(name); }

const SafetensorsFile& Checkpoint::file_of(const std::string& name) const {
    auto it = where_.find(name);
    if (it == where_.end()) fail_in(path_, "no tensor named '" + name + "'");
    return *files_[it->second];
}

// A checkpoint folder's config.json (Hugging Face's), or null when it has none.
namespace {
nlohmann::json folder_config(const std::string& path) {
    const auto file = std::filesystem::path(path) / "config.json";
    if (!std::filesystem::is_regular_file(file)) return nullptr;
    std::ifstream in(file);
    auto config = nlohmann::json::parse(in, nullptr, false);
    if (config.is_discarded() || !config.is_object())
        throw FormatError(file.string() + ": not a JSON object");
    return config;
}
}  // namespace

void check_same_config(const std::string& base, const std::string& ft) {
    auto b = folder_config(base), f = folder_config(ft);
    if (b.is_null() && f.is_null()) return;
    if (b.is_null() || f.is_null())
        throw FormatError((b.is_null() ? base : ft) + ": no config.json, but " +
                          (b.is_null() ? ft : base) + " has one");
    for (auto* c : {&b, &f})
        if (!c->contains("num_key_value_heads") && c->contains("num_attention_heads"))
            (*c)["num_key_value_heads"] = (*c)["num_attention_heads"];
    for (const char* key :
         {"model_type", "num_hidden_layers", "hidden_size", "intermediate_size",
          "num_attention_heads", "num_key_value_heads", "vocab_size", "tie_word_embeddings"}) {
        const nlohmann::json vb = b.value(key, nlohmann::json()),
                             vf = f.value(key, nlohmann::json());
        if (vb != vf)
            throw FormatError(ft + "/config.json: " + key + " " + vf.dump() + ", but the base's " +
                              base + "/config.json has " + vb.dump());
    }
}

double relative_norm(const Checkpoint& base, const Checkpoint& other) {
    std::vector<std::uint8_t> raw0, raw1;
    std::vector<float> a(TensorReader::kChunkBytes / 2), b(a.size());
    double diff = 0.0, norm = 0.0;
    for (const auto& name : base.names()) {
        const TensorInfo& t0 = base.info(name);
        if (!dtype_is_float(t0.dtype) || t0.shape.size() < 2) continue;
        TensorReader r0(base.file_of(name), t0, raw0),
            r1(other.file_of(name), other.info(name), raw1);
        for (std::size_t at = 0; at < t0.numel(); at += a.size()) {
            const std::size_t n = std::min(a.size(), t0.numel() - at);
            to_f32(r0.dtype(), r0.elements(at, n), n, a.data());
            to_f32(r1.dtype(), r1.elements(at, n), n, b.data());
            for (std::size_t j = 0; j < n; ++j) {
                const double x = a[j], d = static_cast<double>(b[j]) - x;
                norm += x * x;
                diff += d * d;
            }
        }
    }
    return norm > 0.0 ? std::sqrt(diff / norm) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace compatbench::formats
