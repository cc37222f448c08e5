#include "formats/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/half.h"

namespace compatbench::formats {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
    throw FormatError(file + ": " + what);
}

std::string tensor_ref(const std::string& name) { return "tensor '" + name + "'"; }

std::uint64_t read_u64_le(const std::uint8_t* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

void write_u64_le(std::uint64_t v, std::uint8_t* p) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

TensorInfo parse_entry(const std::string& file, const std::string& name,
                       const nlohmann::json& entry) {
    const std::string ref = tensor_ref(name);
    if (!entry.is_object())
        fail(file, ref + ": expected an object with dtype, shape, data_offsets");
    for (const auto& [key, value] : entry.items()) {
        if (key != "dtype" && key != "shape" && key != "data_offsets") {
            fail(file, ref + ": unexpected field '" + key + "'");
        }
    }
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
        if (!entry.contains(key)) fail(file, ref + ": missing field '" + std::string(key) + "'");
    }
    TensorInfo t;
    t.name = name;
    const auto& dtype = entry["dtype"];
    if (!dtype.is_string()) fail(file, ref + ": dtype must be a string");
    try {
        t.dtype = dtype_from_name(dtype.get<std::string>());
    } catch (const FormatError& e) {
        fail(file, ref + ": " + e.what());
    }
    const auto& shape = entry["shape"];
    if (!shape.is_array()) fail(file, ref + ": shape must be a list of non-negative integers");
    for (const auto& d : shape) {
        if (!d.is_number_unsigned())
            fail(file,
                 ref + ": shape must be a list of non-negative integers, got " + shape.dump());
        t.shape.push_back(d.get<std::uint64_t>());
    }
    const auto& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
        fail(file, ref + ": data_offsets must be [begin, end] of non-negative integers");
    }
    t.begin = offsets[0].get<std::uint64_t>();
    t.end = offsets[1].get<std::uint64_t>();
    if (t.end < t.begin)
        fail(file, ref + ": data_offsets end " + std::to_string(t.end) + " is before begin " +
                       std::to_string(t.begin));
    std::uint64_t count = 1;
    for (std::uint64_t d : t.shape) {
        if (__builtin_mul_overflow(count, d, &count))
            fail(file, ref + ": element count overflows 64 bits");
    }
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(dtype_size(t.dtype)), &bytes)) {
        fail(file, ref + ": byte size overflows 64 bits");
    }
    if (bytes != t.end - t.begin) {
        fail(file, ref + ": shape " + shape.dump() + " of " + dtype_name(t.dtype) + " needs " +
                       std::to_string(bytes) + " bytes but data_offsets span " +
                       std::to_string(t.end - t.begin));
    }
    return t;
}

}  // namespace

std::uint64_t TensorInfo::numel() const {
    std::uint64_t n = 1;
    for (std::uint64_t d : shape) n *= d;
    return n;
}

Header parse_header(std::span<const std::uint8_t> file, const std::string& file_name,
                    const ReadLimits& limits) {
    if (file.size() < 8) {
        fail(file_name, "too short for a safetensors file (" + std::to_string(file.size()) +
                            " bytes; the header size alone takes 8)");
    }
    const std::uint64_t n = read_u64_le(file.data());
    if (n > limits.max_header_bytes) {
        fail(file_name, "header size " + std::to_string(n) + " at offset 0 exceeds the cap of " +
                            std::to_string(limits.max_header_bytes) + " bytes");
    }
    if (n > file.size() - 8) {
        fail(file_name, "header size " + std::to_string(n) + " runs past the end of the file (" +
                            std::to_string(file.size()) + " bytes)");
    }
    if (n < 2 || file[8] != '{') fail(file_name, "the header at offset 8 does not start with '{'");
    const char* begin = reinterpret_cast<const char*>(file.data() + 8);
    std::set<std::string> seen;
    std::string duplicate;
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(
            begin, begin + n,
            [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
                if (depth == 1 && event == nlohmann::json::parse_event_t::key &&
                    duplicate.empty()) {
                    const auto key = parsed.get<std::string>();
                    if (!seen.insert(key).second) duplicate = key;
                }
                return true;
            });
    } catch (const nlohmann::json::parse_error& e) {
        fail(file_name, "header is not valid JSON (byte " + std::to_string(8 + e.byte) +
                            " of the file): " + e.what());
    } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range: a number overflows
        fail(file_name, std::string("header is not usable JSON: ") + e.what());
    }
    if (!duplicate.empty()) fail(file_name, "name '" + duplicate + "' appears twice in the header");
    if (!json.is_object()) fail(file_name, "header is not a JSON object");

    Header header;
    header.data_start = 8 + n;
    const std::uint64_t data_size = file.size() - header.data_start;
    for (const auto& [name, entry] : json.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) fail(file_name, "__metadata__ must be an object of strings");
            for (const auto& [key, value] : entry.items()) {
                if (!value.is_string())
                    fail(file_name, "__metadata__['" + key + "'] must be a string");
                header.metadata[key] = value.get<std::string>();
            }
            continue;
        }
        if (name.empty()) fail(file_name, "a tensor has an empty name");
        header.tensors.push_back(parse_entry(file_name, name, entry));
    }
    std::sort(header.tensors.begin(), header.tensors.end(),
              [](const TensorInfo& a, const TensorInfo& b) {
                  return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
              });
    std::uint64_t expect = 0;
    for (const auto& t : header.tensors) {
        if (t.begin < expect)
            fail(file_name, tensor_ref(t.name) + ": data_offsets [" + std::to_string(t.begin) +
                                ", " + std::to_string(t.end) + ") overlap the previous tensor");
        if (t.begin > expect)
            fail(file_name, tensor_ref(t.name) + ": data_offsets begin " + std::to_string(t.begin) +
                                " leaves a hole after offset " + std::to_string(expect));
        if (t.end > data_size)
            fail(file_name, tensor_ref(t.name) + ": data_offsets end " + std::to_string(t.end) +
                                " is past the data buffer (" + std::to_string(data_size) +
                                " bytes)");
        expect = t.end;
    }
    if (expect != data_size) {
        fail(file_name, "the data buffer has " + std::to_string(data_size - expect) +
                            " bytes after the last tensor");
    }
    return header;
}

// ---- SafetensorsFile ----------------------------------------------------------------

SafetensorsFile SafetensorsFile::open(const std::string& path, const ReadLimits& limits) {
    SafetensorsFile f;
    f.path_ = path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        ::close(fd);
        fail(path, std::string("cannot stat: ") + std::strerror(errno));
    }
    f.size_ = static_cast<std::size_t>(st.st_size);
    if (f.size_ > 0) {
        void* map = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            ::close(fd);
            fail(path, std::string("cannot map: ") + std::strerror(errno));
        }
        f.map_ = static_cast<const std::uint8_t*>(map);
    }
    f.fd_ = fd;                                      // kept for read_bytes
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // a larger read-ahead window
    f.header_ = parse_header({f.map_, f.size_}, path, limits);
    for (std::size_t i = 0; i < f.header_.tensors.size(); ++i)
        f.index_[f.header_.tensors[i].name] = i;
    return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(std::exchange(o.fd_, -1)),
      map_(std::exchange(o.map_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      header_(std::move(o.header_)),
      index_(std::move(o.index_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
    if (this != &o) {
        if (map_) munmap(const_cast<std::uint8_t*>(map_), size_);
        if (fd_ >= 0) ::close(fd_);
        path_ = std::move(o.path_);
        fd_ = std::exchange(o.fd_, -1);
        map_ = std::exchange(o.map_, nullptr);
        size_ = std::exchange(o.size_, 0);
        header_ = std::move(o.header_);
        index_ = std::move(o.index_);
    }
    return *this;
}

SafetensorsFile::~SafetensorsFile() {
    if (map_) munmap(const_cast<std::uint8_t*>(map_), size_);
    if (fd_ >= 0) ::close(fd_);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

const TensorInfo& SafetensorsFile::at(const std::string& name) const {
    const TensorInfo* t = find(name);
    if (!t) fail(path_, "no tensor named '" + name + "'");
    return *t;
}

std::span<const std::uint8_t> SafetensorsFile::raw(const TensorInfo& t) const {
    return {map_ + header_.data_start + t.begin, static_cast<std::size_t>(t.bytes())};
}

void SafetensorsFile::will_need(const TensorInfo& t) const {
    if (t.bytes() > 0)
        posix_fadvise(fd_, static_cast<off_t>(header_.data_start + t.begin),
                      static_cast<off_t>(t.bytes()), POSIX_FADV_WILLNEED);
}

void SafetensorsFile::read_bytes(const TensorInfo& t, std::uint64_t offset,
                                 std::span<std::uint8_t> out) const {
    if (offset > t.bytes() || out.size() > t.bytes() - offset)
        fail(path_, tensor_ref(t.name) + ": bytes [" + std::to_string(offset) + ", " +
                        std::to_string(offset + out.size()) + ") are outside its " +
                        std::to_string(t.bytes()));
    const std::uint64_t at = header_.data_start + t.begin + offset;
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t got =
            ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(at + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            fail(path_, tensor_ref(t.name) + ": cannot read at file offset " +
                            std::to_string(at + done) + ": " +
                            (got < 0 ? std::strerror(errno) : "the file ended (truncated?)"));
        done += static_cast<std::size_t>(got);
    }
}

void SafetensorsFile::read_f32(const TensorInfo& t, std::span<float> out) const {
    if (!dtype_is_float(t.dtype))
        fail(path_, tensor_ref(t.name) + ": dtype " + dtype_name(t.dtype) +
                        " is not a floating-point type");
    if (out.size() != t.numel())
        fail(path_, tensor_ref(t.name) + ": output holds " + std::to_string(out.size()) +
                        " values, the tensor " + std::to_string(t.numel()));
    to_f32(t.dtype, raw(t).data(), out.size(), out.data());
}

std::vector<float> SafetensorsFile::read_f32(const TensorInfo& t) const {
    std::vector<float> out(t.numel());
    read_f32(t, out);
    return out;
}

// ---- SafetensorsWriter ----------------------------------------------------------------

void SafetensorsWriter::add(const std::string& name, DType dtype, std::vector<std::uint64_t> shape,
                            std::span<const std::uint8_t> bytes) {
    if (name.empty() || name == "__metadata__")
        throw std::invalid_argument("tensor name '" + name + "' is not allowed");
    for (const auto& e : entries_) {
        if (e.name == name) throw std::invalid_argument("tensor '" + name + "' added twice");
    }
    std::uint64_t n = 1;
    for (auto d : shape) n *= d;
    if (n * dtype_size(dtype) != bytes.size()) {
        throw std::invalid_argument("tensor '" + name + "': " + std::to_string(bytes.size()) +
                                    " bytes for " + std::to_string(n) + " elements of " +
                                    dtype_name(dtype));
    }
    entries_.push_back({name, dtype, std::move(shape), {bytes.begin(), bytes.end()}});
    data_bytes_ += bytes.size();
}

void SafetensorsWriter::add_f32(const std::string& name, std::vector<std::uint64_t> shape,
                                std::span<const float> values, DType stored) {
    const auto bytes = from_f32(stored, values);
    add(name, stored, std::move(shape), bytes);
}

void require_free_space(const std::string& path, std::uint64_t bytes) {
    fs::path dir = fs::absolute(fs::path(path)).parent_path();
    std::error_code ec;
    while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.parent_path())
        dir = dir.parent_path();
    const fs::space_info space = fs::space(dir, ec);
    if (ec || space.available >= bytes) return;  // a file system that cannot tell: try
    constexpr double kMB = 1e6;
    char what[160];
    std::snprintf(what, sizeof what,
                  "needs %.1f MB, but its file system has only %.1f MB free: free some space "
                  "(or write elsewhere), then resume",
                  static_cast<double>(bytes) / kMB, static_cast<double>(space.available) / kMB);
    fail(path, what);
}

namespace {
void write_file(const std::string& path, const std::vector<const void*>& parts_data,
                const std::vector<std::size_t>& parts_size) {
    std::uint64_t total = 0;
    for (std::size_t n : parts_size) total += n;
    require_free_space(path, total);
    const std::string tmp = path + ".tmp";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(tmp, std::string("cannot open for writing: ") + std::strerror(errno));
    for (std::size_t i = 0; i < parts_data.size(); ++i) {
        out.write(static_cast<const char*>(parts_data[i]),
                  static_cast<std::streamsize>(parts_size[i]));
    }
    out.close();
    if (!out) {
        std::error_code ec;
        fs::remove(tmp, ec);  // a part-written file only takes the space that is short
        fail(tmp, "write failed (disk full?)");
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) fail(path, "cannot rename the finished file into place: " + ec.message());
}

// Header JSON for entries [first, last) laid out contiguously, padded to 8-byte alignment.
template <class Entries>
std::string header_text(const Entries& entries, std::size_t first, std::size_t last,
                        const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    if (!metadata.empty()) h["__metadata__"] = metadata;
    std::uint64_t offset = 0;
    for (std::size_t i = first; i < last; ++i) {
        const auto& e = entries[i];
        h[e.name] = {{"dtype", dtype_name(e.dtype)},
                     {"shape", e.shape},
                     {"data_offsets", {offset, offset + e.bytes.size()}}};
        offset += e.bytes.size();
    }
    std::string text = h.dump();
    while ((8 + text.size()) % 8 != 0) text += ' ';
    return text;
}
}  // namespace

void SafetensorsWriter::write(const std::string& path) const {
    const std::string text = header_text(entries_, 0, entries_.size(), metadata_);
    std::uint8_t size[8];
    write_u64_le(text.size(), size);
    std::vector<const void*> data = {size, text.data()};
    std::vector<std::size_t> sizes = {8, text.size()};
    for (const auto& e : entries_) {
        data.push_back(e.bytes.data());
        sizes.push_back(e.bytes.size());
    }
    write_file(path, data, sizes);
}

std::vector<std::string> SafetensorsWriter::write_sharded(const std::string& dir,
                                                          std::uint64_t max_shard_bytes) const {
    fs::create_directories(dir);
    std::vector<std::pair<std::size_t, std::size_t>> shards;  // [first, last)
    std::size_t first = 0;
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (i > first && bytes + entries_[i].bytes.size() > max_shard_bytes) {
            shards.emplace_back(first, i);
            first = i;
            bytes = 0;
        }
        bytes += entries_[i].bytes.size();
    }
    shards.emplace_back(first, entries_.size());
    std::vector<std::string> written;
    if (shards.size() == 1) {
        write((fs::path(dir) / "model.safetensors").string());
        return {(fs::path(dir) / "model.safetensors").string()};
    }
    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    char name[64];
    for (std::size_t s = 0; s < shards.size(); ++s) {
        std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
        SafetensorsWriter shard;
        shard.metadata_ = metadata_;
        for (std::size_t i = shards[s].first; i < shards[s].second; ++i) {
            const auto& e = entries_[i];
            shard.add(e.name, e.dtype, e.shape, e.bytes);
            weight_map[e.name] = name;
        }
        const std::string path = (fs::path(dir) / name).string();
        shard.write(path);
        written.push_back(path);
    }
    nlohmann::ordered_json index = {{"metadata", {{"total_size", data_bytes_}}},
                                    {"weight_map", weight_map}};
    const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
    const std::string text = index.dump(2) + "\n";
    write_file(index_path, {text.data()}, {text.size()});
    written.push_back(index_path);
    return written;
}

}  // namespace compatbench::formats
