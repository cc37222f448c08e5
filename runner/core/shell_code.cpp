#include "core/shell_code.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace compatbench::shell {

std::vector<std::string> words(const std::string& text) {
    std::vector<std::string> out;
    std::string word;
    bool in_word = false;
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote != 0 && c == quote) {
            quote = 0;
        } else if (quote == 0 && (c == '\'' || c == '"')) {
            quote = c;
            in_word = true;
        } else if (quote == 0 && (c == ' ' || c == '\t' || c == '\n')) {
            if (in_word) out.push_back(word);
            word.clear();
            in_word = false;
        } else if (c == '\\' && quote == 0 && i + 1 < text.size() && text[i + 1] == '\n') {
            ++i;  // a line continuation: no character at all
        } else {
            if (c == '\\' && quote != '\'' && i + 1 < text.size()) ++i;
            word += text[i];
            in_word = true;
        }
    }
    if (in_word) out.push_back(word);
    return out;
}

namespace {

using Names = std::vector<std::string_view>;

bool has(const Names& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// A command that runs another one given in the rest of its words, after options and
// operands of its own, as its manual page (coreutils, util-linux, GNU time, xargs and
// parallel, procps watch, sudo, doas, OpenSSH) gives them. Long options may be shortened to
// any unambiguous prefix, as getopt_long allows.
struct Wrapper {
    std::string_view name{};
    std::string_view valued{};  // short options that take a value: `-n 5` or `-n5`
    Names long_valued{};        // long ones: `--signal KILL` or `--signal=KILL`
    int operands = 0;           // words before the command: timeout's duration, flock's file
    std::string_view code{};    // short options whose value is code: su -c, env -S
    Names long_code{};          // long ones: su --command
    std::string_view shell{};   // options that hand the command line to a shell: sudo -s
    Names long_shell{};
    bool shell_always = false;    // ssh, watch, parallel: the command line goes to a shell
    std::string_view no_shell{};  // ... except with watch -x
    Names long_no_shell{};
    bool runs_command = true;  // false: su (its operands are its shell's arguments)
    char command_after = 0;    // ... except after this option: runuser -u USER COMMAND
    Names long_command_after{};
    bool assignments = false;  // NAME=value words before the command (env, sudo)
    bool dash_option = false;  // a lone `-` is an option (env -)
    Names splits{};            // options whose value is split into words read in its place (env -S)
    Names data_after{};        // words after which the rest is data: parallel's :::
};

const Names su_valued = {"--shell", "--group", "--supp-group", "--whitelist-environment"};
const Names runuser_valued = [] {
    Names names = su_valued;
    names.push_back("--user");
    return names;
}();
const std::vector<Wrapper> wrappers = {
    {.name = "command"},
    {.name = "builtin"},
    {.name = "nohup"},
    {.name = "setsid"},
    {.name = "taskset", .operands = 1},
    {.name = "exec", .valued = "a"},
    {.name = "time", .valued = "fo", .long_valued = {"--format", "--output"}},
    {.name = "env",
     .valued = "uC",
     .long_valued = {"--unset", "--chdir"},
     .code = "S",
     .long_code = {"--split-string"},
     .assignments = true,
     .dash_option = true,
     .splits = {"-S", "--split-string"}},
    {.name = "nice", .valued = "n", .long_valued = {"--adjustment"}},
    {.name = "timeout", .valued = "sk", .long_valued = {"--signal", "--kill-after"}, .operands = 1},
    {.name = "stdbuf", .valued = "ioe", .long_valued = {"--input", "--output", "--error"}},
    {.name = "ionice",
     .valued = "cnpPu",
     .long_valued = {"--class", "--classdata", "--pid", "--pgid", "--uid"}},
    {.name = "chrt",
     .valued = "TPD",
     .long_valued = {"--sched-runtime", "--sched-period", "--sched-deadline"},
     .operands = 1},
    {.name = "flock",
     .valued = "wE",
     .long_valued = {"--wait", "--timeout", "--conflict-exit-code"},
     .operands = 1,
     .code = "c",
     .long_code = {"--command"}},
    {.name = "xargs",
     .valued = "adEILnPs",
     .long_valued = {"--arg-file", "--delimiter", "--max-args", "--max-lines", "--max-procs",
                     "--max-chars", "--process-slot-var"}},
    {.name = "sudo",
     .valued = "CDghpRrtTUu",
     .long_valued = {"--close-from", "--chdir", "--group", "--host", "--prompt", "--chroot",
                     "--role", "--type", "--command-timeout", "--other-user", "--user"},
     .shell = "si",
     .long_shell = {"--shell", "--login"},
     .assignments = true},
    {.name = "doas", .valued = "uC", .shell = "s"},
    {.name = "su",
     .valued = "sgGw",
     .long_valued = su_valued,
     .code = "c",
     .long_code = {"--command", "--session-command"},
     .runs_command = false},
    {.name = "runuser",
     .valued = "sgGwu",
     .long_valued = runuser_valued,
     .code = "c",
     .long_code = {"--command", "--session-command"},
     .runs_command = false,
     .command_after = 'u',
     .long_command_after = {"--user"}},
    {.name = "script",
     .valued = "EIOBTm",
     .long_valued = {"--echo", "--log-in", "--log-out", "--log-io", "--log-timing",
                     "--logging-format"},
     .code = "c",
     .long_code = {"--command"},
     .runs_command = false},
    {.name = "ssh", .valued = "BbcDEeFIiJLlmOopQRSWw", .operands = 1, .shell_always = true},
    {.name = "watch",
     .valued = "nq",
     .long_valued = {"--interval", "--equexit"},
     .shell_always = true,
     .no_shell = "x",
     .long_no_shell = {"--exec"}},
    {.name = "parallel",
     .valued = "jSaNnLCdIE",
     .long_valued = {"--jobs", "--sshlogin", "--arg-file", "--max-args", "--max-lines", "--colsep",
                     "--delimiter", "--joblog", "--results", "--tmpdir", "--delay", "--timeout",
                     "--retries", "--workdir", "--env", "--halt"},
     .shell_always = true,
     .data_after = {":::", "::::", ":::+", "::::+"}},
};

const Wrapper* wrapper_named(std::string_view name) {
    for (const Wrapper& w : wrappers)
        if (w.name == name) return &w;
    return nullptr;
}

bool in(std::string_view letters, char c) { return letters.find(c) != std::string_view::npos; }

// The long option `key` (`--sig`) of `names`: itself or the one it is a prefix of, or "".
std::string_view long_named(const Names& names, std::string_view key) {
    if (has(names, key)) return key;
    for (std::string_view name : names)
        if (key.size() > 2 && name.starts_with(key)) return name;
    return {};
}

std::string verdict_for(const std::vector<std::string>& words, bool glued);

// One wrapper's command line read word by word, the value being the next word (or, `glued`,
// the end of the last one): where the command it runs starts, or the value's verdict: code
// (a reason) or data ("": an option's value, an operand, an argument of su's shell).
class WrapperScan {
  public:
    struct Result {
        std::size_t command = 0;
        std::optional<std::string> verdict;
    };

    WrapperScan(const Wrapper& wr, const std::vector<std::string>& words, bool glued)
        : wr_(wr),
          words_(words),
          glued_(glued),
          operands_(wr.operands),
          shell_(wr.shell_always),
          wraps_(wr.runs_command) {}

    Result from(std::size_t w) {
        for (std::size_t a = w + 1; a < words_.size(); ++a) {
            glued_here_ = glued_ && a + 1 == words_.size();
            if (std::optional<Result> r = word(a)) return *r;
        }
        if (!pending_.empty()) return data_or_code(pending_code_);
        if (in_command_) return {0, shell_reason()};
        if (operands_ > 0 || !wraps_) return {0, ""};
        if (shell_) return {0, shell_reason()};
        return {words_.size(), std::nullopt};
    }

  private:
    std::optional<Result> word(std::size_t a) {
        const std::string& arg = words_[a];
        if (!pending_.empty()) return option_value(a);
        if (in_command_) {  // a word of a command line a shell runs
            if (has(wr_.data_after, arg)) return Result{0, ""};
            return std::nullopt;
        }
        if (options_ && arg == "--") {
            options_ = false;
        } else if (options_ && arg == "-" && wr_.dash_option) {
        } else if (options_ && arg.size() > 2 && arg.starts_with("--")) {
            return long_option(arg, a);
        } else if ((options_ && arg.size() > 1 && arg[0] == '-') ||
                   (!wraps_ && arg.size() > 1 && arg[0] == '-' && in(arg, 'c'))) {
            return short_options(arg, a);  // (after su's `--`, its shell's own -c)
        } else if (wr_.assignments && arg.find('=') != std::string::npos) {
            // NAME=value
        } else if (operands_ > 0) {
            --operands_;
        } else if (!wraps_) {
            // su's user, its shell's arguments
        } else if (shell_) {
            in_command_ = true;  // the rest is a command line for a shell
            if (glued_here_) return Result{0, shell_reason()};
            return std::nullopt;
        } else {
            return Result{a, std::nullopt};
        }
        if (glued_here_) return Result{0, ""};
        return std::nullopt;
    }

    // words_[a] is the value of the option pending_.
    std::optional<Result> option_value(std::size_t a) {
        if (glued_here_) return data_or_code(pending_code_);
        if (has(wr_.splits, pending_)) return split(words_[a], a);
        pending_.clear();
        return std::nullopt;
    }

    // env -S TEXT, TEXT at words_[a]: TEXT's words in its place.
    Result split(const std::string& text, std::size_t a) const {
        std::vector<std::string> rest = shell::words(text);
        rest.insert(rest.begin(), std::string(wr_.name));
        rest.insert(rest.end(), words_.begin() + static_cast<std::ptrdiff_t>(a) + 1, words_.end());
        return {0, verdict_for(rest, glued_)};
    }

    std::optional<Result> long_option(const std::string& arg, std::size_t a) {
        const std::string key = arg.substr(0, arg.find('='));
        if (!long_named(wr_.long_shell, key).empty()) shell_ = true;
        if (!long_named(wr_.long_no_shell, key).empty()) shell_ = false;
        if (!long_named(wr_.long_command_after, key).empty()) wraps_ = true;
        const std::string_view code = long_named(wr_.long_code, key);
        const std::string_view valued = long_named(wr_.long_valued, key);
        if (key != arg) {  // --name=value
            pending_ = std::string(code);
            if (glued_here_) return data_or_code(!code.empty());
            if (has(wr_.splits, pending_)) return split(arg.substr(key.size() + 1), a);
            pending_.clear();
        } else if (!code.empty() || !valued.empty()) {
            pending_ = std::string(code.empty() ? valued : code);
            pending_code_ = !code.empty();
        }
        if (glued_here_) return Result{0, ""};
        return std::nullopt;
    }

    std::optional<Result> short_options(const std::string& arg, std::size_t a) {
        for (std::size_t k = 1; k < arg.size(); ++k) {
            const char c = arg[k];
            if (in(wr_.shell, c)) shell_ = true;
            if (in(wr_.no_shell, c)) shell_ = false;
            if (c == wr_.command_after) wraps_ = true;
            const bool code = in(wr_.code, c) || (!wraps_ && !options_ && c == 'c');
            if (code || in(wr_.valued, c)) {
                pending_ = std::string("-") + c;
                pending_code_ = code;
                if (glued_here_) return data_or_code(code);  // the value ends the option's
                if (k + 1 == arg.size()) break;              // its value: the next word
                if (has(wr_.splits, pending_)) return split(arg.substr(k + 1), a);
                pending_.clear();  // the rest of the word is its value
                break;
            }
        }
        if (glued_here_) return Result{0, ""};
        return std::nullopt;
    }

    Result data_or_code(bool code) const {
        return {0, code ? "as the code of " + std::string(wr_.name) + " " + pending_ : ""};
    }
    std::string shell_reason() const {
        const std::string who(wr_.name);
        return wr_.shell_always ? "as the command line " + who + " gives a shell"
                                : "as a command line " + who + " hands to a shell";
    }

    const Wrapper& wr_;
    const std::vector<std::string>& words_;
    bool glued_, glued_here_ = false;
    int operands_;
    bool shell_, wraps_, options_ = true, in_command_ = false;
    std::string pending_;  // the option whose value is the next word ("" for none)
    bool pending_code_ = false;
};

std::string base_name(const std::string& word) { return word.substr(word.rfind('/') + 1); }

// What running `words` would make of a value as its next word, or (glued) as the end of
// the last word.
std::string verdict_for(const std::vector<std::string>& words, bool glued) {
    static const Names keywords = {"!", "if", "then", "else", "elif", "do", "while", "until"};
    static const Names shells = {"sh", "bash", "dash", "zsh", "ksh", "mksh"};
    // The value as a redirection's target (`eval "$x" > {log}`) is a file name.
    if (!words.empty() && (words.back().ends_with('>') || words.back().ends_with('<'))) return "";
    std::size_t w = 0;
    while (w < words.size() &&
           (has(keywords, words[w]) ||
            (words[w].find('=') != std::string::npos && words[w].front() != '-')))
        ++w;
    while (w < words.size() && !(glued && w + 1 == words.size())) {
        const Wrapper* wr = wrapper_named(base_name(words[w]));
        if (wr == nullptr) break;
        const WrapperScan::Result past = WrapperScan(*wr, words, glued).from(w);
        if (past.verdict) return *past.verdict;
        w = past.command;
    }
    // The value is the command's name, or glued to it.
    if (w == words.size() || (glued && w + 1 == words.size())) return "";
    const std::string name = base_name(words[w]);
    if (name == "eval") return "as an argument of eval";
    bool code_flag = false;
    for (std::size_t a = w + 1; a < words.size(); ++a) {
        const std::string& arg = words[a];
        if (arg == "--") continue;
        const bool option = arg.size() > 1 && (arg[0] == '-' || arg[0] == '+');
        if (!option && glued && a + 1 == words.size()) break;  // the code, glued to the value
        if (!option) return "";  // the code, or trap's action, comes before the value
        const bool short_options = arg[0] == '-' && arg[1] != '-';  // -c, -ec; not --norc
        if (short_options && arg.find('c') != std::string::npos) code_flag = true;
        if (arg == "-o" || arg == "+o") ++a;  // sh -o NAME
    }
    if (name == "trap") return "as trap's action";
    if (has(shells, name) && code_flag) return "as the code of " + name + " -c";
    return "";
}

}  // namespace

std::string runs_as_code(const std::string& before) {
    const bool glued =
        !before.empty() && before.back() != ' ' && before.back() != '\t' && before.back() != '\n';
    return verdict_for(shell::words(before), glued);
}

}  // namespace compatbench::shell
