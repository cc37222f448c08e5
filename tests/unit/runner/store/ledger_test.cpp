#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/value.h"
#include "store/ledger.h"

using namespace compatbench;
namespace fs = std::filesystem;

TEST(Value, JsonRoundTripIsExact) {
    const ColumnSpec f{"f", ColumnType::f64, 0};
    for (double d :
         {0.1, -0.0, 1e-308, 4.9e-324, 1.7976931348623157e308, 1.0 / 3.0,
          std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
        const Value back = value_from_json(nlohmann::json::parse(value_to_json(d).dump()), f);
        const double b = std::get<double>(back);
        EXPECT_EQ(std::memcmp(&b, &d, 8), 0) << d;
    }
    EXPECT_TRUE(std::isnan(std::get<double>(value_from_json(value_to_json(NAN), f))));
    // A result's "nan" is read as its "inf" is (and as null).
    EXPECT_TRUE(std::isnan(std::get<double>(value_from_json("nan", f))));
    EXPECT_THROW(value_from_json("not a number", f), std::runtime_error);
    const ColumnSpec u{"u", ColumnType::u64, 0};
    EXPECT_EQ(std::get<std::uint64_t>(value_from_json(value_to_json(~0ULL), u)), ~0ULL);
    const ColumnSpec s{"s", ColumnType::str, 3};
    EXPECT_THROW(value_from_json("toolong", s), std::runtime_error);
    EXPECT_THROW(value_from_json("1", ColumnSpec{"i", ColumnType::i64, 0}), std::runtime_error);
}

TEST(Ledger, AppendsSyncsAndCutsATornTail) {
    const fs::path path = fs::path(::testing::TempDir()) / "ledger_test.jsonl";
    fs::remove(path);
    std::vector<std::string> warnings;
    auto warn = [&](const std::string& w) { warnings.push_back(w); };
    {
        Ledger ledger(path.string(), 0.0, warn);
        ledger.append({{"id", "a"}, {"status", "done"}, {"config_hash", "h"}});
        ledger.append({{"id", "b"}, {"status", "failed"}, {"config_hash", "h"}});
        ledger.sync();
    }
    // A kill in the middle of a write leaves a line without its newline.
    { std::ofstream(path, std::ios::app) << R"({"id":"c","sta)"; }
    {
        Ledger ledger(path.string(), 0.0, warn);  // cuts it
        ASSERT_EQ(warnings.size(), 1u);
        EXPECT_NE(warnings[0].find("torn last line"), std::string::npos);
        ledger.append({{"id", "d"}, {"status", "done"}, {"config_hash", "h"}});
    }
    { std::ofstream(path, std::ios::app) << "not json\n{\"id\":\"x\"}\n"; }
    const auto records = Ledger::read(path.string(), warn);
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0]["id"], "a");
    EXPECT_EQ(records[2]["id"], "d");
    ASSERT_EQ(warnings.size(), 3u);
    EXPECT_NE(warnings[1].find(":4: not JSON"), std::string::npos) << warnings[1];
    EXPECT_NE(warnings[2].find(":5: not a ledger record"), std::string::npos) << warnings[2];
}
