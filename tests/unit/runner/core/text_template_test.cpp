// `{name}` templates (core/text_template.h): shell quoting, placeholders refused inside
// quotes, list placeholders, and file stems of task ids.
#include <gtest/gtest.h>

#include <stdexcept>
#include <unordered_map>

#include "common/hash.h"
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
    EXPECT_EQ(unsafe_placeholder("echo \"{v}\"").placeholder, "{v}");
    EXPECT_EQ(unsafe_placeholder("echo 'x {v} y'").placeholder, "{v}");
    EXPECT_EQ(unsafe_placeholder("echo {v} \"{{literal}}\" 'a' {w}").placeholder, "");
    EXPECT_EQ(unsafe_placeholder("echo \\\"{v}").placeholder,
              "");  // an escaped quote opens nothing
    EXPECT_EQ(unsafe_placeholder("printf '{{\"n\": %d}}' {seed}").placeholder, "");
    // A command substitution reads its words afresh, even inside double quotes.
    EXPECT_EQ(unsafe_placeholder("echo \"$(printf %s {arm} | wc -c)\" {x}").placeholder, "");
    EXPECT_EQ(unsafe_placeholder("echo \"`cat {f}`\"").placeholder, "");
    EXPECT_EQ(unsafe_placeholder("echo \"$(cat \"{f}\")\"").placeholder, "{f}");
    EXPECT_THROW(check_placeholders_unquoted("python3 x.py --name \"{name}\""),
                 std::invalid_argument);
    EXPECT_NO_THROW(check_placeholders_unquoted("python3 x.py --name {name}"));
}

TEST(TextTemplate, PlaceholdersWhereTheShellReadsCodeAreFound) {
    const auto where = [](const std::string& c) {
        const auto u = unsafe_placeholder(c);
        return u.placeholder + " " + u.where;
    };
    // A command that runs its argument as code: eval, trap's action, a shell's -c code.
    EXPECT_EQ(where("eval {v}"), "{v} as an argument of eval");
    EXPECT_EQ(where("x=1; eval echo {v}"), "{v} as an argument of eval");
    EXPECT_EQ(where("sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("echo a | /bin/bash -ec {v} name"), "{v} as the code of bash -c");
    EXPECT_EQ(where("trap {v} EXIT; echo"), "{v} as trap's action");
    EXPECT_EQ(where("trap -- {v} EXIT"), "{v} as trap's action");
    EXPECT_EQ(where("echo $(eval {v})"), "{v} as an argument of eval");
    EXPECT_EQ(where("sh -c 'echo \"$1\"' sh {v}"), " ");  // a positional parameter
    EXPECT_EQ(where("trap 'rm -f x' {sig}; sh {script}; echo eval {v}"), " ");
    EXPECT_EQ(where("f={v}; trap 'rm -f \"$f\"' EXIT"), " ");
    EXPECT_EQ(where("bash --norc --noprofile {script}"), " ");            // long options: no -c
    EXPECT_EQ(where("eval \"$x\" > {log}; eval \"$x\" 2>{err}"), " ");    // redirection targets
    EXPECT_EQ(where("bash -c \\\n  {v}"), "{v} as the code of bash -c");  // a continued line
    // ... and behind a command that runs another one after options and operands of its own.
    EXPECT_EQ(where("timeout 5 sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("timeout -k 2 --signal=INT 5m bash -ec {v}"), "{v} as the code of bash -c");
    EXPECT_EQ(where("nice -n 5 eval {v}"), "{v} as an argument of eval");
    EXPECT_EQ(where("nice -5 setsid -w stdbuf -oL ionice -c 3 sh -c {v}"),
              "{v} as the code of sh -c");
    EXPECT_EQ(where("taskset -c 0-3 chrt -T 5 -r 10 sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("env -i -u HOME A=1 B=2 /bin/sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("exec -a job command -p time -p nohup sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("find . | xargs -I{{}} -n 1 sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("sudo -u bob -E sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("flock -w 10 /tmp/l bash -c {v}"), "{v} as the code of bash -c");
    EXPECT_EQ(where("runuser -u bob -- sh -c {v}"), "{v} as the code of sh -c");
    // Wrappers whose own option or operand is code.
    EXPECT_EQ(where("su -c {v}"), "{v} as the code of su -c");
    EXPECT_EQ(where("su - bob -lc {v}"), "{v} as the code of su -c");
    EXPECT_EQ(where("runuser bob --command {v}"), "{v} as the code of runuser --command");
    EXPECT_EQ(where("flock /tmp/l -c {v}"), "{v} as the code of flock -c");
    EXPECT_EQ(where("env -S {v}"), "{v} as the code of env -S");
    EXPECT_EQ(where("sudo -s {v}"), "{v} as a command line sudo hands to a shell");
    EXPECT_EQ(where("sudo -i ls {v}"), "{v} as a command line sudo hands to a shell");
    EXPECT_EQ(where("ssh -p 22 host ls {v}"), "{v} as the command line ssh gives a shell");
    // Long options and their unambiguous prefixes, GNU time's options, sudo's assignments,
    // su's shell after `--`, env -S's words, watch and parallel, a value glued to a word.
    EXPECT_EQ(where("runuser --user bob -- sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("sudo --login ls {v}"), "{v} as a command line sudo hands to a shell");
    EXPECT_EQ(where("flock --wait 10 /tmp/l sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("xargs --max-lines 1 sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("timeout --sig KILL 5 sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("su bob --session-command {v}"), "{v} as the code of su --session-command");
    EXPECT_EQ(where("sudo CUDA_VISIBLE_DEVICES=0 sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("/usr/bin/time -f %e -o log sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("su bob -- -c {v}"), "{v} as the code of su -c");
    EXPECT_EQ(where("env - sh -c {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("env -S \"sh -c\" {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("env --split-string=\"sh -c\" {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("env -S\"nice sh -ec\" {v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("watch -n 5 ls {v}"), "{v} as the command line watch gives a shell");
    EXPECT_EQ(where("parallel -j 2 echo {v} ::: a b"),
              "{v} as the command line parallel gives a shell");
    EXPECT_EQ(where("script -q -c {v} log"), "{v} as the code of script -c");
    EXPECT_EQ(where("su --command={v}"), "{v} as the code of su --command");
    EXPECT_EQ(where("flock /tmp/l --com={v}"), "{v} as the code of flock --command");
    EXPECT_EQ(where("su -c{v}; su -cecho{v}"), "{v} as the code of su -c");
    EXPECT_EQ(where("sh -c echo{v}"), "{v} as the code of sh -c");
    EXPECT_EQ(where("timeout 5 eval x{v}"), "{v} as an argument of eval");
    // Their options' values, operands and commands' arguments stay data.
    EXPECT_EQ(where("watch -x ls {v}; parallel echo ::: {v}; parallel -j {n} echo ::: a"), " ");
    EXPECT_EQ(where("su --shell={shell}; timeout --signal={sig} 5 ls; env A={v} ls"), " ");
    EXPECT_EQ(where("nice -n{n} ls; sh script{v}; x={a}{b} ls; echo --x={v} ls"), " ");
    EXPECT_EQ(where("runuser -u {user} python3 t.py -c {v}; script {log}; doas -u {u} ls"), " ");
    EXPECT_EQ(where("timeout {t} sh {script}; timeout -s {sig} 5 ls"), " ");
    EXPECT_EQ(where("nice -n {n} python3 x.py {v}; env -u {name} ls; ionice -c {c} ls"), " ");
    EXPECT_EQ(where("taskset -c {cpus} ls; flock {lock} cat {f}; su {user}; su -s {shell}"), " ");
    EXPECT_EQ(where("timeout 5 sh {script} -c {v}; xargs -a {list} echo; ssh {host}"), " ");
    EXPECT_EQ(where("sudo -u {user} ls {v}; runuser -u {user} -- cat {f}"), " ");
    EXPECT_EQ(where("setsid {cmd}; nohup {cmd}; env A={v} python3 x.py"), " ");
    // A here-document's body is expanded (quoted delimiter or not: refused alike).
    EXPECT_EQ(where("cat <<EOF\nx {v}\nEOF\n"), "{v} in a here-document");
    EXPECT_EQ(where("cat <<'EOF' > f\n{v}\nEOF"), "{v} in a here-document");
    EXPECT_EQ(where("cat <<-E > {out}\n\t{{no}}\n\tE\necho \"{w}\""), "{w} inside quotes");
    EXPECT_EQ(where("cat <<EOF\nhello\nEOF\necho {w}"), " ");
    EXPECT_EQ(where("cat <<< {v}"), " ");  // a here-string is a word
    // Arithmetic evaluates its text.
    EXPECT_EQ(where("echo $(( {n} + 1 ))"), "{n} inside $(( ))");
    EXPECT_EQ(where("echo $((1 << 2)) {n}; n={n}; echo $((n * n))"), " ");
    // A comment runs to the end of its line: its apostrophes open nothing, and a value's
    // newline would end it.
    EXPECT_EQ(where("# it's\necho '{v}'"), "{v} inside quotes");
    EXPECT_EQ(where("# it's\necho {v}"), " ");
    EXPECT_EQ(where("echo x # {v}"), "{v} in a comment");
    EXPECT_EQ(where("echo a#{v} ${{#x}}"), " ");  // not a comment: # inside a word
    // A backslash or a $ just before it leaves the value's quoting to the shell.
    EXPECT_EQ(where("echo \\{v}"), "{v} after a backslash");
    EXPECT_EQ(where("echo ${v}"), "{v} after a $");
    EXPECT_EQ(where("echo \\\\ {v} $${{HOME}}"), " ");
    // Parentheses inside $(…) and $((…)) do not close them early.
    EXPECT_EQ(where("echo \"$( (cd /) ; echo \" {v} \" )\""), "{v} inside quotes");
    EXPECT_EQ(where("echo $(( (2*(3+1)) + {n} ))"), "{n} inside $(( ))");
    EXPECT_EQ(where("echo \"$( (cd /); echo {v} )\""), " ");
    EXPECT_THROW(check_placeholders_unquoted("cat <<EOF\n{v}\nEOF"), std::invalid_argument);
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

TEST(TextTemplate, FileStemsKeepTheFullHash) {
    // Two ids that share their first 100 characters and the top 32 bits of their hash (a
    // birthday search): once one file name, now two.
    const std::string prefix(100, 'x');
    std::unordered_map<std::uint64_t, std::string> seen;
    std::string a, b;
    for (int i = 0; i < 1000000 && a.empty(); ++i) {
        const std::string id = prefix + std::to_string(i);
        const auto [it, inserted] = seen.emplace(compatbench::fnv1a64(id) >> 32, id);
        if (!inserted) a = it->second, b = id;
    }
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(task_file_stem(a).substr(0, 109), task_file_stem(b).substr(0, 109));
    EXPECT_NE(task_file_stem(a), task_file_stem(b));
}
