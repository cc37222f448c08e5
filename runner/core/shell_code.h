#pragma once
// How /bin/sh reads the words of a simple command: what text_template's safety check needs
// to tell a value passed as data from one a command would run as code (docs/config.md,
// "command").
#include <string>
#include <vector>

namespace compatbench::shell {

// The words of a piece of a simple command, quotes removed (a quoted separator stays in
// its word; a backslash-newline joins lines).
std::vector<std::string> words(const std::string& text);

// What would run a value standing as the next word after `before` (the simple command so
// far) as code: "as an argument of eval", "as trap's action", "as the code of sh -c", and
// the same behind the commands that run another one (`timeout 5 sh -c`, `nice -n 5 eval`,
// `su -c`, `sudo -s`, `flock FILE -c`, `ssh HOST`); "" for nothing (a value quoted as one
// word is otherwise one argument).
std::string runs_as_code(const std::string& before);

}  // namespace compatbench::shell
