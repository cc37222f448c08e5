// Task kind `zoo_finetune`: fine-tunes every backbone of a zoo_encoder group on each latent
// task (full fine-tuning, a head per task), one task per (backbone, task), writing the
// fine-tuned weights (with "head.*" tensors) and a /zoo/models row (modality "finetune").
//
//   - name: finetunes
//     kind: zoo_finetune
//     table: zoo/models
//     world: world
//     backbones: backbones            # a zoo_encoder group; its models of modality backbone
//     tasks: [concept_group, style_a] # default: all 8
//     steps: 200
//     lr: 0.0005
//     drift: {style_a: 4}             # multiplies the steps of a task's specialists
//     variant: long                   # names "<backbone>+<task>-long" (a second set of
//                                     # fine-tunes beside the first)
//     checkpoints: [50, 100, 200]     # also writes "<name>.step<N>" along the way (the
//                                     # PRISM drift study reads these)
#include "catalog/zoo_common.h"
#include "kind/group_keys.h"

namespace compatbench {

namespace {
// The group's keys, parsed once (TaskKind::bind).
struct Settings final : KindSettings {
    zoo::FinetuneSpec spec;               // steps, lr, batch and the checkpoint steps
    std::map<std::string, double> drift;  // a task's steps multiplier (1 when not given)
};

class ZooFinetuneTask final : public TaskKind {
  public:
    std::string_view name() const override { return "zoo_finetune"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "world", .type = KeyType::string, .required = true},
                {.name = "backbones", .type = KeyType::string, .required = true},
                {.name = "tasks", .type = KeyType::list},
                {.name = "steps", .type = KeyType::integer, .min = 1, .max = 1e8},
                {.name = "lr", .type = KeyType::real, .min = 0, .max = 10},
                {.name = "batch", .type = KeyType::integer, .min = 2, .max = 1e6},
                {.name = "drift", .type = KeyType::map},
                {.name = "variant", .type = KeyType::string},
                {.name = "checkpoints", .type = KeyType::list}};
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group, const std::vector<TaskGroup>&,
                                             const YamlChecker& yc) const override {
        auto s = std::make_shared<Settings>();
        const Params keys(group.params);
        s->spec.steps = static_cast<int>(keys.integer("steps", s->spec.steps));
        s->spec.lr = keys.real("lr", s->spec.lr);
        s->spec.batch = static_cast<int>(keys.integer("batch", s->spec.batch));
        s->spec.checkpoints = int_list_key(group, "checkpoints", yc, {}, 1, 100000000);
        const std::string base = "tasks." + group.name;
        if (const YAML::Node d = group.node["drift"]) {
            for (const auto& e : d) {
                const std::string t = e.first.Scalar();
                const double drift = yc.as_real(e.second, base + ".drift." + t);
                if (drift <= 0) yc.fail(e.second, base + ".drift." + t, "must be positive");
                s->drift[t] = drift;
            }
        }
        return s;
    }
    std::vector<ColumnSpec> outputs(const TaskGroup&, const YamlChecker&) const override {
        return zoo_model_columns();
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        const TaskGroup& world = zoo_world_group(group, earlier, yc);
        const std::string base = "tasks." + group.name;
        const std::string backbones = group.node["backbones"].Scalar();
        const TaskGroup* source = nullptr;
        for (const auto& g : earlier) {
            if (g.name == backbones && g.kind->name() == "zoo_encoder") source = &g;
        }
        if (!source)
            yc.fail(group.node["backbones"], base + ".backbones",
                    "no earlier zoo_encoder group named '" + backbones + "'");
        const auto all = zoo::latent_tasks(zoo::WorldSpec{});
        std::vector<std::string> tasks;
        if (const YAML::Node list = group.node["tasks"]) {
            for (std::size_t i = 0; i < list.size(); ++i) {
                const std::string t = yc.as_string(list[i], index_path(base + ".tasks", i));
                try {
                    zoo::find_latent_task(all, t);
                } catch (const std::invalid_argument& e) {
                    yc.fail(list[i], index_path(base + ".tasks", i), e.what());
                }
                tasks.push_back(t);
            }
        } else {
            for (const auto& t : all) tasks.push_back(t.name);
        }
        const Settings& s = settings_of<Settings>(group);
        if (const YAML::Node d = group.node["drift"])
            for (const auto& e : d)
                if (std::find(tasks.begin(), tasks.end(), e.first.Scalar()) == tasks.end())
                    yc.fail(e.first, base + ".drift." + e.first.Scalar(),
                            "'" + e.first.Scalar() + "' is not one of this entry's tasks");
        const std::vector<int>& checkpoints = s.spec.checkpoints;
        const std::string variant =
            group.params.count("variant") ? "-" + group.params.at("variant").text : "";
        std::vector<ListedTask> out;
        for (const auto& model : source->listed) {
            if (model.params.at("modality_label").text != "backbone") continue;
            const std::string name = model.key("name").text;
            for (const auto& t : tasks) {
                ListedTask lt;
                lt.suffix = name + "+" + t + variant;
                if (!checkpoints.empty())  // read by kway_merge groups
                    lt.lists["checkpoint_steps"] = list_of(checkpoints);
                lt.keys = {{"name", Scalar::parse(lt.suffix)}};
                lt.params["base"] = Scalar::parse(name);
                lt.params["task"] = Scalar::parse(t);
                lt.params["world_group"] = Scalar::parse(world.name);
                lt.after = {source->name + "/" + name};
                out.push_back(std::move(lt));
            }
        }
        if (out.empty())
            yc.fail(group.node["backbones"], base + ".backbones",
                    "group '" + backbones + "' has no model of modality backbone");
        return out;
    }

    std::vector<fs::path> artifacts(const TaskContext& ctx) const override {
        const ZooPaths paths{ctx.out_dir};
        std::vector<std::string> names = {ctx.params.at("name").text};
        for (int step : ctx.settings<Settings>().spec.checkpoints) {
            std::string checkpoint = names.front() + ".step";
            checkpoint += std::to_string(step);
            names.push_back(std::move(checkpoint));
        }
        std::vector<fs::path> files;
        for (const auto& name : names) {
            files.push_back(paths.model(name));
            files.push_back(paths.sidecar(name));
        }
        return files;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const ZooPaths paths{ctx.out_dir};
        const ZooWorld zw = load_zoo_world(ctx);
        const zoo::World& world = zw.world;
        const zoo::Split train = zw.split("train"), probe = zw.split("probe"),
                         flickr = zw.split("flickr");
        nlohmann::json base_sidecar;
        zoo::Encoder base = read_model(paths, ctx.params.at("base").text, &base_sidecar);
        const auto tasks = zoo::latent_tasks(world.spec());
        const zoo::LatentTask& task = zoo::find_latent_task(tasks, ctx.params.at("task").text);
        const Settings& settings = ctx.settings<Settings>();
        zoo::FinetuneSpec spec = settings.spec;
        spec.task = task.name;
        const auto drift = settings.drift.find(task.name);
        spec.drift = drift == settings.drift.end() ? 1.0 : drift->second;
        spec.seed = base.spec().seed;
        const std::string name = ctx.params.at("name").text;
        const int total = std::max(1, static_cast<int>(std::lround(spec.steps * spec.drift)));
        for (int step : spec.checkpoints)
            if (step > total)
                throw std::invalid_argument("checkpoint at step " + std::to_string(step) +
                                            " is past the fine-tune's " + std::to_string(total) +
                                            " steps");
        const auto sidecar_of = [&](const std::string& model_name, int steps) {
            nlohmann::json model_spec = base_sidecar.at("spec");
            model_spec["name"] = model_name;
            return nlohmann::json{
                {"name", model_name},
                {"modality", "finetune"},
                {"family", base.spec().family},
                {"paradigm", zoo::paradigm_name(base.spec().paradigm)},
                {"spec", model_spec},
                {"seed", base.spec().seed},
                {"input_dim", base.input_dim()},
                {"base", ctx.params.at("base").text},
                {"task", task.name},
                {"classes", task.classes},
                {"finetune", {{"steps", steps}, {"lr", spec.lr}, {"drift", spec.drift}}}};
        };
        // Checkpoints along the way: the model in training at that step, with its head.
        const zoo::CheckpointFn checkpoint = [&](int step, zoo::FineTuned& at) {
            std::string cname = name + ".step";
            cname += std::to_string(step);
            nlohmann::json side = sidecar_of(cname, step);
            side["checkpoint_of"] = name;
            side["task_accuracy_flickr"] =
                zoo::task_accuracy(at.encoder, at.head, task, flickr, world.spec());
            write_model(paths, at.encoder, side, &at.head);
        };
        zoo::FineTuned ft = cancellable(ctx, [&] {
            return zoo::finetune(base, task, spec, world, train, &ctx.cancel, checkpoint);
        });
        const double task_acc = zoo::task_accuracy(ft.encoder, ft.head, task, flickr, world.spec());
        nlohmann::json sidecar = sidecar_of(name, ft.summary.steps);
        sidecar["task_accuracy_flickr"] = task_acc;
        sidecar["training"] = {{"first_loss", ft.summary.first_loss},
                               {"final_loss", ft.summary.final_loss},
                               {"steps", ft.summary.steps}};
        write_model(paths, ft.encoder, sidecar, &ft.head);
        return zoo_model_row(ft.encoder, "finetune", ft.summary, train, probe,
                             world.spec().captions_per_image);
    }
};
}  // namespace

const TaskKind& zoo_finetune_task() {
    static const ZooFinetuneTask kind;
    return kind;
}

}  // namespace compatbench
