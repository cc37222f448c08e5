#include "core/text_template.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/hash.h"
#include "core/shell_code.h"

namespace compatbench {

std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

std::string task_file_stem(const std::string& id) {
    std::string stem;
    for (char c : id) {
        const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
        stem += safe ? c : '_';
    }
    if (stem.size() > 100) stem.resize(100);
    char hex[17];
    return stem + "-" + std::string(hex64(fnv1a64(id), hex));
}

namespace {

// The placeholder `{name}` starting at i (a single brace), or "" (a doubled brace, or none).
std::string placeholder_at(const std::string& text, std::size_t i) {
    if (text[i] != '{' || (i + 1 < text.size() && text[i + 1] == '{')) return "";
    const std::size_t end = text.find('}', i);
    return end == std::string::npos ? "" : text.substr(i, end - i + 1);
}

// The first placeholder in text[from, to), skipping doubled braces; "" for none.
std::string placeholder_in(const std::string& text, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to && i < text.size(); ++i) {
        if (text[i] == '{' && i + 1 < text.size() && text[i + 1] == '{') {
            ++i;
        } else if (std::string p = placeholder_at(text, i); !p.empty()) {
            return p;
        }
    }
    return "";
}

// A here-document's delimiter word after `<<` or `<<-` at i (quotes and backslashes, which
// only make its body literal, removed); i ends past it.
std::string heredoc_delimiter(const std::string& cmd, std::size_t& i) {
    while (i < cmd.size() && (cmd[i] == ' ' || cmd[i] == '\t')) ++i;
    std::string word;
    for (; i < cmd.size() && std::string(" \t\n;&|()<>").find(cmd[i]) == std::string::npos; ++i)
        if (cmd[i] != '\'' && cmd[i] != '"' && cmd[i] != '\\') word += cmd[i];
    return word;
}

// Past the bodies of the here-documents opened on the line that ends at `newline`: the
// index of the last body's closing line's newline. `found` gets a placeholder in a body.
std::size_t skip_heredoc_bodies(const std::string& cmd, std::size_t newline,
                                const std::vector<std::pair<std::string, bool>>& pending,
                                std::string& found) {
    std::size_t at = newline;
    for (const auto& [delimiter, strip_tabs] : pending) {
        while (at < cmd.size()) {
            const std::size_t start = at + 1, stop = std::min(cmd.find('\n', start), cmd.size());
            std::size_t text = start;
            while (strip_tabs && text < stop && cmd[text] == '\t') ++text;
            at = stop;
            if (cmd.compare(text, stop - text, delimiter) == 0) break;
            if (found.empty()) found = placeholder_in(cmd, start, stop);
        }
    }
    return at;
}

// Per nesting level of unsafe_placeholder's scan, what opened it and where it is.
struct Level {
    char opener = 0, quote = 0;
    int depth = 0;          // parentheses opened inside $(…) or $((…)), not yet closed
    std::size_t start = 0;  // where the simple command being read began
};

}  // namespace

UnsafePlaceholder unsafe_placeholder(const std::string& command) {
    // Per nesting level, what opened it (none, `(` of $(…), `a` of $((…)), or a backquote)
    // and the quote we are inside (', " or none): a command substitution's words are read
    // afresh, even within double quotes. Here-documents wait for the end of their line.
    std::vector<Level> levels = {{}};
    std::vector<std::pair<std::string, bool>> heredocs;
    const auto word_start = [&](std::size_t i) {
        return i == 0 || std::string(" \t\n;&|()").find(command[i - 1]) != std::string::npos;
    };
    for (std::size_t i = 0; i < command.size(); ++i) {
        const char c = command[i];
        Level& l = levels.back();
        const auto at = [&](const char* text) {
            return command.compare(i, std::strlen(text), text) == 0;
        };
        if ((c == '\\' || c == '$') && l.quote != '\'' && i + 1 < command.size() &&
            !placeholder_at(command, i + 1).empty()) {
            // `\{v}` leaves the value's first quote bare; `${v}` under bash is `$'…'`.
            return {placeholder_at(command, i + 1), c == '$' ? "after a $" : "after a backslash"};
        } else if (c == '\\' && l.quote != '\'') {
            ++i;  // an escaped character quotes nothing
        } else if (l.quote == 0 && (l.opener == '(' || l.opener == 'a') && c == '(') {
            ++l.depth;
        } else if (l.quote == 0 && l.depth > 0 && c == ')') {
            --l.depth;
        } else if (l.quote != '\'' && at("$((")) {
            levels.push_back({'a', 0, 0, i + 3});
            i += 2;
        } else if (l.quote == 0 && l.opener == 'a' && at("))")) {
            levels.pop_back();
            ++i;
        } else if (l.quote != '\'' && at("$(")) {
            levels.push_back({'(', 0, 0, i + 2});
            ++i;
        } else if (l.quote == 0 && c == ')' && l.opener == '(') {
            levels.pop_back();
        } else if (l.quote != '\'' && c == '`') {
            if (l.opener == '`' && l.quote == 0)
                levels.pop_back();
            else
                levels.push_back({'`', 0, 0, i + 1});
        } else if (l.quote == 0 && c == '#' && word_start(i)) {
            const std::size_t eol = std::min(command.find('\n', i), command.size());
            if (std::string p = placeholder_in(command, i, eol); !p.empty())
                return {p, "in a comment"};
            i = eol - 1;  // the newline is read next: it may start here-document bodies
        } else if (l.quote == 0 && l.opener != 'a' && at("<<") && !at("<<<")) {
            i += 2;
            const bool strip_tabs = i < command.size() && command[i] == '-';
            if (strip_tabs) ++i;
            heredocs.emplace_back(heredoc_delimiter(command, i), strip_tabs);
            --i;
        } else if (l.quote == 0 && c == '\n' && !heredocs.empty()) {
            std::string found;
            i = skip_heredoc_bodies(command, i, heredocs, found);
            heredocs.clear();
            if (!found.empty()) return {found, "in a here-document"};
            l.start = i + 1;
        } else if (l.quote == 0 && c != '\0' && std::strchr(";&|\n()", c) != nullptr) {
            l.start = i + 1;  // a new simple command (and below, after here-document bodies)
        } else if (l.quote == 0 && (c == '\'' || c == '"')) {
            l.quote = c;
        } else if (l.quote != 0 && c == l.quote) {
            l.quote = 0;
        } else if ((c == '{' || c == '}') && i + 1 < command.size() && command[i + 1] == c) {
            ++i;  // a literal brace
        } else if (std::string p = placeholder_at(command, i); !p.empty()) {
            if (l.quote != 0) return {p, "inside quotes"};
            const bool arithmetic = std::any_of(levels.begin(), levels.end(),
                                                [](const Level& v) { return v.opener == 'a'; });
            const std::string how = arithmetic
                                        ? std::string("inside $(( ))")
                                        : shell::runs_as_code(command.substr(l.start, i - l.start));
            if (!how.empty()) return {p, how};
            i += p.size() - 1;
        }
    }
    return {};
}

void check_placeholders_unquoted(const std::string& command) {
    const auto [p, where] = unsafe_placeholder(command);
    if (p.empty()) return;
    if (where == "inside quotes")
        throw std::invalid_argument(
            "the placeholder " + p + " sits inside quotes, where the shell would still run a " +
            "value's $(...) or backquotes: write it bare, as in `echo " + p + "` for `echo \"" + p +
            "\"` (each value is quoted as one word)");
    if (where.starts_with("as "))
        throw std::invalid_argument(
            "the placeholder " + p + " stands " + where + ", which runs a value as code: " +
            "keep the code in the command and pass the value as data, as in `sh -c 'echo " +
            "\"$1\"' sh " + p + "` or `f=" + p + "; trap 'rm -f \"$f\"' EXIT`");
    throw std::invalid_argument("the placeholder " + p + " stands " + where +
                                ", where the shell reads a value as code: pass it as an "
                                "argument or a variable set on its own, as in `v=" +
                                p + "; ...\"$v\"`");
}

TextTemplate TextTemplate::parse(const std::string& text, const std::vector<std::string>& known,
                                 bool any_name) {
    TextTemplate t;
    std::string literal;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '{' && i + 1 < text.size() && text[i + 1] == '{') {
            literal += '{';
            ++i;
        } else if (c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
            literal += '}';
            ++i;
        } else if (c == '{') {
            const auto close = text.find('}', i);
            if (close == std::string::npos) {
                throw std::invalid_argument("unclosed '{' at offset " + std::to_string(i));
            }
            const std::string name = text.substr(i + 1, close - i - 1);
            if (name.empty()) {
                throw std::invalid_argument("empty placeholder at offset " + std::to_string(i));
            }
            if (!any_name && std::find(known.begin(), known.end(), name) == known.end()) {
                std::string list;
                for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
                throw std::invalid_argument("unknown placeholder {" + name + "} (known: " +
                                            (list.empty() ? std::string("none") : list) + ")");
            }
            if (!literal.empty()) t.pieces_.push_back({false, literal});
            literal.clear();
            t.pieces_.push_back({true, name});
            i = close;
        } else if (c == '}') {
            throw std::invalid_argument("unmatched '}' at offset " + std::to_string(i) +
                                        " (write '}}' for a literal brace)");
        } else {
            literal += c;
        }
    }
    if (!literal.empty()) t.pieces_.push_back({false, literal});
    return t;
}

std::string TextTemplate::render(
    const std::map<std::string, std::string>& values, bool quote,
    const std::map<std::string, std::vector<std::string>>& lists) const {
    std::string out;
    for (const auto& piece : pieces_) {
        if (!piece.placeholder) {
            out += piece.text;
            continue;
        }
        if (const auto list = lists.find(piece.text); list != lists.end()) {
            for (std::size_t i = 0; i < list->second.size(); ++i)
                out += (i ? " " : "") + (quote ? shell_quote(list->second[i]) : list->second[i]);
            continue;
        }
        auto it = values.find(piece.text);
        if (it == values.end()) {
            throw std::invalid_argument("no value for placeholder {" + piece.text + "}");
        }
        out += quote ? shell_quote(it->second) : it->second;
    }
    return out;
}

std::vector<std::string> TextTemplate::words(
    const std::map<std::string, std::string>& values,
    const std::map<std::string, std::vector<std::string>>& lists) const {
    std::vector<std::string> out;
    bool open = false;  // the last word may still grow
    const auto append = [&](const std::string& text) {
        if (!open) out.emplace_back();
        out.back() += text;
        open = true;
    };
    for (const auto& piece : pieces_) {
        if (!piece.placeholder) {
            for (const char c : piece.text) {
                if (c == ' ' || c == '\t' || c == '\n') {
                    open = false;
                } else {
                    append(std::string(1, c));
                }
            }
            continue;
        }
        if (const auto list = lists.find(piece.text); list != lists.end()) {
            for (std::size_t i = 0; i < list->second.size(); ++i) {
                if (i > 0) open = false;
                append(list->second[i]);
            }
            continue;
        }
        const auto it = values.find(piece.text);
        if (it == values.end())
            throw std::invalid_argument("no value for placeholder {" + piece.text + "}");
        append(it->second);
    }
    return out;
}

bool TextTemplate::uses(const std::string& name) const {
    return std::any_of(pieces_.begin(), pieces_.end(),
                       [&](const Piece& p) { return p.placeholder && p.text == name; });
}

void TextTemplate::check_plain_words() const {
    for (const auto& piece : pieces_) {
        if (piece.placeholder) continue;
        const auto at = piece.text.find_first_of("'\"$`\\;&|<>()*?~#");
        if (at != std::string::npos)
            throw std::invalid_argument(std::string("'") + piece.text[at] +
                                        "' is read by a shell, and a served task's arguments "
                                        "pass through none: write plain words and placeholders");
    }
}

}  // namespace compatbench
