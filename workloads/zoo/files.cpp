#include "zoo/files.h"

#include <fstream>
#include <stdexcept>

#include "formats/json_file.h"
#include "formats/matrix.h"
#include "formats/safetensors.h"

namespace compatbench::zoo {

using formats::add_matrix;
using formats::DType;
using formats::read_matrix;
using formats::SafetensorsFile;
using formats::SafetensorsWriter;

namespace {
void add_ints(SafetensorsWriter& w, const std::string& name, const std::vector<int>& v) {
    std::vector<std::int64_t> wide(v.begin(), v.end());
    w.add(name, DType::I64, {static_cast<std::uint64_t>(v.size())},
          {reinterpret_cast<const std::uint8_t*>(wide.data()), wide.size() * 8});
}

std::vector<int> read_ints(const SafetensorsFile& f, const std::string& name) {
    const auto& t = f.at(name);
    if (t.dtype != DType::I64)
        throw formats::FormatError(f.path() + ": tensor '" + name + "' must be I64");
    const auto raw = f.raw(t);
    std::vector<int> out(t.numel());
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::int64_t v;
        std::memcpy(&v, raw.data() + 8 * i, 8);
        out[i] = static_cast<int>(v);
    }
    return out;
}

}  // namespace

nlohmann::json world_spec_to_json(const WorldSpec& s) {
    return {{"seed", s.seed},
            {"concepts", s.concepts},
            {"semantic_dim", s.semantic_dim},
            {"style_dim", s.style_dim},
            {"detail_dim", s.detail_dim},
            {"geometry_dim", s.geometry_dim},
            {"caption_detail_dims", s.caption_detail_dims},
            {"image_dim", s.image_dim},
            {"text_dim", s.text_dim},
            {"render_hidden", s.render_hidden},
            {"captions_per_image", s.captions_per_image},
            {"concept_spread", s.concept_spread},
            {"detail_amplitude", s.detail_amplitude},
            {"image_noise", s.image_noise},
            {"caption_noise", s.caption_noise}};
}

WorldSpec world_spec_from_json(const nlohmann::json& j) {
    WorldSpec s;
    s.seed = j.at("seed").get<std::uint64_t>();
    s.concepts = j.at("concepts").get<int>();
    s.semantic_dim = j.at("semantic_dim").get<int>();
    s.style_dim = j.at("style_dim").get<int>();
    s.detail_dim = j.at("detail_dim").get<int>();
    s.geometry_dim = j.at("geometry_dim").get<int>();
    s.caption_detail_dims = j.at("caption_detail_dims").get<int>();
    s.image_dim = j.at("image_dim").get<int>();
    s.text_dim = j.at("text_dim").get<int>();
    s.render_hidden = j.at("render_hidden").get<int>();
    s.captions_per_image = j.at("captions_per_image").get<int>();
    s.concept_spread = j.at("concept_spread").get<double>();
    s.detail_amplitude = j.at("detail_amplitude").get<double>();
    s.image_noise = j.at("image_noise").get<double>();
    s.caption_noise = j.at("caption_noise").get<double>();
    return s;
}

void write_split(const fs::path& path, const Split& split) {
    SafetensorsWriter w;
    add_matrix(w, "images", split.images);
    add_matrix(w, "captions", split.captions);
    add_ints(w, "caption_image", split.caption_image);
    add_ints(w, "concept", split.scenes.concept_id);
    add_matrix(w, "semantic", split.scenes.semantic);
    add_matrix(w, "style", split.scenes.style);
    add_matrix(w, "detail", split.scenes.detail);
    add_matrix(w, "geometry", split.scenes.geometry);
    w.set_metadata("split", split.name);
    fs::create_directories(path.parent_path());
    w.write(path.string());
}

Split read_split(const fs::path& path, const std::string& name) {
    const auto f = SafetensorsFile::open(path.string());
    Split s;
    s.name = name;
    s.images = read_matrix(f, "images");
    s.captions = read_matrix(f, "captions");
    s.caption_image = read_ints(f, "caption_image");
    s.scenes.concept_id = read_ints(f, "concept");
    s.scenes.semantic = read_matrix(f, "semantic");
    s.scenes.style = read_matrix(f, "style");
    s.scenes.detail = read_matrix(f, "detail");
    s.scenes.geometry = read_matrix(f, "geometry");
    return s;
}

nlohmann::json read_world_file(const fs::path& world_dir) {
    return formats::read_json(world_dir / "world.json");
}

nlohmann::json encoder_spec_to_json(const EncoderSpec& s) {
    return {{"name", s.name},
            {"family", s.family},
            {"modality", modality_name(s.modality)},
            {"paradigm", paradigm_name(s.paradigm)},
            {"width", s.width},
            {"depth", s.depth},
            {"out_dim", s.out_dim},
            {"seed", s.seed},
            {"steps", s.steps},
            {"batch", s.batch},
            {"lr", s.lr},
            {"weight_decay", s.weight_decay}};
}

EncoderSpec encoder_spec_from_json(const nlohmann::json& j) {
    EncoderSpec s;
    s.name = j.at("name").get<std::string>();
    s.family = j.at("family").get<std::string>();
    s.modality = j.at("modality").get<std::string>() == "text" ? Modality::text : Modality::vision;
    s.paradigm = paradigm_from_name(j.at("paradigm").get<std::string>(), s.modality);
    s.width = j.at("width").get<int>();
    s.depth = j.at("depth").get<int>();
    s.out_dim = j.at("out_dim").get<int>();
    s.seed = j.at("seed").get<std::uint64_t>();
    s.steps = j.at("steps").get<int>();
    s.batch = j.at("batch").get<int>();
    s.lr = j.at("lr").get<double>();
    s.weight_decay = j.at("weight_decay").get<double>();
    return s;
}

void write_model(const fs::path& weights, const fs::path& sidecar_file, Encoder& encoder,
                 const nlohmann::json& sidecar, nn::Linear<float>* head) {
    SafetensorsWriter w;
    auto params = encoder.params();
    if (head) head->params("head.", params);
    for (const auto& p : params) {
        // Eigen stores column-major; write row-major (out x in) like torch.nn.Linear.
        if (p.shape.size() == 2) {
            const Eigen::Map<const Mat> m(p.value, static_cast<Eigen::Index>(p.shape[0]),
                                          static_cast<Eigen::Index>(p.shape[1]));
            add_matrix(w, p.name, m);
        } else {
            w.add_f32(p.name, p.shape, {p.value, static_cast<std::size_t>(p.size)});
        }
    }
    w.set_metadata("name", sidecar.value("name", ""));
    w.set_metadata("format", "compatbench");
    fs::create_directories(weights.parent_path());
    w.write(weights.string());
    formats::write_text_file(sidecar_file, sidecar.dump(2) + "\n");
}

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::vector<float> param_values(const nn::Param<float>& param) {
    std::vector<float> v(static_cast<std::size_t>(param.size));
    if (param.shape.size() == 2) {
        const auto r = static_cast<Eigen::Index>(param.shape[0]),
                   c = static_cast<Eigen::Index>(param.shape[1]);
        Eigen::Map<RowMajor>(v.data(), r, c) = Eigen::Map<const Mat>(param.value, r, c);
    } else {
        std::copy(param.value, param.value + param.size, v.begin());
    }
    return v;
}

void set_param_values(nn::Param<float>& param, std::span<const float> values) {
    if (values.size() != static_cast<std::size_t>(param.size))
        throw std::invalid_argument("parameter " + param.name + ": " +
                                    std::to_string(values.size()) + " values for " +
                                    std::to_string(param.size));
    if (param.shape.size() == 2) {
        const auto r = static_cast<Eigen::Index>(param.shape[0]),
                   c = static_cast<Eigen::Index>(param.shape[1]);
        Eigen::Map<Mat>(param.value, r, c) = Eigen::Map<const RowMajor>(values.data(), r, c);
    } else {
        std::copy(values.begin(), values.end(), param.value);
    }
}

Encoder read_model(const fs::path& weights, const fs::path& sidecar_file,
                   nlohmann::json* sidecar_out) {
    const nlohmann::json sidecar = formats::read_json(sidecar_file);
    Encoder enc(encoder_spec_from_json(sidecar.at("spec")), sidecar.at("input_dim").get<int>());
    const auto f = SafetensorsFile::open(weights.string());
    for (auto& p : enc.params()) {
        const auto& t = f.at(p.name);
        if (t.numel() != static_cast<std::uint64_t>(p.size)) {
            throw formats::FormatError(f.path() + ": tensor '" + p.name + "' has " +
                                       std::to_string(t.numel()) + " values, the model expects " +
                                       std::to_string(p.size));
        }
        if (p.shape.size() == 2) {
            Eigen::Map<Mat>(p.value, static_cast<Eigen::Index>(p.shape[0]),
                            static_cast<Eigen::Index>(p.shape[1])) = read_matrix(f, p.name);
        } else {
            f.read_f32(t, {p.value, static_cast<std::size_t>(p.size)});
        }
    }
    if (sidecar_out) *sidecar_out = sidecar;
    return enc;
}

Mat encoder_inputs(const Split& split, Modality modality, int captions_per_image) {
    if (modality == Modality::vision) return split.images;
    Mat first(split.images.rows(), split.captions.cols());
    for (Eigen::Index i = 0; i < first.rows(); ++i)
        first.row(i) = split.captions.row(i * captions_per_image);
    return first;
}

}  // namespace compatbench::zoo
