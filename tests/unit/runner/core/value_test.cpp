// Typed cells (core/value.h) and durations (core/duration.h): scalars as the config gives
// them, the blanks of each column type, the JSON round trip's refusals, and durations as
// the progress line prints them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/duration.h"
#include "core/value.h"

using namespace compatbench;

TEST(Value, ScalarsParseAsTheirNumbers) {
    EXPECT_EQ(Scalar::parse("42").kind, Scalar::Kind::integer);
    EXPECT_EQ(Scalar::parse("42").integer, 42);
    EXPECT_EQ(Scalar::parse("-7").integer, -7);
    EXPECT_EQ(Scalar::parse("0.25").kind, Scalar::Kind::real);
    EXPECT_DOUBLE_EQ(Scalar::parse("1e-3").as_double(), 1e-3);
    EXPECT_EQ(Scalar::parse("clip").kind, Scalar::Kind::text);
    EXPECT_FALSE(Scalar::parse("12abc").is_number());
    EXPECT_EQ(Scalar::parse("clip").text, "clip");
}

TEST(Value, BlanksOfEachColumnType) {
    EXPECT_TRUE(std::isnan(std::get<double>(fill_value(ColumnType::f64))));
    EXPECT_EQ(std::get<std::int64_t>(fill_value(ColumnType::i64)),
              std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(std::get<std::uint64_t>(fill_value(ColumnType::u64)),
              std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(std::get<std::string>(fill_value(ColumnType::str)), "");
}

TEST(Value, JsonThatDoesNotFitTheColumnIsRefusedByName) {
    const ColumnSpec i{"steps", ColumnType::i64, 0}, s{"name", ColumnType::str, 4};
    EXPECT_EQ(std::get<std::int64_t>(value_from_json(nlohmann::json(3), i)), 3);
    for (const auto& [json, spec] : std::vector<std::pair<nlohmann::json, ColumnSpec>>{
             {nlohmann::json("three"), i}, {nlohmann::json(1.5), i}, {nlohmann::json(7), s}}) {
        try {
            value_from_json(json, spec);
            FAIL() << json.dump() << " was taken for column " << spec.name;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(spec.name), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(value_to_json(std::numeric_limits<double>::infinity()), "inf");
    EXPECT_TRUE(value_to_json(std::nan("")).is_null());
}

TEST(Duration, AsTheProgressLinePrintsThem) {
    EXPECT_EQ(format_duration(42.4), "42s");
    EXPECT_EQ(format_duration(187), "3m07s");
    EXPECT_EQ(format_duration(7500), "2h05m");
    EXPECT_EQ(format_duration(-3), "0s");
    EXPECT_EQ(format_duration(std::nan("")), "?");
}
