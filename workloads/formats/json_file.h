// Small JSON and text files of a run: read with errors that name the file, written whole
// (to a temporary name, renamed when complete).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace compatbench::formats {

// A JSON file; std::runtime_error naming the file when it is missing or malformed.
nlohmann::json read_json(const std::filesystem::path& path);

// `text` into `path` through `path`.tmp and a rename, so a reader never sees half a file.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace compatbench::formats
