#include "analyses/inference.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/hash.h"
#include "compass/screening.h"
#include "stats/correlation.h"
#include "stats/fit.h"
#include "stats/summary.h"

namespace compatbench {

namespace {

const std::vector<std::string> kStatistics = {"pearson", "spearman", "kendall",
                                              "auroc",   "mean",     "mean_difference"};

std::vector<std::string> names_in(const YAML::Node& n, const std::string& path,
                                  const YamlChecker& checker) {
    std::vector<std::string> out;
    if (n.IsScalar()) return {n.Scalar()};
    if (!n.IsSequence() || n.size() == 0)
        checker.fail(n, path, "expected a column name or a list of column names");
    for (std::size_t i = 0; i < n.size(); ++i)
        out.push_back(checker.as_string(n[i], index_path(path, i)));
    return out;
}

void need_column(const std::vector<std::string>& columns, const std::string& name,
                 const YAML::Node& where, const std::string& path, const YamlChecker& checker) {
    if (std::find(columns.begin(), columns.end(), name) != columns.end()) return;
    std::string known;
    for (const auto& c : columns) known += (known.empty() ? "" : ", ") + c;
    checker.fail(where, path, "no column '" + name + "' in the analysed rows (" + known + ")");
}

ClusterFactorSpec parse_factor(const YAML::Node& e, const std::string& path,
                               const std::vector<std::string>& columns,
                               const std::vector<ClusterFactorSpec>& before,
                               const YamlChecker& checker) {
    ClusterFactorSpec f;
    if (e.IsMap()) {
        checker.check_map(e, path,
                          {{.name = "columns", .type = KeyType::scalar_or_list, .required = true},
                           {.name = "within", .type = KeyType::string},
                           {.name = "split", .type = KeyType::string}});
        f.columns = names_in(e["columns"], join_path(path, "columns"), checker);
        if (e["within"]) f.within = e["within"].Scalar();
        if (e["split"]) f.split = e["split"].Scalar();
        if (e["split"] && f.split.empty()) checker.fail(e["split"], path + ".split", "empty");
    } else {
        f.columns = names_in(e, path, checker);
    }
    for (const auto& c : f.columns) need_column(columns, c, e, path, checker);
    if (f.within.empty()) return f;
    const bool parent = std::any_of(before.begin(), before.end(), [&](const ClusterFactorSpec& b) {
        return b.columns == std::vector<std::string>{f.within} && b.split.empty();
    });
    if (!parent)
        checker.fail(e["within"], path + ".within",
                     "'" + f.within + "' must be a one-column cluster listed before this one");
    return f;
}

stats::Band parse_band(const YAML::Node& c, const std::string& path, const YamlChecker& checker) {
    const int given = (c["band"] ? 1 : 0) + (c["at_least"] ? 1 : 0) + (c["at_most"] ? 1 : 0);
    if (given != 1)
        checker.fail(c, path + ".band",
                     given == 0 ? "a claim needs its band, fixed before the run: band: [lo, hi], "
                                  "at_least: v or at_most: v"
                                : "give one of band, at_least and at_most");
    stats::Band b;
    if (c["at_least"]) b.lo = checker.as_real(c["at_least"], path + ".at_least");
    if (c["at_most"]) b.hi = checker.as_real(c["at_most"], path + ".at_most");
    if (const YAML::Node band = c["band"]) {
        if (!band.IsSequence() || band.size() != 2)
            checker.fail(band, path + ".band", "expected [lo, hi]");
        b.lo = checker.as_real(band[0], path + ".band[0]");
        b.hi = checker.as_real(band[1], path + ".band[1]");
        if (!(b.lo <= b.hi)) checker.fail(band, path + ".band", "lo is above hi");
    }
    return b;
}

ClaimSpec parse_claim(const YAML::Node& c, const std::string& path,
                      const std::vector<std::string>& columns, const YamlChecker& checker) {
    checker.check_map(
        c, path,
        {{.name = "name", .type = KeyType::string, .required = true},
         {.name = "statistic", .type = KeyType::string, .required = true, .choices = kStatistics},
         {.name = "x", .type = KeyType::string, .required = true},
         {.name = "y", .type = KeyType::string},
         {.name = "baseline", .type = KeyType::string},
         {.name = "where", .type = KeyType::map},
         {.name = "paper", .type = KeyType::string, .required = true},
         {.name = "band", .type = KeyType::list},
         {.name = "at_least", .type = KeyType::real},
         {.name = "at_most", .type = KeyType::real}});
    ClaimSpec k;
    k.name = c["name"].Scalar();
    k.statistic = c["statistic"].Scalar();
    k.x = c["x"].Scalar();
    k.paper = c["paper"].Scalar();
    k.band = parse_band(c, path, checker);
    need_column(columns, k.x, c["x"], path + ".x", checker);
    if (k.statistic != "mean") {
        if (!c["y"]) checker.fail(c, path + ".y", "statistic " + k.statistic + " needs y");
        k.y = c["y"].Scalar();
        need_column(columns, k.y, c["y"], path + ".y", checker);
    }
    if (c["baseline"]) {
        k.baseline = c["baseline"].Scalar();
        need_column(columns, k.baseline, c["baseline"], path + ".baseline", checker);
    }
    if (const YAML::Node w = c["where"])
        for (const auto& e : w) {
            need_column(columns, e.first.Scalar(), e.first, path + ".where", checker);
            k.where.emplace_back(e.first.Scalar(), e.second.Scalar());
        }
    return k;
}

}  // namespace

std::vector<KeyRule> inference_keys() {
    return {{.name = "clusters", .type = KeyType::any},
            {.name = "draws", .type = KeyType::integer, .min = 1, .max = 1e6},
            {.name = "claims", .type = KeyType::list},
            {.name = "baselines", .type = KeyType::map}};
}

InferenceSettings inference_settings(const AnalysisSpec& spec,
                                     const std::vector<std::string>& columns,
                                     const YamlChecker& checker,
                                     std::vector<ClusterFactorSpec> default_clusters) {
    const std::string at = "analyses." + spec.name;
    InferenceSettings s;
    s.seed = fnv1a64("bootstrap/" + spec.name);
    if (spec.node["draws"]) s.draws = static_cast<std::size_t>(spec.node["draws"].as<int>());
    if (const YAML::Node c = spec.node["clusters"]) {
        const std::string path = at + ".clusters";
        if (!c.IsSequence() || c.size() == 0)
            checker.fail(c, path, "expected a list of cluster columns");
        for (std::size_t i = 0; i < c.size(); ++i)
            s.clusters.push_back(
                parse_factor(c[i], index_path(path, i), columns, s.clusters, checker));
    } else {
        s.clusters = std::move(default_clusters);
    }
    if (const YAML::Node claims = spec.node["claims"]) {
        if (s.clusters.empty())
            checker.fail(claims, at + ".clusters",
                         "claims are judged on clustered intervals: name the models the rows "
                         "share (clusters: [...])");
        std::set<std::string> names;
        for (std::size_t i = 0; i < claims.size(); ++i) {
            s.claims.push_back(
                parse_claim(claims[i], index_path(at + ".claims", i), columns, checker));
            if (!names.insert(s.claims.back().name).second)
                checker.fail(claims[i], index_path(at + ".claims", i) + ".name",
                             "duplicate claim name '" + s.claims.back().name + "'");
        }
    }
    if (const YAML::Node b = spec.node["baselines"])
        for (const auto& e : b) {
            const std::string path = at + ".baselines." + e.first.Scalar();
            need_column(columns, e.first.Scalar(), e.first, path, checker);
            auto names = names_in(e.second, path, checker);
            for (const auto& n : names) need_column(columns, n, e.second, path, checker);
            s.baselines.emplace_back(e.first.Scalar(), std::move(names));
        }
    return s;
}

std::vector<std::string> split_list(const std::string& value, const std::string& split) {
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
        const std::size_t next = split.empty() ? std::string::npos : value.find(split, at);
        parts.push_back(
            value.substr(at, next == std::string::npos ? std::string::npos : next - at));
        if (next == std::string::npos) return parts;
        at = next + split.size();
    }
}

std::vector<ClusterColumn> cluster_columns(const AnalysisSpec& spec) {
    std::vector<ClusterColumn> out;
    const YAML::Node c = spec.node["clusters"];
    if (!c || !c.IsSequence()) return out;
    for (std::size_t i = 0; i < c.size(); ++i) {
        const std::string path = index_path("analyses." + spec.name + ".clusters", i);
        const YAML::Node e = c[i];
        const YAML::Node cols = e.IsMap() ? e["columns"] : e;
        const std::string split = e.IsMap() && e["split"] ? e["split"].Scalar() : "";
        if (cols.IsScalar()) out.push_back({path, cols.Scalar(), split});
        for (std::size_t j = 0; cols.IsSequence() && j < cols.size(); ++j)
            out.push_back({path, cols[j].Scalar(), split});
    }
    return out;
}

TableData table_of(const AnalysisInput& in) {
    TableData t = TableData::make(in.group.table, in.columns);
    for (const Row* row : in.rows) t.add_row(*row);
    return t;
}

std::vector<std::string> column_names(const std::vector<ColumnSpec>& columns) {
    std::vector<std::string> out;
    for (const auto& c : columns) out.push_back(c.name);
    return out;
}

std::vector<double> Frame::numbers(const std::string& column) const {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
        if (table.columns[c].name != column) continue;
        std::vector<double> out;
        for (const Value& v : table.values[c]) {
            if (const auto* d = std::get_if<double>(&v))
                out.push_back(*d);
            else if (const auto* i = std::get_if<std::int64_t>(&v))
                out.push_back(static_cast<double>(*i));
            else if (const auto* u = std::get_if<std::uint64_t>(&v))
                out.push_back(static_cast<double>(*u));
            else
                throw std::invalid_argument("column '" + column + "' is not numeric");
        }
        return out;
    }
    throw std::invalid_argument("no column '" + column + "' in " + table.path);
}

std::vector<std::string> Frame::texts(const std::string& column) const {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
        if (table.columns[c].name != column) continue;
        std::vector<std::string> out;
        for (const Value& v : table.values[c]) out.push_back(value_to_string(v));
        return out;
    }
    throw std::invalid_argument("no column '" + column + "' in " + table.path);
}

}  // namespace compatbench
