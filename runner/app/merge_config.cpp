#include "app/merge_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>

#include "config/config.h"

namespace compatbench {

namespace {

namespace fs = std::filesystem;
namespace mk = merging::mergekit;

const std::vector<std::string> kPrismScope = {"*gate_proj*", "*up_proj*", "*down_proj*"};

struct Reader {
    YamlChecker yc;
    fs::path dir;
    MergeSpec& s;
    const mk::MethodDef* def = nullptr;  // mergekit's method, else compatbench's own

    // A local safetensors file or folder (resolved against the YAML's folder).
    std::string local_model(const YAML::Node& n, const std::string& path, const std::string& ref) {
        const fs::path p = fs::path(ref).is_relative() ? dir / ref : fs::path(ref);
        const std::string where = p.lexically_normal().string();
        if (!fs::exists(p))
            yc.fail(n, path,
                    "'" + ref + "': no such file or folder (" + where +
                        "); compatbench reads local safetensors checkpoints: download a "
                        "Hugging Face hub model first, e.g. huggingface-cli download " +
                        ref + " --local-dir DIR");
        if (fs::is_directory(p) && !fs::exists(p / "model.safetensors") &&
            !fs::exists(p / "model.safetensors.index.json"))
            yc.fail(n, path,
                    "'" + ref +
                        "': no model.safetensors or model.safetensors.index.json"
                        " in the folder" +
                        (fs::exists(p / "pytorch_model.bin") ||
                                 fs::exists(p / "pytorch_model.bin.index.json")
                             ? " (PyTorch .bin checkpoints are not read: convert them to "
                               "safetensors)"
                             : ""));
        return where;
    }

    // mergekit's BASE+ADAPTER (common.py ModelReference): a PEFT LoRA adapter folder.
    std::string adapter(const YAML::Node& n, const std::string& path, const std::string& ref) {
        const fs::path p = fs::path(ref).is_relative() ? dir / ref : fs::path(ref);
        for (const char* f : {"adapter_config.json", "adapter_model.safetensors"})
            if (!fs::exists(p / f))
                yc.fail(n, path,
                        "'" + ref + "': no " + f +
                            " (a LoRA reference is BASE+ADAPTER, the "
                            "adapter a local PEFT folder)");
        return p.lexically_normal().string();
    }

    // A model reference: a local checkpoint, or one with a LoRA adapter applied
    // (BASE+ADAPTER), its index among the models (each once).
    std::size_t model(const YAML::Node& n, const std::string& path) {
        const std::string ref = yc.as_string(n, path);
        if (ref.find('@') != std::string::npos)
            yc.fail(n, path,
                    "'" + ref + "': revisions (@) are not supported; give a local checkpoint");
        const auto plus = ref.find('+');
        if (plus != std::string::npos && ref.find('+', plus + 1) != std::string::npos)
            yc.fail(n, path, "'" + ref + "': one + at most (BASE+ADAPTER), as mergekit parses it");
        std::string where = local_model(n, path, ref.substr(0, plus));
        std::optional<std::string> lora;
        if (plus != std::string::npos) {
            lora = adapter(n, path, ref.substr(plus + 1));
            where += "+" + *lora;
        }
        auto& models = s.config.models;
        for (std::size_t i = 0; i < models.size(); ++i)
            if (models[i] == where) return i;
        if (lora)
            s.loras.push_back(
                {models.size(), where.substr(0, where.size() - lora->size() - 1), *lora});
        models.push_back(where);
        s.written.push_back(ref);
        return models.size() - 1;
    }

    bool known(const std::string& name, bool per_model_only) const {
        for (const auto& d : def->per_model)
            if (d.name == name) return true;
        if (per_model_only) return false;
        for (const auto& d : def->global)
            if (d.name == name) return true;
        return false;
    }
    // Why mergekit accepts `key` here and never reads it (empty: it reads it, or refuses
    // it). plan.py reads a whole-merge parameter with model=None, so ConfigReader.parameter
    // skips the sources' parameters; mergekit's own tests give slerp and model_stock weights
    // they never read; a method may declare a parameter it reads only when sparsifying.
    std::string ignored(const std::string& key, bool per_model_only) const {
        if (per_model_only && !known(key, true) && known(key, false))
            return "'" + key + "' is a parameter of the whole merge, read from the merge's or " +
                   "the slice's parameters, never from one model's";
        if (key == "weight" && per_model_only && !known(key, true))
            return s.config.method + " reads no weight";
        if (std::find(def->ignored.begin(), def->ignored.end(), key) != def->ignored.end())
            return s.config.method + " declares '" + key + "' and reads it only when sparsifying";
        return "";
    }
    // The methods whose masks are drawn (dare_*, della*): they take a `seed`.
    bool random() const {
        return def->sparsify == merging::Sparsify::random ||
               def->sparsify == merging::Sparsify::della;
    }
    bool is_boolean(const std::string& name) const {
        for (const auto& d : def->global)
            if (d.name == name) return d.boolean;
        return false;
    }

    mk::Setting setting(const YAML::Node& n, const std::string& path, bool boolean, bool nested) {
        mk::Setting st;
        if (n.IsScalar()) {
            st.kind = boolean ? mk::Setting::Kind::boolean : mk::Setting::Kind::number;
            st.number = boolean ? (yc.as_bool(n, path) ? 1.0 : 0.0) : yc.as_real(n, path);
            return st;
        }
        if (!n.IsSequence() || n.size() == 0)
            yc.fail(n, path,
                    "a value, a list of numbers (a gradient) or a list of "
                    "{filter, value} is expected");
        if (boolean) yc.fail(n, path, "a boolean parameter takes one value");
        if (n[0].IsScalar()) {
            st.kind = mk::Setting::Kind::gradient;
            for (std::size_t i = 0; i < n.size(); ++i)
                st.gradient.push_back(yc.as_real(n[i], index_path(path, i)));
            return st;
        }
        if (nested) yc.fail(n, path, "a filter's value is a number or a gradient");
        st.kind = mk::Setting::Kind::filters;
        for (std::size_t i = 0; i < n.size(); ++i) {
            const std::string p = index_path(path, i);
            yc.check_map(n[i], p,
                         {{.name = "filter", .type = KeyType::string},
                          {.name = "value", .type = KeyType::any, .required = true}});
            st.filters.push_back(n[i]["filter"] ? yc.as_string(n[i]["filter"], p + ".filter") : "");
            st.values.push_back(setting(n[i]["value"], p + ".value", boolean, true));
        }
        return st;
    }

    // `parameters:` of the merge, a slice or a source (per_model_only), mergekit's names.
    mk::Parameters parameters(const YAML::Node& n, const std::string& path, bool per_model_only) {
        mk::Parameters out;
        if (!n) return out;
        if (!n.IsMap()) yc.fail(n, path, "a map is expected");
        for (const auto& kv : n) {
            const std::string key = kv.first.Scalar(), p = join_path(path, key);
            if (const std::string why = ignored(key, per_model_only); !why.empty()) {
                s.warnings.push_back(yc.file() + ": " + p + ": " + why +
                                     ": it has no effect (as in mergekit)");
                continue;
            }
            if (key == "seed" && path == "parameters" && random()) {  // the merge's only
                s.config.seed = static_cast<std::uint64_t>(yc.as_int(kv.second, p));
                continue;
            }
            if (!known(key, per_model_only))
                yc.fail(kv.first, p,
                        "'" + key + "' is not a parameter of " + s.config.method +
                            " (docs/mergekit.md lists what each method takes)");
            out[key] = setting(kv.second, p, is_boolean(key), false);
        }
        return out;
    }

    std::vector<mk::Source> sources(const YAML::Node& list, const std::string& path, bool sliced) {
        std::vector<mk::Source> out;
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string p = index_path(path, i);
            std::vector<KeyRule> rules = {
                {.name = "model", .type = KeyType::string, .required = true},
                {.name = "parameters", .type = KeyType::map}};
            if (sliced)
                rules.push_back({.name = "layer_range", .type = KeyType::list, .required = true});
            yc.check_map(list[i], p, rules);
            mk::Source src;
            src.model = model(list[i]["model"], p + ".model");
            for (const auto& other : out)  // mergekit would silently keep one of the two
                if (other.model == src.model)
                    yc.fail(list[i]["model"], p + ".model", "the same model is listed twice");
            if (sliced) {
                const YAML::Node r = list[i]["layer_range"];
                if (r.size() != 2) yc.fail(r, p + ".layer_range", "[first, last) is expected");
                const auto a = yc.as_int(r[0], p + ".layer_range"),
                           b = yc.as_int(r[1], p + ".layer_range");
                if (a < 0 || b < a) yc.fail(r, p + ".layer_range", "0 <= first <= last");
                src.layers = std::pair{static_cast<int>(a), static_cast<int>(b)};
            }
            src.parameters =
                def ? parameters(list[i]["parameters"], p + ".parameters", true) : mk::Parameters{};
            out.push_back(std::move(src));
        }
        if (out.empty()) yc.fail(list, path, "no model to merge");
        return out;
    }
};

// compatbench's own operators: one value per key for the whole merge.
void own_parameters(Reader& r, const YAML::Node& root, const YAML::Node& models) {
    MergeSpec& s = r.s;
    auto& q = s.params;
    q.method = merging::method_from_name(s.config.method);
    const bool dare = q.method == merging::Method::dare;
    std::vector<KeyRule> rules = {{.name = "coef", .type = KeyType::real, .min = -1e6, .max = 1e6},
                                  {.name = "scope", .type = KeyType::scalar_or_list}};
    if (dare)
        rules.insert(rules.end(),
                     {{.name = "normalize", .type = KeyType::string, .choices = {"mean", "sum"}},
                      {.name = "drop", .type = KeyType::real, .min = 0, .max = 0.999999},
                      {.name = "dare_then", .type = KeyType::string, .choices = {"mean", "ties"}},
                      {.name = "seed", .type = KeyType::integer, .min = 0, .max = 9e18}});
    else if (merging::reads_merge_rho(q.method))
        rules.insert(rules.end(),
                     {{.name = "kappa", .type = KeyType::real, .min = 0, .max = 1e6},
                      {.name = "rho_gate", .type = KeyType::real, .min = 0, .max = 1},
                      {.name = "keep_floor", .type = KeyType::real, .min = 0, .max = 1},
                      {.name = "floor_kernels", .type = KeyType::boolean}});
    const YAML::Node p = root["parameters"];
    if (p) {
        r.yc.check_map(p, "parameters", rules);
        const auto real = [&](const char* k, double& v) {
            if (p[k]) v = r.yc.as_real(p[k], std::string("parameters.") + k);
        };
        real("coef", q.coef), real("drop", q.drop), real("kappa", q.kappa);
        real("rho_gate", q.rho_gate), real("keep_floor", q.keep_floor);
        if (p["floor_kernels"])
            q.floor_kernels = r.yc.as_bool(p["floor_kernels"], "parameters.floor_kernels");
        if (p["normalize"] && p["normalize"].Scalar() == "sum")
            q.normalize = merging::Normalize::sum;
        if (p["dare_then"]) q.dare_then_ties = p["dare_then"].Scalar() == "ties";
        if (p["seed"])
            q.seed = static_cast<std::uint64_t>(r.yc.as_int(p["seed"], "parameters.seed"));
        if (const YAML::Node sc = p["scope"])
            for (std::size_t i = 0; i < (sc.IsSequence() ? sc.size() : 1); ++i)
                s.scope.push_back(r.yc.as_string(sc.IsSequence() ? sc[i] : sc, "parameters.scope"));
        s.parameters = yaml_to_json(p);
    }
    if (s.scope.empty() && merging::reads_merge_rho(q.method)) s.scope = kPrismScope;
    bool weighted = false;
    for (std::size_t i = 0; i < models.size(); ++i) {
        const YAML::Node mp = models[i]["parameters"];
        if (!mp) continue;
        const std::string path = index_path("models", i) + ".parameters";
        if (!dare) r.yc.fail(mp, path, s.config.method + " takes no per-model parameters");
        r.yc.check_map(mp, path,
                       {{.name = "weight", .type = KeyType::real, .min = -1e6, .max = 1e6}});
        weighted |= bool(mp["weight"]);
    }
    if (weighted && q.dare_then_ties)
        r.yc.fail(models, "models",
                  "per-model weights do not apply with dare_then: ties "
                  "(its sign election is unweighted); use dare_ties");
    for (std::size_t i = 0; i < s.config.listed.size(); ++i) {  // the base listed is no τ
        const YAML::Node mp = models[i]["parameters"];
        if (s.config.listed[i].model != s.config.base)
            q.weights.push_back(mp && mp["weight"] ? r.yc.as_real(mp["weight"], "weight") : 1.0);
    }
    if (!weighted) q.weights.clear();
}

}  // namespace

namespace {

std::optional<formats::DType> dtype_of(const YamlChecker& yc, const YAML::Node& n,
                                       const std::string& key) {
    if (!n) return std::nullopt;
    std::string v = yc.as_string(n, key);
    if (v.starts_with("torch.")) v = v.substr(6);  // mergekit's common.dtype_from_name
    if (v == "float32" || v == "F32") return formats::DType::F32;
    if (v == "float16" || v == "F16") return formats::DType::F16;
    if (v == "bfloat16" || v == "BF16") return formats::DType::BF16;
    yc.fail(n, key,
            "'" + v + "' is not supported (float32, float16 or bfloat16" +
                (v == "int64" ? "; mergekit's int64 casts the weights to integers)" : ")"));
}

YAML::Node load_one(const std::string& path) {
    std::vector<YAML::Node> docs;
    try {
        docs = YAML::LoadAllFromFile(path);
    } catch (const YAML::BadFile&) {
        throw ConfigError(path, "", "cannot read the file");
    } catch (const YAML::Exception& e) {
        throw ConfigError(path, "", e.what());
    }
    if (docs.size() != 1)
        throw ConfigError(path, "",
                          "holds " + std::to_string(docs.size()) +
                              " YAML documents; a merge file holds exactly one merge");
    // mergekit's yaml.safe_load would keep the last of a repeated key, yaml-cpp the first
    refuse_repeated_keys(docs.front(), path);
    return docs.front();
}

void read_slices(Reader& r, const YAML::Node& slices) {
    for (std::size_t i = 0; i < slices.size(); ++i) {
        const std::string p = index_path("slices", i);
        r.yc.check_map(slices[i], p,
                       {{.name = "sources", .type = KeyType::list, .required = true},
                        {.name = "base_model", .type = KeyType::string},
                        {.name = "parameters", .type = KeyType::map}});
        mk::Slice s;
        s.sources = r.sources(slices[i]["sources"], p + ".sources", true);
        if (slices[i]["base_model"]) s.base = r.model(slices[i]["base_model"], p + ".base_model");
        s.parameters = r.parameters(slices[i]["parameters"], p + ".parameters", false);
        r.s.config.slices.push_back(std::move(s));
    }
}

// Keys of mergekit's MergeConfiguration that compatbench knows and does not support, or
// that have no effect on one merge (`name` names a merge among several for mergekit-multi).
void refuse_unsupported_keys(const YamlChecker& yc, const YAML::Node& root, MergeSpec& s) {
    if (root["modules"])
        yc.fail(root["modules"], "modules",
                "not supported: mergekit's modules merge each part of a model (a vision "
                "tower, a language model) with its own slices; merge each part by itself");
    if (root["tokenizer"])
        yc.fail(root["tokenizer"], "tokenizer",
                "not supported: it builds a new vocabulary and permutes the embeddings "
                "(tokenizer_source: base, or a model, is supported where that is the identity)");
    if (root["chat_template"])
        yc.fail(root["chat_template"], "chat_template",
                "not supported: copy the chat template into the output's "
                "tokenizer_config.json yourself");
    if (root["name"])
        s.warnings.push_back(yc.file() + ": name: '" + yc.as_string(root["name"], "name") +
                             "' names a merge among several for mergekit-multi; a file here "
                             "holds one merge: it has no effect");
}

}  // namespace

MergeSpec parse_merge_spec(const std::string& path) {
    const YAML::Node root = load_one(path);
    MergeSpec s;
    s.file = path;
    Reader r{YamlChecker(path), fs::path(path).parent_path(), s};
    const YamlChecker& yc = r.yc;
    yc.check_map(root, "",
                 {{.name = "merge_method", .type = KeyType::string, .required = true},
                  {.name = "base_model", .type = KeyType::string},
                  {.name = "models", .type = KeyType::list},
                  {.name = "slices", .type = KeyType::list},
                  {.name = "parameters", .type = KeyType::map},
                  {.name = "dtype", .type = KeyType::string},
                  {.name = "out_dtype", .type = KeyType::string},
                  {.name = "tokenizer_source", .type = KeyType::string},
                  {.name = "shard_mb", .type = KeyType::real, .min = 0.001, .max = 1e9},
                  {.name = "name", .type = KeyType::string},
                  {.name = "modules", .type = KeyType::any},
                  {.name = "tokenizer", .type = KeyType::any},
                  {.name = "chat_template", .type = KeyType::any}});
    refuse_unsupported_keys(yc, root, s);
    s.config.method = root["merge_method"].Scalar();
    r.def = mk::find_method(s.config.method);
    s.mergekit = r.def != nullptr;
    const std::vector<std::string> own = {"dare",         "prism", "prism_hard",
                                          "norm_matched", "iso_c", "tsv"};
    if (!s.mergekit && std::find(own.begin(), own.end(), s.config.method) == own.end())
        yc.fail(root["merge_method"], "merge_method",
                "'" + s.config.method + "' is not supported (mergekit's: " + mk::method_list() +
                    "; compatbench's own: dare, prism, prism_hard, norm_matched, iso_c, tsv)");
    if (bool(root["models"]) == bool(root["slices"]))
        yc.fail(root, "models", "exactly one of models and slices is expected");
    if (root["slices"] && !s.mergekit)
        yc.fail(root["slices"], "slices", s.config.method + " merges whole models: no slices");
    if (root["base_model"]) s.config.base = r.model(root["base_model"], "base_model");
    if (root["models"]) s.config.listed = r.sources(root["models"], "models", false);
    if (root["slices"]) read_slices(r, root["slices"]);
    if (s.mergekit) {
        s.config.parameters = r.parameters(root["parameters"], "parameters", false);
        if (root["parameters"]) s.parameters = yaml_to_json(root["parameters"]);
    } else {
        if (!s.config.base) yc.fail(root, "base_model", s.config.method + " needs a base_model");
        own_parameters(r, root, root["models"]);
    }
    s.dtype = dtype_of(yc, root["dtype"], "dtype");
    s.out_dtype = dtype_of(yc, root["out_dtype"], "out_dtype");
    s.out_dtype_given = s.out_dtype.has_value();
    if (!s.out_dtype) s.out_dtype = s.dtype;
    if (const YAML::Node t = root["tokenizer_source"]) {
        const std::string v = yc.as_string(t, "tokenizer_source");
        if (v == "union")
            yc.fail(t, "tokenizer_source",
                    "'union' builds a new vocabulary and permutes the "
                    "embeddings: not supported (base, or a model)");
        s.donor = v == "base" ? s.config.base : std::optional(r.model(t, "tokenizer_source"));
        if (!s.donor) yc.fail(t, "tokenizer_source", "'base' needs a base_model");
    }
    if (root["shard_mb"]) s.shard_mb = yc.as_real(root["shard_mb"], "shard_mb");
    return s;
}

std::vector<bool> referenced_models(const MergeSpec& spec) {
    std::vector<bool> merged(spec.config.models.size(), false);
    if (spec.config.base) merged[*spec.config.base] = true;
    for (const auto& src : spec.config.listed) merged[src.model] = true;
    for (const auto& slice : spec.config.slices)
        for (const auto& src : slice.sources) merged[src.model] = true;
    return merged;
}

std::vector<std::string> merged_model_paths(const MergeSpec& spec) {
    std::vector<std::string> out;
    for (const auto& src : spec.config.listed)
        if (src.model != spec.config.base) out.push_back(spec.config.models[src.model]);
    return out;
}

}  // namespace compatbench
