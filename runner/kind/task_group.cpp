#include "kind/task_group.h"

#include <algorithm>
#include <stdexcept>

#include "config/yaml_check.h"

namespace compatbench {

const Scalar& ListedTask::key(std::string_view name) const {
    for (const auto& [k, v] : keys)
        if (k == name) return v;
    throw std::logic_error("task '" + suffix + "' has no key column '" + std::string(name) + "'");
}

const Scalar* Params::find(const std::string& key) const {
    const auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
}

double Params::real(const std::string& key, double fallback) const {
    const Scalar* s = find(key);
    return s && s->is_number() ? s->as_double() : fallback;
}

std::int64_t Params::integer(const std::string& key, std::int64_t fallback) const {
    const Scalar* s = find(key);
    return s && s->kind == Scalar::Kind::integer ? s->integer : fallback;
}

bool Params::flag(const std::string& key) const {
    const Scalar* s = find(key);
    return s && s->kind == Scalar::Kind::text && parse_bool(s->text).value_or(false);
}

std::string Params::text(const std::string& key, const std::string& fallback) const {
    const Scalar* s = find(key);
    return s ? s->text : fallback;
}

namespace {
// The column of a key whose values are `values`: int, float, or a string as wide as the longest.
ColumnSpec key_column(const std::string& name, const std::vector<const Scalar*>& values) {
    bool all_int = true, all_num = true;
    std::size_t width = 1;
    for (const Scalar* v : values) {
        all_int = all_int && v->kind == Scalar::Kind::integer;
        all_num = all_num && v->is_number();
        width = std::max(width, v->text.size());
    }
    return {name,
            all_int   ? ColumnType::i64
            : all_num ? ColumnType::f64
                      : ColumnType::str,
            all_num ? 0 : width};
}
}  // namespace

std::vector<ColumnSpec> table_columns(const TaskGroup& group, std::size_t id_width) {
    std::vector<ColumnSpec> columns;
    columns.push_back({"task_id", ColumnType::str, id_width});
    columns.push_back({"seed", ColumnType::u64, 0});
    if (group.count >= 0) columns.push_back({"i", ColumnType::i64, 0});
    for (const auto& [key, values] : group.grid) {
        std::vector<const Scalar*> v;
        for (const auto& x : values) v.push_back(&x);
        columns.push_back(key_column(key, v));
    }
    if (!group.listed.empty()) {
        for (std::size_t k = 0; k < group.listed.front().keys.size(); ++k) {
            std::vector<const Scalar*> v;
            for (const auto& t : group.listed) v.push_back(&t.keys[k].second);
            columns.push_back(key_column(group.listed.front().keys[k].first, v));
        }
    }
    columns.insert(columns.end(), group.outputs.begin(), group.outputs.end());
    return columns;
}

}  // namespace compatbench
