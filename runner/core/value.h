// Typed cells of result tables: what a task returns and what results.h5 stores.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace compatbench {

enum class ColumnType { f64, i64, u64, str };

const char* column_type_name(ColumnType type);

// One column of a result table. `width` is the fixed byte width of a str column (parallel
// HDF5 cannot write variable-length strings).
struct ColumnSpec {
    std::string name;
    ColumnType type = ColumnType::f64;
    std::size_t width = 0;
};

using Value = std::variant<double, std::int64_t, std::uint64_t, std::string>;
using Row = std::vector<Value>;

// The value a column holds where no task wrote it: NaN, INT64_MIN, UINT64_MAX or "".
Value fill_value(ColumnType type);

// JSON round trip (the ledger and MPI messages), exact for every double: JSON has no NaN
// or infinity, so NaN is written as null and infinities as the strings "inf" / "-inf".
nlohmann::json value_to_json(const Value& value);
// Throws std::runtime_error naming the column when `json` does not fit `spec`.
Value value_from_json(const nlohmann::json& json, const ColumnSpec& spec);

std::string value_to_string(const Value& value);

// A grid parameter or config scalar: its text and, when it parses as one, a number.
struct Scalar {
    enum class Kind { integer, real, text };
    std::string text;
    Kind kind = Kind::text;
    std::int64_t integer = 0;
    double real = 0.0;

    static Scalar parse(const std::string& text);
    double as_double() const { return kind == Kind::integer ? static_cast<double>(integer) : real; }
    bool is_number() const { return kind != Kind::text; }
};

}  // namespace compatbench
