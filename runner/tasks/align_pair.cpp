// Task kind `align_pair`: the ground truth of the alignment study for one vision x text pair:
// an adapter fitted on the train split (CSA, methods.md §2.1, or the trained linear adapter,
// §2.2) and image->text Recall@k on each eval split (§2.3).
//
// The pairs: an explicit list (`pairs: [[vision, text], ...]`), or `select: N` pairs of the
// similarity grid chosen to cover every vision and text family (compass::select_covering),
// or `select: N` of another align_pair group's pairs (`select_from`). A linear adapter runs
// once per entry of `epochs` (the budget study).
//
//   - {name: align_pairs, kind: align_pair, table: alignment/fits, similarity: align_grid,
//      select: 72, adapter: csa, eval: [flickr, coco], recall_k: [1, 5, 10]}
#include "alignment/alignment.h"
#include "catalog/feature_catalog.h"
#include "common/hash.h"
#include "compass/compass.h"
#include "kind/group_keys.h"

namespace compatbench {

namespace {

const std::vector<std::string> kPairKeys = {
    "vision", "text", "vision_family", "text_family", "vision_paradigm", "text_paradigm"};

// r<k>_<split>, e.g. r1_flickr.
std::string recall_column(int k, const std::string& split) {
    std::string name = "r";
    name += std::to_string(k);
    name += '_';
    name += split;
    return name;
}

// The pair_similarity group named by `similarity`, which must list vision-text pairs.
const TaskGroup& vision_text_grid(const TaskGroup& group, const std::vector<TaskGroup>& earlier,
                                  const YamlChecker& yc) {
    const TaskGroup& grid = earlier_group(group, "similarity", earlier, "pair_similarity", yc);
    if (grid.listed.empty() || grid.listed.front().keys.front().first != "vision")
        yc.fail(group.node["similarity"], "tasks." + group.name + ".similarity",
                "group '" + grid.name + "' does not list vision-text pairs (pairs: vision_text)");
    return grid;
}

// The group's keys, parsed once (TaskKind::bind).
struct Settings final : KindSettings {
    bool linear = false;                     // adapter: linear (else CSA)
    std::vector<int> epochs;                 // a linear adapter's budgets (one task each)
    alignment::LinearAdapterParams adapter;  // dim, batch, lr, temperature
    int csa_dim = 200;
    std::string train_split;
    std::vector<std::string> evals;
    std::vector<int> recall_k;
};

class AlignPairTask final : public TaskKind {
  public:
    std::string_view name() const override { return "align_pair"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "similarity", .type = KeyType::string, .required = true},
                {.name = "select", .type = KeyType::integer, .min = 1, .max = 1e9},
                {.name = "select_from", .type = KeyType::string},
                {.name = "selection_seed", .type = KeyType::integer, .min = 0, .max = 9e18},
                {.name = "pairs", .type = KeyType::list},
                {.name = "adapter", .type = KeyType::string, .choices = {"csa", "linear"}},
                {.name = "dim", .type = KeyType::integer, .min = 1, .max = 1e6},
                {.name = "epochs", .type = KeyType::scalar_or_list},
                {.name = "batch", .type = KeyType::integer, .min = 2, .max = 1e7},
                {.name = "lr", .type = KeyType::real, .min = 1e-12, .max = 10},
                {.name = "temperature", .type = KeyType::real, .min = 1e-6, .max = 100},
                {.name = "train_split", .type = KeyType::string},
                {.name = "eval", .type = KeyType::scalar_or_list},
                {.name = "recall_k", .type = KeyType::scalar_or_list}};
    }
    std::shared_ptr<const KindSettings> bind(const TaskGroup& group, const std::vector<TaskGroup>&,
                                             const YamlChecker& yc) const override {
        auto s = std::make_shared<Settings>();
        const Params keys(group.params);
        s->linear = keys.text("adapter", "csa") == "linear";
        s->epochs =
            s->linear ? int_list_key(group, "epochs", yc, {10}, 0, 1000000) : std::vector<int>{0};
        s->adapter.dim = static_cast<int>(keys.integer("dim", 64));
        s->adapter.batch = static_cast<int>(keys.integer("batch", 256));
        s->adapter.lr = keys.real("lr", 1e-3);
        s->adapter.temperature = keys.real("temperature", 0.05);
        s->csa_dim = static_cast<int>(keys.integer("dim", 200));
        s->train_split = keys.text("train_split", "train");
        s->evals = string_list_key(group, "eval", yc, {"flickr", "coco"});
        s->recall_k = int_list_key(group, "recall_k", yc, {1, 5, 10}, 1, 1000000);
        return s;
    }
    std::vector<ColumnSpec> outputs(const TaskGroup& group, const YamlChecker&) const override {
        const Settings& s = settings_of<Settings>(group);
        std::vector<ColumnSpec> out;
        for (const auto& e : s.evals)
            for (int k : s.recall_k) out.push_back({recall_column(k, e), ColumnType::f64, 0});
        out.push_back({"dim", ColumnType::i64, 0});
        out.push_back({"train_pairs", ColumnType::i64, 0});
        out.push_back({"fit_loss", ColumnType::f64, 0});
        return out;
    }
    bool lists_tasks() const override { return true; }

    std::vector<ListedTask> list_tasks(const TaskGroup& group,
                                       const std::vector<TaskGroup>& earlier,
                                       const YamlChecker& yc) const override {
        const std::string base = "tasks." + group.name;
        const TaskGroup& grid = vision_text_grid(group, earlier, yc);
        // Candidates: the grid, or the pairs of another align_pair group.
        std::vector<const ListedTask*> cands;
        for (const auto& t : grid.listed) cands.push_back(&t);
        if (group.node["select_from"]) {
            const TaskGroup& from = earlier_group(group, "select_from", earlier, "align_pair", yc);
            std::vector<const ListedTask*> sub;
            for (const ListedTask* c : cands) {
                for (const auto& t : from.listed)
                    if (t.key("vision").text == c->key("vision").text &&
                        t.key("text").text == c->key("text").text) {
                        sub.push_back(c);
                        break;
                    }
            }
            cands = std::move(sub);
        }
        std::vector<const ListedTask*> chosen;
        if (const YAML::Node pairs = group.node["pairs"]) {
            if (group.node["select"])
                yc.fail(group.node["select"], base + ".select", "give either 'pairs' or 'select'");
            for (std::size_t i = 0; i < pairs.size(); ++i) {
                const std::string p = index_path(base + ".pairs", i);
                if (!pairs[i].IsSequence() || pairs[i].size() != 2)
                    yc.fail(pairs[i], p, "expected [vision, text]");
                const std::string v = yc.as_string(pairs[i][0], p),
                                  t = yc.as_string(pairs[i][1], p);
                const ListedTask* hit = nullptr;
                for (const ListedTask* c : cands)
                    if (c->key("vision").text == v && c->key("text").text == t) hit = c;
                if (!hit)
                    yc.fail(pairs[i], p,
                            "no pair " + v + "+" + t + " in group '" + grid.name + "'");
                chosen.push_back(hit);
            }
        } else if (group.node["select"]) {
            const auto count = static_cast<std::size_t>(group.params.at("select").integer);
            std::vector<compass::Candidate> cs;
            for (const ListedTask* c : cands)
                cs.push_back({c->suffix, c->key("vision_family").text, c->key("text_family").text});
            const std::uint64_t seed =
                fnv1a64(group.name) ^
                static_cast<std::uint64_t>(group.params.count("selection_seed")
                                               ? group.params.at("selection_seed").integer
                                               : 1);
            for (std::size_t i : compass::select_covering(cs, count, seed))
                chosen.push_back(cands[i]);
        } else {
            chosen = cands;
        }
        const Settings& s = settings_of<Settings>(group);
        const bool linear = s.linear;
        std::vector<ListedTask> out;
        for (const ListedTask* c : chosen) {
            for (int e : s.epochs) {
                ListedTask t;
                t.suffix = c->suffix;
                if (linear) t.suffix += '@' + std::to_string(e);
                t.keys = c->keys;
                if (linear) t.keys.emplace_back("epochs", Scalar::parse(std::to_string(e)));
                t.params = c->params;
                t.params["epochs_run"] = Scalar::parse(std::to_string(e));
                // The pair's grid task too: a pair whose ease and ceiling could not be
                // computed is not fitted either (it is skipped, and says why).
                t.after = {c->params.at("a_features_task").text,
                           c->params.at("b_features_task").text, grid.name + "/" + c->suffix};
                out.push_back(std::move(t));
            }
        }
        return out;
    }

  protected:
    Row run_(const TaskContext& ctx) const override {
        const Settings& s = ctx.settings<Settings>();
        const std::string vision = ctx.params.at("vision").text, text = ctx.params.at("text").text;
        const std::string& train = s.train_split;
        const bool linear = s.linear;
        const auto train_owner = read_caption_image(ctx, train);
        const MatF tv = read_features(ctx, vision, train);
        const MatF tt = read_features(ctx, text, train);
        check_rows(tv, tt, train_owner, vision, text, train);
        alignment::CsaModel csa;
        alignment::LinearAdapterModel lin;
        Row row;
        std::int64_t dim = 0;
        double fit_loss = std::numeric_limits<double>::quiet_NaN();
        if (linear) {
            alignment::LinearAdapterParams p = s.adapter;
            p.epochs = static_cast<int>(ctx.params.at("epochs_run").integer);
            p.seed = ctx.seed;
            lin = alignment::fit_linear_adapter(tv, tt, train_owner, p);
            dim = p.dim;
            fit_loss = lin.final_loss;
        } else {
            // Every caption with its image (§2.1: paired rows).
            const MatF v = tv(train_owner, Eigen::all);
            csa = alignment::fit_csa(v, tt, {.dim = s.csa_dim});
            dim = csa.rho.size();
        }
        if (ctx.cancel.load()) throw TaskCancelled{};
        const auto& ks = s.recall_k;
        for (const auto& e : s.evals) {
            const auto owner = read_caption_image(ctx, e);
            const MatF ev = read_features(ctx, vision, e);
            const MatF et = read_features(ctx, text, e);
            check_rows(ev, et, owner, vision, text, e);
            const auto sim = linear ? alignment::linear_adapter_similarity(lin, ev, et)
                                    : alignment::csa_similarity(csa, ev, et);
            for (double r : alignment::recall_at_k(sim, owner, ks)) row.emplace_back(r);
        }
        row.emplace_back(dim);
        row.emplace_back(static_cast<std::int64_t>(tt.rows()));
        row.emplace_back(fit_loss);
        return row;
    }

  private:
    static void check_rows(const MatF& v, const MatF& t, const std::vector<int>& owner,
                           const std::string& vision, const std::string& text,
                           const std::string& split) {
        if (t.rows() != static_cast<Eigen::Index>(owner.size()))
            throw std::invalid_argument("split '" + split + "': text model '" + text + "' has " +
                                        std::to_string(t.rows()) + " feature rows for " +
                                        std::to_string(owner.size()) + " captions");
        for (int i : owner)
            if (i >= v.rows())
                throw std::invalid_argument("split '" + split + "': a caption names image " +
                                            std::to_string(i) + " but vision model '" + vision +
                                            "' has " + std::to_string(v.rows()) + " rows");
    }
};
}  // namespace

const TaskKind& align_pair_task() {
    static const AlignPairTask kind;
    return kind;
}

}  // namespace compatbench
