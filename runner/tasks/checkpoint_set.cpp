// Task kind `checkpoint_set`: a user's backbones and their task fine-tunes as safetensors
// checkpoints (docs/bring-your-own.md), described by a manifest; one task per
// fine-tune checks that both checkpoints open, that every floating-point tensor of the base
// is in the fine-tune with the same shape, that two Hugging Face folders' config.json agree
// on the model's shape (layers, widths, heads, vocabulary), and that the fine-tune's probe
// features exist. Each fine-tune's relative norm ‖τ‖/‖θ0‖ over its matrices (methods.md §3.3;
// advise merge's, §3.4, also counts norms' weights) is recorded; one
// above 1 is named in a warning: a fine-tune moves far less, and a model trained apart from
// this base (its config alike) sits near √2.
//
//   - {name: real, kind: checkpoint_set, table: real/finetunes, manifest: models.yaml}
//
// The manifest (relative to the config file's folder; its paths relative to itself):
//   features: features     <features>/<fine-tune>/probe.safetensors ("features", rows x dim)
//   backbones:
//     - {name: llama_a, family: llama, paradigm: supervised, checkpoint: ckpt/llama_a}
//   finetunes:
//     - {name: llama_a+math, base: llama_a, task: math, checkpoint: ckpt/llama_a_math,
//        steps: 1000, checkpoints: {250: ckpt/math@250, 500: ckpt/math@500}}
// `steps` (the final checkpoint's training steps) and `checkpoints` (the same fine-tune saved
// earlier, by step) are optional; kway_merge's drift study (`checkpoints: true`) merges them.
// A checkpoint is a .safetensors file or a folder with model.safetensors or a sharded
// model.safetensors.index.json. A path written {out}/... lies in the run's output folder
// (checkpoints and features that `command` tasks of the same run write).
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "catalog/feature_catalog.h"
#include "catalog/manifest.h"
#include "formats/safetensors.h"
#include "kind/group_keys.h"

namespace compatbench {

namespace {

// A fine-tune's earlier checkpoints (`checkpoints: {step: path}`) as the lists kway_merge
// reads: checkpoint_steps (ascending) and step_checkpoints (their paths, resolved).
void read_saved(const YAML::Node& saved, const std::string& p, const Manifest& man, ListedTask& t) {
    std::map<int, std::string> by_step;
    for (const auto& kv : saved) {
        const std::string key = p + ".checkpoints." + kv.first.Scalar();
        const auto step = static_cast<int>(man.checker.as_int(kv.first, key));
        if (step < 1) man.checker.fail(kv.first, key, "a step count must be at least 1");
        if (t.params.count("steps") && step > t.params.at("steps").integer)
            man.checker.fail(kv.first, key, "beyond the fine-tune's 'steps'");
        if (by_step.count(step)) man.checker.fail(kv.first, key, "step given twice");
        by_step[step] = man.resolve(man.checker.as_string(kv.second, key));
    }
    std::vector<int> steps;
    std::vector<std::string> paths;
    for (const auto& [step, path] : by_step) {
        steps.push_back(step);
        paths.push_back(path);
    }
    t.lists["checkpoint_steps"] = list_of(steps);
    t.lists["step_checkpoints"] = list_of(paths);
}

// Every floating-point tensor of `base` is in `ft` with the same shape; returns the count
// of tensors and of parameters.
std::pair<std::int64_t, std::int64_t> check_against(const formats::Checkpoint& base,
                                                    const formats::Checkpoint& ft) {
    const auto ft_names = ft.names();
    std::int64_t tensors = 0, params = 0;
    for (const auto& name : base.names()) {
        const auto& t0 = base.info(name);
        if (!formats::dtype_is_float(t0.dtype)) continue;
        if (!std::binary_search(ft_names.begin(), ft_names.end(), name))
            throw formats::FormatError(ft.path() + ": no tensor '" + name + "' (the base " +
                                       base.path() + " has it)");
        if (ft.info(name).shape != t0.shape)
            throw formats::FormatError(ft.path() + ": tensor '" + name +
                                       "' differs in shape from the base " + base.path());
        ++tensors;
        params += static_cast<std::int64_t>(t0.numel());
    }
    return {tensors, params};
}

class CheckpointSetTask final : public TaskKind {
  public:
    std::string_view name() const override { return "checkpoint_set"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "manifest", .type = KeyType::string, .required = true}};
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return {{"tensors", ColumnType::i64, 0},
                {"params", ColumnType::i64, 0},
                {"probe_rows", ColumnType::i64, 0},
                {"relative_norm", ColumnType::f64, 0}};
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const TaskGroup& group, const std::vector<TaskGroup>&,
                                       const YamlChecker& yc) const override {
        const Manifest man =
            load_manifest(group, yc,
                          {{.name = "features", .type = KeyType::string},
                           {.name = "backbones", .type = KeyType::list, .required = true},
                           {.name = "finetunes", .type = KeyType::list, .required = true}});
        const YAML::Node& root = man.root;
        const YamlChecker& my = man.checker;
        const auto resolve = [&](const std::string& p) { return man.resolve(p); };
        struct Backbone {
            std::string family, paradigm, checkpoint;
        };
        std::map<std::string, Backbone> backbones;
        const YAML::Node bb = root["backbones"];
        for (std::size_t i = 0; i < bb.size(); ++i) {
            const std::string p = index_path("backbones", i);
            my.check_map(bb[i], p,
                         {{.name = "name", .type = KeyType::string, .required = true},
                          {.name = "family", .type = KeyType::string, .required = true},
                          {.name = "paradigm", .type = KeyType::string, .required = true},
                          {.name = "checkpoint", .type = KeyType::string, .required = true}});
            const std::string name = my.as_string(bb[i]["name"], p + ".name");
            if (backbones.count(name))
                my.fail(bb[i]["name"], p + ".name", "duplicate backbone '" + name + "'");
            backbones[name] = {my.as_string(bb[i]["family"], p + ".family"),
                               my.as_string(bb[i]["paradigm"], p + ".paradigm"),
                               resolve(my.as_string(bb[i]["checkpoint"], p + ".checkpoint"))};
        }
        const std::string features =
            resolve(root["features"] ? root["features"].Scalar() : std::string("features"));
        std::vector<ListedTask> out;
        const YAML::Node ft = root["finetunes"];
        for (std::size_t i = 0; i < ft.size(); ++i) {
            const std::string p = index_path("finetunes", i);
            my.check_map(ft[i], p,
                         {{.name = "name", .type = KeyType::string, .required = true},
                          {.name = "base", .type = KeyType::string, .required = true},
                          {.name = "task", .type = KeyType::string, .required = true},
                          {.name = "checkpoint", .type = KeyType::string, .required = true},
                          {.name = "steps", .type = KeyType::integer, .min = 1, .max = 1e12},
                          {.name = "checkpoints", .type = KeyType::map}});
            const std::string base = my.as_string(ft[i]["base"], p + ".base");
            const auto b = backbones.find(base);
            if (b == backbones.end())
                my.fail(ft[i]["base"], p + ".base", "no backbone named '" + base + "'");
            ListedTask t;
            t.suffix = my.as_string(ft[i]["name"], p + ".name");
            for (const auto& prev : out) {
                if (prev.suffix == t.suffix)
                    my.fail(ft[i]["name"], p + ".name", "duplicate fine-tune '" + t.suffix + "'");
            }
            t.keys = {{"name", Scalar::parse(t.suffix)},
                      {"modality", Scalar::parse("finetune")},
                      {"family", Scalar::parse(b->second.family)},
                      {"paradigm", Scalar::parse(b->second.paradigm)}};
            t.params["base"] = Scalar::parse(base);
            t.params["task"] = Scalar::parse(my.as_string(ft[i]["task"], p + ".task"));
            t.params["checkpoint"] =
                Scalar::parse(resolve(my.as_string(ft[i]["checkpoint"], p + ".checkpoint")));
            t.params["base_checkpoint"] = Scalar::parse(b->second.checkpoint);
            t.params["features_root"] = Scalar::parse(features);
            t.params["pairing_root"] = Scalar::parse(features);
            if (ft[i]["steps"])
                t.params["steps"] =
                    Scalar::parse(std::to_string(my.as_int(ft[i]["steps"], p + ".steps")));
            if (const YAML::Node saved = ft[i]["checkpoints"]) read_saved(saved, p, man, t);
            out.push_back(std::move(t));
        }
        return out;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const auto path = [&](const char* key) {
            return catalog_path(ctx.params.at(key).text, ctx.out_dir).string();
        };
        const auto base = formats::Checkpoint::open(path("base_checkpoint"));
        formats::check_same_config(path("base_checkpoint"), path("checkpoint"));
        const auto ft = formats::Checkpoint::open(path("checkpoint"));
        const auto [tensors, params] = check_against(base, ft);
        const double relative = formats::relative_norm(base, ft);
        if (relative > 1.0)
            spdlog::warn(
                "{}: fine-tune {} differs from its base {} by {:.2f}x the base's own norm; a "
                "fine-tune usually moves far less: is it a fine-tune of another base?",
                ctx.id, path("checkpoint"), path("base_checkpoint"), relative);
        if (ctx.lists.count("step_checkpoints"))
            for (const auto& p : ctx.texts("step_checkpoints")) {
                const std::string saved = catalog_path(p, ctx.out_dir).string();
                formats::check_same_config(path("base_checkpoint"), saved);
                check_against(base, formats::Checkpoint::open(saved));
            }
        const MatF probe = read_features(ctx, ctx.params.at("name").text, "probe");
        return {tensors, params, static_cast<std::int64_t>(probe.rows()), relative};
    }
};
}  // namespace

const TaskKind& checkpoint_set_task() {
    static const CheckpointSetTask kind;
    return kind;
}

}  // namespace compatbench
