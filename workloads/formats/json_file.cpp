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
    bool written = false;
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        out.flush();  // a full disk shows here, not only in the destructor
        written = static_cast<bool>(out);
    }
    std::error_code ec;
    if (!written) {
        fs::remove(tmp, ec);
        throw std::runtime_error(path.string() + ": cannot write (through " + tmp.string() + ")");
    }
    fs::rename(tmp, path, ec);
    if (ec) throw std::runtime_error(path.string() + ": cannot replace: " + ec.message());
}

}  // namespace compatbench::formats
