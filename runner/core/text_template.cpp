#include "core/text_template.h"

#include <algorithm>
#include <stdexcept>

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

}  // namespace compatbench
