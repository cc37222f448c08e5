#include <stdexcept>

#include "analyses/analysis_kind.h"
#include "config/config.h"

namespace compatbench {

// One file per analysis kind defines its accessor.
const AnalysisKind& compass_analysis();
const AnalysisKind& correlation_analysis();
const AnalysisKind& encoder_roles_analysis();
const AnalysisKind& kruskal_analysis();
const AnalysisKind& paradigm_table_analysis();
const AnalysisKind& prism_analysis();
const AnalysisKind& screening_analysis();

std::span<const AnalysisKind* const> analysis_kinds() {
    static const AnalysisKind* const kinds[] = {
        &compass_analysis(),   &correlation_analysis(),    &encoder_roles_analysis(),
        &kruskal_analysis(),   &paradigm_table_analysis(), &prism_analysis(),
        &screening_analysis(),
    };
    return kinds;
}

const AnalysisKind* find_analysis_kind(std::string_view name) {
    for (const AnalysisKind* kind : analysis_kinds()) {
        if (kind->name() == name) return kind;
    }
    return nullptr;
}

int AnalysisInput::find(const std::string& name) const {
    for (std::size_t i = 0; i < columns.size(); ++i) {
        if (columns[i].name == name) return static_cast<int>(i);
    }
    return -1;
}

std::vector<double> AnalysisInput::numbers(const std::string& name) const {
    const int c = find(name);
    if (c < 0) throw std::invalid_argument("no column '" + name + "' in table " + group.table);
    std::vector<double> out;
    out.reserve(rows.size());
    for (const Row* row : rows) {
        const Value& v = (*row)[static_cast<std::size_t>(c)];
        if (const auto* d = std::get_if<double>(&v)) {
            out.push_back(*d);
        } else if (const auto* i = std::get_if<std::int64_t>(&v)) {
            out.push_back(static_cast<double>(*i));
        } else if (const auto* u = std::get_if<std::uint64_t>(&v)) {
            out.push_back(static_cast<double>(*u));
        } else {
            throw std::invalid_argument("column '" + name + "' is not numeric");
        }
    }
    return out;
}

const AnalysisInput& AnalysisInput::other(const std::string& name) const {
    for (const auto& o : others) {
        if (o.group.name == name) return o;
    }
    throw std::invalid_argument("analysis input group '" + name + "' was not requested");
}

std::vector<std::string> AnalysisInput::texts(const std::string& name) const {
    const int c = find(name);
    if (c < 0) throw std::invalid_argument("no column '" + name + "' in table " + group.table);
    std::vector<std::string> out;
    out.reserve(rows.size());
    for (const Row* row : rows) out.push_back(value_to_string((*row)[static_cast<std::size_t>(c)]));
    return out;
}

}  // namespace compatbench
