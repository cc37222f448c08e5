// `{name}` templates (core/text_template.h): shell quoting, placeholders refused inside
// quotes, list placeholders, and file stems of task ids.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/text_template.h"

using namespace compatbench;

TEST(TextTemplate, QuotesAndChecks) {
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
    const auto t = TextTemplate::parse("echo {a} {{x}} {b}", {"a", "b"});
    EXPECT_EQ(t.render({{"a", "1 2"}, {"b", "$(rm -rf /)"}}), "echo '1 2' {x} '$(rm -rf /)'");
    EXPECT_THROW(TextTemplate::parse("echo {a", {"a"}), std::invalid_argument);
    EXPECT_THROW(TextTemplate::parse("echo {c}", {"a"}), std::invalid_argument);
    EXPECT_THROW(TextTemplate::parse("echo }", {}), std::invalid_argument);
    EXPECT_NE(task_file_stem("a/b"), task_file_stem("a_b"));
}

TEST(TextTemplate, PlaceholdersInsideQuotesAreFound) {
    // Quoted as a bare word, a value inside "…" would still run its $(…): refused.
    EXPECT_EQ(quoted_placeholder("echo \"{v}\""), "{v}");
    EXPECT_EQ(quoted_placeholder("echo 'x {v} y'"), "{v}");
    EXPECT_EQ(quoted_placeholder("echo {v} \"{{literal}}\" 'a' {w}"), "");
    EXPECT_EQ(quoted_placeholder("echo \\\"{v}"), "");  // an escaped quote opens nothing
    EXPECT_EQ(quoted_placeholder("printf '{{\"n\": %d}}' {seed}"), "");
    // A command substitution reads its words afresh, even inside double quotes.
    EXPECT_EQ(quoted_placeholder("echo \"$(printf %s {arm} | wc -c)\" {x}"), "");
    EXPECT_EQ(quoted_placeholder("echo \"`cat {f}`\""), "");
    EXPECT_EQ(quoted_placeholder("echo \"$(cat \"{f}\")\""), "{f}");
    EXPECT_THROW(check_placeholders_unquoted("python3 x.py --name \"{name}\""),
                 std::invalid_argument);
    EXPECT_NO_THROW(check_placeholders_unquoted("python3 x.py --name {name}"));
}

TEST(TextTemplate, ListsBecomeQuotedWords) {
    // A K-way merge's {finetuned} and {tasks}: one word per member, each quoted.
    const auto t = TextTemplate::parse("eval --ft {ft} --tasks {tasks} --out {out}", {}, true);
    EXPECT_EQ(
        t.render({{"out", "r.json"}}, true, {{"ft", {"a b.safetensors", "c"}}, {"tasks", {"x"}}}),
        "eval --ft 'a b.safetensors' 'c' --tasks 'x' --out 'r.json'");
    EXPECT_EQ(t.render({{"out", "r"}}, false, {{"ft", {}}, {"tasks", {"x", "y"}}}),
              "eval --ft  --tasks x y --out r");
}

TEST(TextTemplate, FileStemsAreSafeAndKeepIdsApart) {
    const std::string stem = task_file_stem("align/clip s+sent t");
    EXPECT_EQ(stem.find_first_of("/ +"), std::string::npos) << stem;
    EXPECT_EQ(stem, task_file_stem("align/clip s+sent t"));  // stable
    EXPECT_NE(task_file_stem("a b"), task_file_stem("a_b"));
}
