// Task kind `pair_similarity`: ease (mutual k-NN overlap, methods.md §1.1) at every k of the
// k-NN group, and linear CKA (§1.4), for one pair of models, from their k-NN artifacts.
// `pairs: vision_text` lists every vision x text pair of the k-NN group (the full grid the
// ceiling is computed over, §1.2). `null_draws: N` adds ease's permutation null at the first
// k (§1.1): ease_null (the mean over N seeded shuffles of the second model's rows),
// ease_null_sd and ease_excess = ease − ease_null.
//
//   - {name: align_grid, kind: pair_similarity, table: alignment/similarity, knn: align_knn,
//      null_draws: 100}
#include <optional>

#include "catalog/knn_artifact.h"
#include "kind/group_keys.h"

namespace compatbench {

namespace {
// The group's keys, parsed once (TaskKind::bind).
struct Settings final : KindSettings {
    std::string knn_group;  // the probe_knn group whose k-NN files the pairs read
    std::vector<int> ks;    // that group's k, ascending
    std::optional<int> null_draws;
};

class PairSimilarityTask final : public TaskKind {
  public:
    std::string_view name() const override { return "pair_similarity"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "knn", .type = KeyType::string, .required = true},
                {.name = "pairs", .type = KeyType::string, .choices = {"vision_text", "same_base"}},
                {.name = "null_draws", .type = KeyType::integer, .min = 2, .max = 100000}};
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group,
                                             const std::vector<TaskGroup>& earlier,
                                             const YamlChecker& yc) const override {
        auto s = std::make_shared<Settings>();
        const TaskGroup& knn = earlier_group(group, "knn", earlier, "probe_knn", yc);
        s->knn_group = knn.name;
        s->ks = ints_of(knn.listed.front().lists.at("k_list"));  // ascending, each once
        if (const Scalar* draws = Params(group.params).find("null_draws"))
            s->null_draws = static_cast<int>(draws->integer);
        return s;
    }
    std::vector<ColumnSpec> outputs(const TaskGroup& group, const YamlChecker&) const override {
        const Settings& s = settings_of<Settings>(group);
        std::vector<ColumnSpec> out = {{"ease", ColumnType::f64, 0}};
        for (int k : s.ks) out.push_back({"ease_k" + std::to_string(k), ColumnType::f64, 0});
        out.push_back({"cka", ColumnType::f64, 0});
        if (s.null_draws)
            for (const char* c : {"ease_null", "ease_null_sd", "ease_excess"})
                out.push_back({c, ColumnType::f64, 0});
        return out;
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        const TaskGroup& knn = earlier_group(group, "knn", earlier, "probe_knn", yc);
        if (group.params.count("pairs") && group.params.at("pairs").text == "same_base")
            return same_base_pairs(group, knn, yc);
        std::vector<const ListedTask*> vision, text;
        for (const auto& t : knn.listed)
            (t.key("modality").text == "text" ? text : vision).push_back(&t);
        if (vision.empty() || text.empty())
            yc.fail(
                group.node["knn"], "tasks." + group.name + ".knn",
                "group '" + knn.name + "' needs both vision and text models for vision_text pairs");
        std::vector<ListedTask> out;
        for (const ListedTask* v : vision) {
            for (const ListedTask* t : text) {
                ListedTask p;
                p.suffix = v->suffix + "+" + t->suffix;
                p.keys = {{"vision", v->key("name")},
                          {"text", t->key("name")},
                          {"vision_family", v->key("family")},
                          {"text_family", t->key("family")},
                          {"vision_paradigm", v->key("paradigm")},
                          {"text_paradigm", t->key("paradigm")}};
                p.params = v->params;  // catalog roots
                p.params["knn_group"] = Scalar::parse(knn.name);
                p.params["a_features_task"] = v->params.at("features_task");
                p.params["b_features_task"] = t->params.at("features_task");
                p.params["a_model"] = v->key("name");
                p.params["b_model"] = t->key("name");
                p.after = {knn.name + "/" + v->suffix, knn.name + "/" + t->suffix};
                out.push_back(std::move(p));
            }
        }
        return out;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const Settings& s = ctx.settings<Settings>();
        const auto a = similarity::read_knn_file(
            knn_artifact(ctx.out_dir, s.knn_group, ctx.params.at("a_model").text));
        const auto b = similarity::read_knn_file(
            knn_artifact(ctx.out_dir, s.knn_group, ctx.params.at("b_model").text));
        const auto& ks = s.ks;
        Row row;
        row.emplace_back(similarity::mutual_knn(a.lists, b.lists, ks.front()));
        for (int k : ks) row.emplace_back(similarity::mutual_knn(a.lists, b.lists, k));
        row.emplace_back(similarity::linear_cka(a.probe.cast<double>(), b.probe.cast<double>()));
        if (s.null_draws) {
            const auto null =
                similarity::mutual_knn_null(a.lists, b.lists, ks.front(), *s.null_draws, ctx.seed);
            const double ease = std::get<double>(row.front());
            row.insert(row.end(), {null.mean, null.sd, ease - null.mean});
        }
        return row;
    }

  private:
    // Every pair of fine-tunes of one backbone (the valid merges, methods.md §1.2).
    static std::vector<ListedTask> same_base_pairs(const TaskGroup& group, const TaskGroup& knn,
                                                   const YamlChecker& yc) {
        std::vector<ListedTask> out;
        for (std::size_t i = 0; i < knn.listed.size(); ++i) {
            const ListedTask& a = knn.listed[i];
            if (!a.params.count("base")) continue;
            for (std::size_t j = i + 1; j < knn.listed.size(); ++j) {
                const ListedTask& b = knn.listed[j];
                if (!b.params.count("base") || b.params.at("base").text != a.params.at("base").text)
                    continue;
                ListedTask p;
                p.suffix = a.params.at("base").text + "/" + a.params.at("task").text + "+" +
                           b.params.at("task").text;
                p.keys = {{"model_a", a.key("name")},        {"model_b", b.key("name")},
                          {"backbone", a.params.at("base")}, {"family", a.key("family")},
                          {"paradigm", a.key("paradigm")},   {"task_a", a.params.at("task")},
                          {"task_b", b.params.at("task")}};
                p.params = a.params;
                p.params.erase("task");
                p.params.erase("checkpoint");
                p.params["knn_group"] = Scalar::parse(knn.name);
                p.params["a_model"] = a.key("name");
                p.params["b_model"] = b.key("name");
                p.params["a_features_task"] = a.params.at("features_task");
                p.params["b_features_task"] = b.params.at("features_task");
                if (a.params.count("checkpoint"))
                    p.params["a_checkpoint"] = a.params.at("checkpoint");
                if (b.params.count("checkpoint"))
                    p.params["b_checkpoint"] = b.params.at("checkpoint");
                p.after = {knn.name + "/" + a.suffix, knn.name + "/" + b.suffix};
                out.push_back(std::move(p));
            }
        }
        if (out.empty())
            yc.fail(group.node["knn"], "tasks." + group.name + ".knn",
                    "group '" + knn.name + "' has no two fine-tunes of one backbone");
        return out;
    }
};
}  // namespace

const TaskKind& pair_similarity_task() {
    static const PairSimilarityTask kind;
    return kind;
}

}  // namespace compatbench
