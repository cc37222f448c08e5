#include "core/text_template.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "common/hash.h"

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
    return stem + "-" + std::string(hex64(fnv1a64(id), hex).substr(0, 8));
}

std::string quoted_placeholder(const std::string& command) {
    // Per nesting level, what opened it (none, `(` of $(…), or a backquote) and the quote we
    // are inside (', " or none): a command substitution's words are read afresh, even within
    // double quotes.
    struct Level {
        char opener = 0, quote = 0;
    };
    std::vector<Level> levels = {{}};
    for (std::size_t i = 0; i < command.size(); ++i) {
        const char c = command[i];
        Level& l = levels.back();
        const bool next_same = i + 1 < command.size() && command[i + 1] == c;
        if (c == '\\' && l.quote != '\'') {
            ++i;  // an escaped character quotes nothing
        } else if (l.quote != '\'' && c == '$' && i + 1 < command.size() && command[i + 1] == '(') {
            levels.push_back({'(', 0});
            ++i;
        } else if (l.quote == 0 && c == ')' && l.opener == '(') {
            levels.pop_back();
        } else if (l.quote != '\'' && c == '`') {
            if (l.opener == '`' && l.quote == 0)
                levels.pop_back();
            else
                levels.push_back({'`', 0});
        } else if (l.quote == 0 && (c == '\'' || c == '"')) {
            l.quote = c;
        } else if (l.quote != 0 && c == l.quote) {
            l.quote = 0;
        } else if ((c == '{' || c == '}') && next_same) {
            ++i;  // a literal brace
        } else if (c == '{') {
            const std::size_t end = command.find('}', i);
            if (end == std::string::npos) return "";
            if (l.quote != 0) return command.substr(i, end - i + 1);
            i = end;
        }
    }
    return "";
}

void check_placeholders_unquoted(const std::string& command) {
    const std::string p = quoted_placeholder(command);
    if (p.empty()) return;
    throw std::invalid_argument("the placeholder " + p +
                                " sits inside quotes, where the shell would still run a " +
                                "value's $(...) or backquotes: write it bare, as in `echo " + p +
                                "` for `echo \"" + p + "\"` (each value is quoted as one word)");
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
