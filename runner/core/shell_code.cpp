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
// operands of its own, as its manual page (coreutils, util-linux, sudo, OpenSSH) gives them.
struct Wrapper {
    std::string_view name{};
    std::string_view valued{};  // short options that take a value: `-n 5` or `-n5`
    Names long_valued{};        // long ones: `--signal KILL` or `--signal=KILL`
    int operands = 0;           // words before the command: timeout's duration, flock's file
    std::string_view code{};    // short options whose value is code: su -c, env -S
    Names long_code{};          // long ones: su --command
    std::string_view shell{};   // short options that hand the command to a shell: sudo -s
    bool shell_always = false;  // ssh: the command line runs in the remote user's shell
    bool runs_command = true;   // false: su (its operands are its shell's arguments)
    char command_after = 0;     // ... except after this option: runuser -u USER COMMAND
    bool assignments = false;   // NAME=value words before the command (env)
};

const std::vector<Wrapper>& wrappers() {
    static const std::vector<Wrapper> table = {
        {.name = "command"},
        {.name = "builtin"},
        {.name = "time"},
        {.name = "nohup"},
        {.name = "setsid"},
        {.name = "taskset", .operands = 1},
        {.name = "exec", .valued = "a"},
        {.name = "env",
         .valued = "uC",
         .long_valued = {"--unset", "--chdir"},
         .code = "S",
         .long_code = {"--split-string"},
         .assignments = true},
        {.name = "nice", .valued = "n", .long_valued = {"--adjustment"}},
        {.name = "timeout",
         .valued = "sk",
         .long_valued = {"--signal", "--kill-after"},
         .operands = 1},
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
         .long_valued = {"--timeout", "--conflict-exit-code"},
         .operands = 1,
         .code = "c",
         .long_code = {"--command"}},
        {.name = "xargs",
         .valued = "adEILnPs",
         .long_valued = {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars",
                         "--process-slot-var"}},
        {.name = "sudo",
         .valued = "CDghpRrtTUu",
         .long_valued = {"--close-from", "--chdir", "--group", "--host", "--prompt", "--chroot",
                         "--role", "--type", "--command-timeout", "--other-user", "--user"},
         .shell = "si"},
        {.name = "su",
         .valued = "sgGw",
         .long_valued = {"--shell", "--group", "--supp-group", "--whitelist-environment"},
         .code = "c",
         .long_code = {"--command"},
         .runs_command = false},
        {.name = "runuser",
         .valued = "sgGwu",
         .long_valued = {"--shell", "--group", "--supp-group", "--whitelist-environment", "--user"},
         .code = "c",
         .long_code = {"--command"},
         .runs_command = false,
         .command_after = 'u'},
        {.name = "ssh", .valued = "BbcDEeFIiJLlmOopQRSWw", .operands = 1, .shell_always = true},
    };
    return table;
}

const Wrapper* wrapper_named(std::string_view name) {
    for (const Wrapper& w : wrappers())
        if (w.name == name) return &w;
    return nullptr;
}

// Past wrapper `wr` at words[w]: the index where the command it runs starts (words.size()
// when that is the value itself), or, in `verdict`, what the value is to the wrapper: code
// (a reason) or data ("": an option's value, an operand, su's shell arguments).
struct Past {
    std::size_t command = 0;
    std::optional<std::string> verdict;
};

Past past_wrapper(const Wrapper& wr, const std::vector<std::string>& words, std::size_t w) {
    const std::string who(wr.name);
    const std::string shell_code = wr.shell_always ? "as the command " + who + " runs in a shell"
                                                   : "as a command line " + who + " gives a shell";
    int operands = wr.operands;
    bool shell = wr.shell_always, wraps = wr.runs_command, options = true;
    std::string pending;  // the option whose value comes next ("" for none)
    bool pending_code = false;
    for (std::size_t a = w + 1; a < words.size(); ++a) {
        const std::string& arg = words[a];
        if (!pending.empty()) {
            pending.clear();
            continue;
        }
        if (options && arg == "--") {
            options = false;
        } else if (options && arg.size() > 2 && arg.starts_with("--")) {
            const std::string key = arg.substr(0, arg.find('='));
            if (key == arg && (has(wr.long_valued, key) || has(wr.long_code, key))) pending = key;
            pending_code = has(wr.long_code, key);
        } else if (options && arg.size() > 1 && arg[0] == '-') {
            for (std::size_t k = 1; k < arg.size(); ++k) {
                const char c = arg[k];
                if (wr.shell.find(c) != std::string_view::npos) shell = true;
                if (c == wr.command_after) wraps = true;
                pending_code = wr.code.find(c) != std::string_view::npos;
                if (pending_code || wr.valued.find(c) != std::string_view::npos) {
                    if (k + 1 == arg.size()) pending = std::string("-") + c;
                    break;  // the rest of the word is the option's value
                }
            }
        } else if (wr.assignments && arg.find('=') != std::string::npos) {
        } else if (operands > 0) {
            --operands;
        } else if (wraps) {
            if (shell) return {0, shell_code};  // the value is a word of that command line
            return {a, std::nullopt};
        }
    }
    if (!pending.empty()) return {0, pending_code ? "as the code of " + who + " " + pending : ""};
    if (operands > 0 || !wraps) return {0, ""};
    if (shell) return {0, shell_code};
    return {words.size(), std::nullopt};
}

}  // namespace

std::string runs_as_code(const std::string& before) {
    static const Names keywords = {"!", "if", "then", "else", "elif", "do", "while", "until"};
    static const Names shells = {"sh", "bash", "dash", "zsh", "ksh", "mksh"};
    const std::vector<std::string> words = shell::words(before);
    // The value as a redirection's target (`eval "$x" > {log}`) is a file name.
    if (!words.empty() && (words.back().ends_with('>') || words.back().ends_with('<'))) return "";
    std::size_t w = 0;
    while (w < words.size() &&
           (has(keywords, words[w]) ||
            (words[w].find('=') != std::string::npos && words[w].front() != '-')))
        ++w;
    std::string name = w < words.size() ? words[w].substr(words[w].rfind('/') + 1) : "";
    for (const Wrapper* wr = wrapper_named(name); wr != nullptr; wr = wrapper_named(name)) {
        const Past past = past_wrapper(*wr, words, w);
        if (past.verdict) return *past.verdict;
        w = past.command;
        name = w < words.size() ? words[w].substr(words[w].rfind('/') + 1) : "";
    }
    if (w == words.size()) return "";
    if (name == "eval") return "as an argument of eval";
    bool code_flag = false;
    for (std::size_t a = w + 1; a < words.size(); ++a) {
        const std::string& arg = words[a];
        if (arg == "--") continue;
        const bool option = arg.size() > 1 && (arg[0] == '-' || arg[0] == '+');
        if (!option) return "";  // the code, or trap's action, comes before the value
        const bool short_options = arg[0] == '-' && arg[1] != '-';  // -c, -ec; not --norc
        if (short_options && arg.find('c') != std::string::npos) code_flag = true;
        if (arg == "-o" || arg == "+o") ++a;  // sh -o NAME
    }
    if (name == "trap") return "as trap's action";
    if (has(shells, name) && code_flag) return "as the code of " + name + " -c";
    return "";
}

}  // namespace compatbench::shell
