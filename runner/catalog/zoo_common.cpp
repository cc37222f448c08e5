#include "catalog/zoo_common.h"

#include "formats/matrix.h"
#include "formats/safetensors.h"

namespace compatbench {

zoo::Split ZooWorld::split(const std::string& name) const {
    return zoo::read_split(dir / (name + ".safetensors"), name);
}

ZooWorld load_zoo_world(const TaskContext& ctx) {
    const fs::path dir = ZooPaths{ctx.out_dir}.world_dir(ctx.params.at("world_group").text);
    nlohmann::json file = zoo::read_world_file(dir);
    zoo::World world(zoo::world_spec_from_json(file.at("world")));
    return {dir, std::move(file), std::move(world)};
}

std::vector<ColumnSpec> zoo_model_columns() {
    return {{"modality", ColumnType::str, 16},  {"family", ColumnType::str, 48},
            {"paradigm", ColumnType::str, 16},  {"params", ColumnType::i64, 0},
            {"train_loss", ColumnType::f64, 0}, {"probe_acc", ColumnType::f64, 0}};
}

const TaskGroup& zoo_world_group(const TaskGroup& group, const std::vector<TaskGroup>& earlier,
                                 const YamlChecker& checker) {
    const YAML::Node w = group.node["world"];
    const std::string path = "tasks." + group.name + ".world";
    if (!w) checker.fail(group.node, path, "missing required key 'world' (the zoo_world group)");
    const std::string name = checker.as_string(w, path);
    for (const auto& g : earlier) {
        if (g.name == name && g.kind->name() == "zoo_world") return g;
    }
    checker.fail(w, path, "no earlier zoo_world task group named '" + name + "'");
}

Row zoo_model_row(zoo::Encoder& encoder, const std::string& modality_label,
                  const zoo::TrainSummary& summary, const zoo::Split& train,
                  const zoo::Split& probe, int captions_per_image) {
    const zoo::Modality m = encoder.spec().modality;
    const Eigen::Index fit_rows = std::min<Eigen::Index>(train.images.rows(), 4096);
    const zoo::Mat fit =
        encoder.encode(zoo::encoder_inputs(train, m, captions_per_image).topRows(fit_rows));
    const zoo::Mat test = encoder.encode(zoo::encoder_inputs(probe, m, captions_per_image));
    const std::vector<int> fit_y(train.scenes.concept_id.begin(),
                                 train.scenes.concept_id.begin() + fit_rows);
    int classes = 0;
    for (int c : train.scenes.concept_id) classes = std::max(classes, c + 1);
    for (int c : probe.scenes.concept_id) classes = std::max(classes, c + 1);
    const double acc =
        zoo::linear_probe_accuracy(fit, fit_y, test, probe.scenes.concept_id, classes);
    return {modality_label,
            encoder.spec().family,
            std::string(zoo::paradigm_name(encoder.spec().paradigm)),
            static_cast<std::int64_t>(encoder.parameter_count()),
            summary.final_loss,
            acc};
}

nn::Linear<float> read_head(const fs::path& path) {
    const auto f = formats::SafetensorsFile::open(path.string());
    const auto& w = f.at("head.weight");
    if (w.shape.size() != 2)
        throw formats::FormatError(path.string() + ": head.weight must be 2-D");
    nn::Random rng(0);
    nn::Linear<float> head(static_cast<int>(w.shape[1]), static_cast<int>(w.shape[0]), rng);
    head.weight() = formats::read_matrix(f, w);
    const auto bv = f.read_f32(f.at("head.bias"));
    head.bias() =
        Eigen::Map<const Eigen::VectorXf>(bv.data(), static_cast<Eigen::Index>(bv.size()));
    return head;
}

}  // namespace compatbench
