#include "app/merge_files.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "config/config.h"
#include "formats/safetensors.h"

namespace compatbench {

namespace {

namespace fs = std::filesystem;
namespace mk = merging::mergekit;

// mergekit's _copy_tokenizer file list (merge.py; generation_config.json among them).
const char* const kTokenizerFiles[] = {"tokenizer_config.json", "special_tokens_map.json",
                                       "tokenizer.json",        "tokenizer.model",
                                       "added_tokens.json",     "merges.txt",
                                       "chat_template.jinja",   "generation_config.json",
                                       "chat_template.json",    "video_preprocessor_config.json"};

std::string file_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// The number of token ids of a tokenizer.json (its vocabulary and added tokens).
std::size_t vocabulary_size(const fs::path& file) {
    const auto j = nlohmann::json::parse(file_bytes(file), nullptr, false);
    std::size_t n = 0;
    if (j.is_object() && j.contains("model") && j["model"].contains("vocab")) {
        const auto& v = j["model"]["vocab"];
        if (v.is_object())
            for (const auto& [token, id] : v.items())
                if (id.is_number_unsigned())
                    n = std::max<std::size_t>(n, id.get<std::size_t>() + 1);
        if (v.is_array()) n = v.size();
    }
    if (j.is_object() && j.contains("added_tokens"))
        for (const auto& t : j["added_tokens"])
            if (t.contains("id") && t["id"].is_number_unsigned())
                n = std::max<std::size_t>(n, t["id"].get<std::size_t>() + 1);
    return n;
}

// tokenizer_source: mergekit builds the tokenizer and permutes every model's embeddings to
// it, resizing them to the vocabulary. That is the identity, and compatbench copies the
// donor's files, when every model has the donor's tokenizer.json and the embeddings have one
// row per token (config.json's vocab_size); otherwise refused.
// Model i's own folder: for BASE+ADAPTER the base's (config.json and the tokenizer come from
// there, as mergekit reads them from the reference's model path, not the adapted copy).
fs::path folder_of(const MergeSpec& spec, std::size_t i) {
    for (const auto& l : spec.loras)
        if (l.model == i) return l.base;
    return spec.config.models[i];
}

void check_tokenizer_source(const MergeSpec& spec) {
    if (!spec.donor) return;
    const fs::path donor = folder_of(spec, *spec.donor);
    const auto refuse = [&](const std::string& why) {
        throw ConfigError(spec.file, "tokenizer_source", why);
    };
    if (!fs::exists(donor / "tokenizer.json"))
        refuse(donor.string() + " has no tokenizer.json to take the vocabulary from");
    const std::string mine = file_bytes(donor / "tokenizer.json");
    for (std::size_t i = 0; i < spec.config.models.size(); ++i)
        if (const std::string m = folder_of(spec, i).string();
            !fs::is_directory(m) || file_bytes(fs::path(m) / "tokenizer.json") != mine)
            refuse(m + " has another tokenizer than " + donor.string() +
                   ": merging models of different vocabularies (mergekit's embedding "
                   "permutation) is not supported");
    const std::size_t tokens = vocabulary_size(donor / "tokenizer.json");
    const auto config = nlohmann::json::parse(file_bytes(donor / "config.json"), nullptr, false);
    if (!config.is_object() || !config.contains("vocab_size") || config["vocab_size"] != tokens)
        refuse(donor.string() + ": its tokenizer has " + std::to_string(tokens) +
               " tokens and config.json another vocab_size: mergekit would resize the "
               "embeddings; not supported");
}

// The donor of the tokenizer files: tokenizer_source, else the base, else the first model.
fs::path donor_of(const MergeSpec& spec) {
    return folder_of(spec, spec.donor.value_or(spec.config.base.value_or(0)));
}

// A model as card.py's modelref_md writes it: BASE + ADAPTER for a LoRA reference.
std::string card_name(std::string ref) {
    if (const auto plus = ref.find('+'); plus != std::string::npos) ref.replace(plus, 1, " + ");
    return ref;
}

// The output's folder name (`out` may end in a slash).
std::string name_of(const std::string& out) {
    const fs::path p = fs::path(out).lexically_normal();
    return (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
}

}  // namespace

void check_tokenizer(MergeSpec& spec, bool copy_tokenizer) {
    check_tokenizer_source(spec);
    const fs::path donor = donor_of(spec);
    if (!copy_tokenizer || !fs::is_directory(donor)) return;  // a file brings no tokenizer
    bool any = false;
    for (const char* f : kTokenizerFiles)
        any |= std::string(f) != "generation_config.json" && fs::exists(donor / f);
    const bool copied =
        fs::exists(donor / "tokenizer_config.json") &&
        (fs::exists(donor / "tokenizer.json") || fs::exists(donor / "tokenizer.model"));
    if (copied) return;
    if (!any) {
        spec.warnings.push_back(donor.string() +
                                ": no tokenizer files: the merged model has none (copy them "
                                "from somewhere else; --no-copy-tokenizer says so quietly)");
        return;
    }
    throw ConfigError(spec.file, "tokenizer_source",
                      donor.string() + " has tokenizer files but not " +
                          (fs::exists(donor / "tokenizer_config.json")
                               ? std::string("tokenizer.json or tokenizer.model")
                               : std::string("tokenizer_config.json")) +
                          ": mergekit would rebuild its tokenizer with transformers, which "
                          "compatbench does not do; add the file, or pass --no-copy-tokenizer "
                          "and copy the tokenizer yourself");
}

std::string model_card(const MergeSpec& spec, const std::string& name, const std::string& yaml) {
    const mk::MethodDef* def = mk::find_method(spec.config.method);
    std::string method = def ? def->pretty : spec.config.method;
    if (def && !def->url.empty()) method = "[" + method + "](" + def->url + ")";
    // slerp's base is one of the two models merged: listed, not named the base (card.py).
    const bool slerp = spec.config.method == "slerp";
    const std::size_t none = spec.written.size();
    const std::size_t base = slerp ? none : spec.config.base.value_or(none);
    std::ostringstream card;
    card << "---\nbase_model: []\nlibrary_name: transformers\ntags:\n- mergekit\n- merge\n---\n"
         << "# " << (name.empty() ? "Untitled Model (1)" : name) << "\n\n"
         << "This is a merge of pre-trained language models created using compatbench merge "
            "from a [mergekit](https://github.com/cg123/mergekit) configuration.\n\n"
         << "## Merge Details\n### Merge Method\n\nThis model was merged using the " << method
         << " merge method"
         << (base < none ? " using " + card_name(spec.written[base]) + " as a base" : std::string())
         << ".\n\n"
         << "### Models Merged\n\nThe following models were included in the merge:\n";
    const std::vector<bool> merged = referenced_models(spec);
    for (std::size_t i = 0; i < none; ++i)
        if (merged[i] && i != base) card << "* " << card_name(spec.written[i]) << "\n";
    card << "\n### Configuration\n\nThe following YAML configuration was used to produce this "
            "model:\n\n```yaml\n"
         << yaml << "\n```\n";
    return card.str();
}

void write_side_files(const MergeSpec& spec, const mk::Plan& plan, const fs::path& dir,
                      bool copy_tokenizer, const std::string& out) {
    const fs::path model = folder_of(spec, spec.config.base.value_or(0));
    if (fs::exists(model / "config.json")) {
        nlohmann::json config =
            nlohmann::json::parse(file_bytes(model / "config.json"), nullptr, false);
        if (config.is_discarded())
            throw formats::FormatError((model / "config.json").string() + ": not valid JSON");
        for (const char* key : {"num_hidden_layers", "n_layer"})
            if (plan.layers_changed && config.contains(key)) config[key] = plan.layers;
        if (spec.out_dtype)
            config["torch_dtype"] = *spec.out_dtype == formats::DType::F32   ? "float32"
                                    : *spec.out_dtype == formats::DType::F16 ? "float16"
                                                                             : "bfloat16";
        std::ofstream(dir / "config.json") << config.dump(2) << "\n";
    }
    const std::string yaml = file_bytes(spec.file);  // merge.py writes the source text as is
    std::ofstream(dir / "mergekit_config.yml", std::ios::binary) << yaml;
    std::ofstream(dir / "README.md", std::ios::binary) << model_card(spec, name_of(out), yaml);
    const fs::path donor = donor_of(spec);
    if (!copy_tokenizer || !fs::exists(donor / "tokenizer_config.json") ||
        !(fs::exists(donor / "tokenizer.json") || fs::exists(donor / "tokenizer.model")))
        return;
    for (const char* f : kTokenizerFiles)
        if (fs::exists(donor / f)) fs::copy_file(donor / f, dir / f);
}

}  // namespace compatbench
