#include "core/value.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace compatbench {

const char* column_type_name(ColumnType type) {
    switch (type) {
        case ColumnType::f64:
            return "float";
        case ColumnType::i64:
            return "int";
        case ColumnType::u64:
            return "uint";
        case ColumnType::str:
            return "str";
    }
    return "?";
}

Value fill_value(ColumnType type) {
    switch (type) {
        case ColumnType::f64:
            return std::numeric_limits<double>::quiet_NaN();
        case ColumnType::i64:
            return std::numeric_limits<std::int64_t>::min();
        case ColumnType::u64:
            return std::numeric_limits<std::uint64_t>::max();
        case ColumnType::str:
            return std::string();
    }
    return std::string();
}

nlohmann::json value_to_json(const Value& value) {
    if (const auto* d = std::get_if<double>(&value)) {
        if (std::isnan(*d)) return nullptr;
        if (std::isinf(*d)) return *d > 0 ? "inf" : "-inf";
        return *d;
    }
    if (const auto* i = std::get_if<std::int64_t>(&value)) return *i;
    if (const auto* u = std::get_if<std::uint64_t>(&value)) return *u;
    return std::get<std::string>(value);
}

Value value_from_json(const nlohmann::json& json, const ColumnSpec& spec) {
    auto bad = [&](const char* want) {
        return std::runtime_error("column '" + spec.name + "': expected " + want + ", got " +
                                  json.dump());
    };
    switch (spec.type) {
        case ColumnType::f64:
            if (json.is_null()) return std::numeric_limits<double>::quiet_NaN();
            if (json.is_string() && (json == "inf" || json == "-inf")) {
                return json == "inf" ? std::numeric_limits<double>::infinity()
                                     : -std::numeric_limits<double>::infinity();
            }
            if (json.is_string() && (json == "nan" || json == "NaN"))  // as null: not a number
                return std::numeric_limits<double>::quiet_NaN();
            if (!json.is_number()) throw bad("a number");
            return json.get<double>();
        case ColumnType::i64:
            if (!json.is_number_integer()) throw bad("an integer");
            if (json.is_number_unsigned() &&
                json.get<std::uint64_t>() >
                    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                throw bad("an integer within int64");
            }
            return json.get<std::int64_t>();
        case ColumnType::u64:
            if (!json.is_number_unsigned()) throw bad("a non-negative integer");
            return json.get<std::uint64_t>();
        case ColumnType::str: {
            if (!json.is_string()) throw bad("a string");
            auto s = json.get<std::string>();
            if (s.size() > spec.width) {
                throw std::runtime_error("column '" + spec.name + "': string of " +
                                         std::to_string(s.size()) + " bytes exceeds its width " +
                                         std::to_string(spec.width));
            }
            return s;
        }
    }
    throw bad("a known type");
}

std::string value_to_string(const Value& value) {
    if (const auto* s = std::get_if<std::string>(&value)) return *s;
    return value_to_json(value).dump();
}

Scalar Scalar::parse(const std::string& text) {
    Scalar s;
    s.text = text;
    const char* begin = text.data();
    const char* end = text.data() + text.size();
    if (text.empty()) return s;
    std::int64_t i = 0;
    auto ri = std::from_chars(begin, end, i);
    if (ri.ec == std::errc() && ri.ptr == end) {
        s.kind = Kind::integer;
        s.integer = i;
        return s;
    }
    double d = 0.0;
    auto rd = std::from_chars(begin, end, d);
    if (rd.ec == std::errc() && rd.ptr == end) {
        s.kind = Kind::real;
        s.real = d;
    }
    return s;
}

}  // namespace compatbench
