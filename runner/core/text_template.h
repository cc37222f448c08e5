// `{name}` templates: task ids (`id:`), `after:` entries, commands of command tasks (whose
// substituted values are shell-quoted) and the report's command line.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace compatbench {

// 'text' with every ' written as '\'' : safe as one word of /bin/sh.
std::string shell_quote(const std::string& text);

// The first `{name}` of a shell command template that stands where the shell would still
// read a value as code, and where: "inside quotes" (each value is shell-quoted as a bare
// word; inside "…" that quoting is text, so a value's $(…) or backquotes would run),
// "in a here-document" (its body is expanded, its quotes are text), "inside $(( ))"
// (arithmetic evaluates its text), "in a comment" (a value's newline would end it), or
// where a command runs its argument as code: "as an argument of eval", "as trap's action",
// "as the code of sh -c" (bash, dash, zsh, ksh alike).
// Both empty when none.
struct UnsafePlaceholder {
    std::string placeholder, where;
};
UnsafePlaceholder unsafe_placeholder(const std::string& command);

// std::invalid_argument for a command template with such a placeholder, saying how to
// write it.
void check_placeholders_unquoted(const std::string& command);

// A file-name-safe stem for a task id: unsafe characters become '_', the first 100 kept,
// then the id's full 64-bit FNV-1a hash in hex. The task graph refuses a config in which
// two ids share a stem, so a stem names one task's workdir, result and log.
std::string task_file_stem(const std::string& id);

class TextTemplate {
  public:
    // Throws std::invalid_argument for an unclosed brace, an empty name, or (unless
    // `any_name`) a name not in `known`.
    static TextTemplate parse(const std::string& text, const std::vector<std::string>& known,
                              bool any_name = false);
    // Throws std::invalid_argument naming a placeholder missing from `values` and `lists`. A
    // placeholder in `lists` becomes its words, each quoted, separated by spaces.
    std::string render(const std::map<std::string, std::string>& values, bool quote = true,
                       const std::map<std::string, std::vector<std::string>>& lists = {}) const;
    // The same as an argument list, with no shell between: the literal text splits into
    // words at white space; a value joins the word it stands in as it is (a list: its first
    // word there, then a word each). Throws as render() does.
    std::vector<std::string> words(
        const std::map<std::string, std::string>& values,
        const std::map<std::string, std::vector<std::string>>& lists = {}) const;
    // Throws std::invalid_argument naming the first character of the literal text that only
    // a shell would read (quotes, $, `, \, ;, &, |, <, >, parentheses, *, ?, ~, #): such a
    // template cannot become an argument list.
    void check_plain_words() const;
    // Whether `{name}` stands in the template.
    bool uses(const std::string& name) const;

  private:
    struct Piece {
        bool placeholder;
        std::string text;
    };
    std::vector<Piece> pieces_;
};

}  // namespace compatbench
