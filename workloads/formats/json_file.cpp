#include "formats/json_file.h"

#include <fstream>
#include <stdexcept>

namespace compatbench::formats {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& path) {
    std::ifstream in(path);
    if (!in)
        throw std::runtime_error(path.string() +
                                 ": cannot open (was the task that writes it run?)");
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
    }
}

void write_text_file(const fs::path& path, const std::string& text) {
    const fs::path tmp = path.string() + ".tmp";
    {
        std::ofstream out(tmp);
        out << text;
        if (!out) throw std::runtime_error(tmp.string() + ": cannot write");
    }
    fs::rename(tmp, path);
}

}  // namespace compatbench::formats
