#include "formats/lora.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "formats/json_file.h"
#include "formats/layout.h"

namespace compatbench::formats {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const fs::path& file, const std::string& why) {
    throw FormatError(file.string() + ": " + why);
}

// The adapter's settings, each one peft reads checked: what changes the merge and is not
// done here is refused by name.
void read_settings(const fs::path& file, LoraAdapter& a) {
    nlohmann::json c;
    try {
        c = read_json(file);
    } catch (const std::exception& e) {
        refuse(file, e.what());
    }
    const auto get = [&](const char* key, const nlohmann::json& fallback) {
        return c.is_object() && c.contains(key) && !c[key].is_null() ? c[key] : fallback;
    };
    if (get("peft_type", "LORA") != "LORA")
        refuse(file, "peft_type " + get("peft_type", "").dump() + ": only LORA adapters are read");
    for (const char* key : {"use_dora", "use_rslora"})
        if (get(key, false) != false)
            refuse(file, std::string(key) + ": not supported (W + (lora_alpha/r)·B·A only)");
    if (get("bias", "none") != "none")
        refuse(file, "bias " + get("bias", "").dump() + ": trained biases are not supported");
    if (!get("modules_to_save", nlohmann::json::array()).empty())
        refuse(file,
               "modules_to_save: not supported (modules trained in full and saved beside the "
               "adapter are not merged)");
    for (const char* key : {"rank_pattern", "alpha_pattern"})
        if (!get(key, nlohmann::json::object()).empty())
            refuse(file, std::string(key) + ": not supported (one r and lora_alpha for all)");
    const nlohmann::json r = get("r", nullptr), alpha = get("lora_alpha", nullptr);
    if (!r.is_number_integer() || r.get<long>() <= 0 || !alpha.is_number())
        refuse(file, "r (a positive integer) and lora_alpha (a number) are required");
    a.scale = alpha.get<double>() / r.get<double>();
    a.r = r.get<std::uint64_t>();
    a.fan_in_fan_out = get("fan_in_fan_out", false) == true;
}

}  // namespace

LoraAdapter read_lora_adapter(const std::string& folder, const Checkpoint& base) {
    LoraAdapter a;
    a.folder = folder;
    read_settings(fs::path(folder) / "adapter_config.json", a);
    const fs::path weights = fs::path(folder) / "adapter_model.safetensors";
    if (!fs::exists(weights)) refuse(weights, "no such file (a PEFT adapter's weights)");
    const Checkpoint lora = Checkpoint::open(weights.string());
    const std::string prefix = "base_model.model.", suffix_a = ".lora_A.weight",
                      suffix_b = ".lora_B.weight";
    for (const auto& name : lora.names()) {
        const bool is_a = name.ends_with(suffix_a), is_b = name.ends_with(suffix_b);
        if (!name.starts_with(prefix) || !(is_a || is_b))
            refuse(weights, "tensor '" + name +
                                "' is no lora_A/lora_B weight of a linear layer (embedding and "
                                "convolution LoRA are not supported)");
        const std::string module = name.substr(prefix.size(), name.size() - prefix.size() - 14);
        auto& pair = a.pairs[module + ".weight"];
        (is_a ? pair.first : pair.second) = name;
    }
    const auto names = base.names();
    for (const auto& [target, pair] : a.pairs) {
        if (pair.first.empty() || pair.second.empty())
            refuse(weights, "'" + target + "' has lora_A or lora_B alone");
        if (!std::binary_search(names.begin(), names.end(), target))
            refuse(weights, "'" + target + "' is not a tensor of the base " + base.path());
        const auto &w = base.info(target).shape, &sa = lora.info(pair.first).shape,
                   &sb = lora.info(pair.second).shape;
        if (w.size() != 2) refuse(weights, "'" + target + "' of the base is no matrix");
        const std::uint64_t out = a.fan_in_fan_out ? w.at(1) : w.at(0),
                            in = a.fan_in_fan_out ? w.at(0) : w.at(1);
        if (sa.size() != 2 || sb.size() != 2 || sa[1] != in || sb[0] != out || sa[0] != sb[1])
            refuse(weights, "the shapes of '" + pair.first + "' and '" + pair.second +
                                "' do not fit '" + target + "' of the base");
        if (sa[0] != a.r)  // peft refuses to load it; the scale lora_alpha/r would be wrong
            refuse(weights, "'" + pair.first + "' has rank " + std::to_string(sa[0]) +
                                " where adapter_config.json says r: " + std::to_string(a.r));
    }
    return a;
}

void write_lora_merged(const Checkpoint& base, const LoraAdapter& adapter, const std::string& out) {
    const Checkpoint lora =
        Checkpoint::open((fs::path(adapter.folder) / "adapter_model.safetensors").string());
    fs::create_directories(out);
    CheckpointLayout layout;
    const auto names = base.names();
    for (const auto& name : names) {
        const TensorInfo& t = base.info(name);
        layout.add(name, dtype_is_float(t.dtype) ? DType::F32 : t.dtype, t.shape);
    }
    layout.set_metadata("format", "pt");
    layout.plan(out, std::uint64_t{1} << 62);
    layout.create();
    for (std::size_t i = 0; i < names.size(); ++i) {
        const TensorInfo& t = base.info(names[i]);
        if (!dtype_is_float(t.dtype)) {
            layout.write(i, base.file_of(names[i]).raw(t));
            continue;
        }
        std::vector<float> w = base.file_of(names[i]).read_f32(t);
        if (const auto p = adapter.pairs.find(names[i]); p != adapter.pairs.end()) {
            const TensorInfo &ia = lora.info(p->second.first), &ib = lora.info(p->second.second);
            const std::vector<float> A = lora.file_of(ia.name).read_f32(ia),
                                     B = lora.file_of(ib.name).read_f32(ib);
            const std::size_t r = ia.shape[0], in = ia.shape[1], rows = ib.shape[0];
            for (std::size_t o = 0; o < rows; ++o)  // ΔW[o][c] = scale Σ_k B[o][k] A[k][c]
                for (std::size_t c = 0; c < in; ++c) {
                    double d = 0.0;
                    for (std::size_t k = 0; k < r; ++k)
                        d += static_cast<double>(B[o * r + k]) * A[k * in + c];
                    float& x = adapter.fan_in_fan_out ? w[c * rows + o] : w[o * in + c];
                    x = static_cast<float>(x + adapter.scale * d);
                }
        }
        layout.write(i, from_f32(DType::F32, w));
    }
    const fs::path config = fs::path(base.path()) / "config.json";
    if (fs::is_directory(base.path()) && fs::exists(config)) {
        nlohmann::json c = read_json(config);
        c["torch_dtype"] = "float32";
        write_text_file(fs::path(out) / "config.json", c.dump(2) + "\n");
    }
}

}  // namespace compatbench::formats
