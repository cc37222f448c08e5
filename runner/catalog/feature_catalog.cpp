#include "catalog/feature_catalog.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "formats/matrix.h"
#include "formats/safetensors.h"

namespace compatbench {

namespace {

const CatalogModel* find_in(const std::vector<CatalogModel>& v, const std::string& name) {
    for (const auto& m : v)
        if (m.name == name) return &m;
    return nullptr;
}

// The zoo model a zoo_features task extracts, from the zoo_encoder or zoo_finetune group
// that trains it (and, for fine-tunes, the backbone's group).
CatalogModel zoo_model(const ListedTask& features_task, const std::vector<TaskGroup>& earlier) {
    CatalogModel m;
    m.name = features_task.key("name").text;
    m.zoo = true;
    const std::string& source = features_task.after.front();  // "<group>/<name>"
    const std::string source_group = source.substr(0, source.find('/'));
    const auto find_listed =
        [&](const std::string& group,
            const std::string& name) -> std::pair<const TaskGroup*, const ListedTask*> {
        for (const auto& g : earlier) {
            if (g.name != group) continue;
            for (const auto& t : g.listed)
                if (t.key("name").text == name) return {&g, &t};
        }
        return {nullptr, nullptr};
    };
    const auto [g, t] = find_listed(source_group, m.name);
    if (!g || !t) return m;
    if (t->params.count("spec")) {
        const auto spec = nlohmann::json::parse(t->params.at("spec").text);
        m.modality = t->params.at("modality_label").text;
        m.family = spec.at("family").get<std::string>();
        m.paradigm = spec.at("paradigm").get<std::string>();
    } else if (t->params.count("base")) {
        m.modality = "finetune";
        m.base = t->params.at("base").text;
        m.task = t->params.at("task").text;
        m.checkpoint = "@out/artifacts/models/" + m.name + ".safetensors";
        m.base_checkpoint = "@out/artifacts/models/" + m.base + ".safetensors";
        const std::string bb = t->after.front();
        const auto [bg, bt] = find_listed(bb.substr(0, bb.find('/')), m.base);
        if (bt && bt->params.count("spec")) {
            const auto spec = nlohmann::json::parse(bt->params.at("spec").text);
            m.family = spec.at("family").get<std::string>();
            m.paradigm = spec.at("paradigm").get<std::string>();
        }
    }
    return m;
}

}  // namespace

const CatalogModel* FeatureCatalog::find(const std::string& name) const {
    return find_in(models, name);
}

FeatureCatalog feature_catalog(const YAML::Node& node, const std::string& path,
                               const std::vector<TaskGroup>& earlier, const YamlChecker& yc) {
    if (!node) yc.fail(node, path, "missing: the zoo_features or feature_set group to read");
    const std::string name = yc.as_string(node, path);
    const TaskGroup* g = nullptr;
    for (const auto& e : earlier)
        if (e.name == name) g = &e;
    if (!g || (g->kind->name() != "zoo_features" && g->kind->name() != "feature_set" &&
               g->kind->name() != "checkpoint_set"))
        yc.fail(
            node, path,
            "no earlier zoo_features, feature_set or checkpoint_set group named '" + name + "'");
    FeatureCatalog c;
    c.group = name;
    if (g->kind->name() == "zoo_features") {
        c.world_group = g->listed.front().params.at("world_group").text;
        c.features_root = "@out/artifacts/features";
        c.pairing_root = "@out/artifacts/" + c.world_group;
        for (const auto& t : g->listed) {
            CatalogModel m = zoo_model(t, earlier);
            m.task_id = g->name + "/" + t.suffix;
            c.models.push_back(std::move(m));
        }
    } else {
        const auto& first = g->listed.front().params;
        c.features_root = first.at("features_root").text;
        c.pairing_root = first.at("pairing_root").text;
        for (const auto& t : g->listed) {
            CatalogModel m;
            m.name = t.key("name").text;
            m.modality = t.key("modality").text;
            m.family = t.key("family").text;
            m.paradigm = t.key("paradigm").text;
            for (const auto& [key, field] : {std::pair<const char*, std::string*>{"base", &m.base},
                                             {"task", &m.task},
                                             {"checkpoint", &m.checkpoint},
                                             {"base_checkpoint", &m.base_checkpoint}}) {
                if (t.params.count(key)) *field = t.params.at(key).text;
            }
            m.task_id = g->name + "/" + t.suffix;
            c.models.push_back(std::move(m));
        }
    }
    return c;
}

void add_catalog_params(const FeatureCatalog& catalog, std::map<std::string, Scalar>& params) {
    params["features_root"] = Scalar::parse(catalog.features_root);
    params["pairing_root"] = Scalar::parse(catalog.pairing_root);
    if (!catalog.world_group.empty()) params["world_group"] = Scalar::parse(catalog.world_group);
}

bool in_run_folder(const std::string& root) { return root.rfind("@out/", 0) == 0; }

fs::path catalog_path(const std::string& root, const fs::path& out_dir) {
    if (in_run_folder(root)) return out_dir / root.substr(5);
    return root;
}

namespace {

fs::path features_file(const fs::path& root, const std::string& model, const std::string& split) {
    return root / model / (split + ".safetensors");
}

// The features tensor of an open file, checked: 2-D rows × dim, a float dtype.
const formats::TensorInfo& features_tensor(const formats::SafetensorsFile& f,
                                           const fs::path& path) {
    const auto& t = f.at("features");
    if (t.shape.size() != 2 || t.shape[0] == 0 || t.shape[1] == 0)
        throw formats::FormatError(path.string() + ": tensor 'features' must be 2-D rows x dim");
    if (!formats::dtype_is_float(t.dtype))
        throw formats::FormatError(path.string() + ": tensor 'features' has dtype " +
                                   formats::dtype_name(t.dtype) +
                                   "; F32, F16, BF16 or F64 expected");
    return t;
}

formats::SafetensorsFile open_features(const fs::path& path, const std::string& model,
                                       const std::string& split) {
    if (!fs::exists(path))
        throw formats::FormatError(path.string() + ": no such file (features of model '" + model +
                                   "' on split '" + split + "')");
    return formats::SafetensorsFile::open(path.string());
}

}  // namespace

MatF read_features(const TaskContext& ctx, const std::string& model, const std::string& split) {
    const fs::path path =
        features_file(catalog_path(ctx.params.at("features_root").text, ctx.out_dir), model, split);
    const auto f = open_features(path, model, split);
    const auto& t = features_tensor(f, path);
    MatF out = formats::read_matrix(f, t);
    for (Eigen::Index i = 0; i < out.rows(); ++i) {
        if (!out.row(i).allFinite())
            throw formats::FormatError(path.string() + ": tensor 'features' row " +
                                       std::to_string(i) + " has a non-finite value");
    }
    return out;
}

std::vector<int> read_caption_image(const TaskContext& ctx, const std::string& split) {
    return caption_image_of(catalog_path(ctx.params.at("pairing_root").text, ctx.out_dir), split);
}

std::vector<int> caption_image_of(const fs::path& pairing_root, const std::string& split) {
    const fs::path path = pairing_root / (split + ".safetensors");
    if (!fs::exists(path))
        throw formats::FormatError(path.string() + ": no such file (caption_image of split '" +
                                   split + "')");
    const auto f = formats::SafetensorsFile::open(path.string());
    const auto& t = f.at("caption_image");
    if (t.shape.size() != 1 || (t.dtype != formats::DType::I64 && t.dtype != formats::DType::I32))
        throw formats::FormatError(path.string() +
                                   ": tensor 'caption_image' must be a 1-D I64 or I32 vector");
    const auto raw = f.raw(t);
    std::vector<int> out(t.numel());
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::int64_t v = 0;
        if (t.dtype == formats::DType::I64) {
            std::memcpy(&v, raw.data() + 8 * i, 8);
        } else {
            std::int32_t w = 0;
            std::memcpy(&w, raw.data() + 4 * i, 4);
            v = w;
        }
        if (v < 0 || v > 0x7fffffff)
            throw formats::FormatError(path.string() + ": caption_image[" + std::to_string(i) +
                                       "] = " + std::to_string(v) + " is not an image row");
        out[i] = static_cast<int>(v);
    }
    return out;
}

std::pair<std::int64_t, std::int64_t> check_model_files(const fs::path& features_root,
                                                        const fs::path& pairing_root,
                                                        const std::string& model, bool vision,
                                                        const std::vector<std::string>& splits) {
    std::int64_t dim = -1, rows = 0;
    for (const auto& split : splits) {
        const auto caption_image = caption_image_of(pairing_root, split);
        const std::int64_t want =
            vision ? (caption_image.empty()
                          ? 0
                          : *std::max_element(caption_image.begin(), caption_image.end()) + 1)
                   : static_cast<std::int64_t>(caption_image.size());
        const fs::path path = features_file(features_root, model, split);
        const auto f = open_features(path, model, split);
        const auto& t = features_tensor(f, path);
        const auto n = static_cast<std::int64_t>(t.shape[0]),
                   d = static_cast<std::int64_t>(t.shape[1]);
        if (n != want)
            throw formats::FormatError(path.string() + ": tensor 'features' has " +
                                       std::to_string(n) + " rows; the split has " +
                                       std::to_string(want) + (vision ? " images" : " captions"));
        if (dim >= 0 && d != dim)
            throw formats::FormatError(path.string() + ": tensor 'features' has " +
                                       std::to_string(d) + " columns; other splits have " +
                                       std::to_string(dim));
        dim = d;
        rows += n;
    }
    return {dim, rows};
}

std::vector<int> first_caption_rows(const std::vector<int>& caption_image, int n) {
    std::vector<int> first(static_cast<std::size_t>(n), -1);
    for (std::size_t c = 0; c < caption_image.size(); ++c) {
        const int i = caption_image[c];
        if (i < n && first[static_cast<std::size_t>(i)] < 0)
            first[static_cast<std::size_t>(i)] = static_cast<int>(c);
    }
    int images = 0;
    for (const int i : caption_image) images = std::max(images, i + 1);
    if (images < n)
        throw std::invalid_argument("the probe needs " + std::to_string(n) +
                                    " images (the `probe` key); the probe split has " +
                                    std::to_string(images));
    for (int i = 0; i < n; ++i) {
        if (first[static_cast<std::size_t>(i)] < 0)
            throw std::invalid_argument("image " + std::to_string(i) +
                                        " of the probe split has no caption");
    }
    return first;
}

}  // namespace compatbench
