#include "formats/layout.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>

namespace compatbench::formats {

namespace fs = std::filesystem;

namespace {
void write_all(int fd, const std::uint8_t* data, std::uint64_t size, std::uint64_t offset,
               const std::string& path) {
    while (size > 0) {
        const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
        if (n < 0) {
            if (errno == EINTR) continue;
            throw FormatError(path + ": cannot write: " + std::strerror(errno));
        }
        data += n;
        size -= static_cast<std::uint64_t>(n);
        offset += static_cast<std::uint64_t>(n);
    }
}
}  // namespace

void CheckpointLayout::add(const std::string& name, DType dtype, std::vector<std::uint64_t> shape) {
    Tensor t{name, dtype, std::move(shape)};
    std::uint64_t numel = 1;
    for (auto d : t.shape) numel *= d;
    t.bytes = numel * dtype_size(dtype);
    tensors_.push_back(std::move(t));
}

void CheckpointLayout::plan(const std::string& dir, std::uint64_t max_shard_bytes) {
    std::vector<std::pair<std::size_t, std::size_t>> shards;  // [first, last)
    std::size_t first = 0;
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
        if (i > first && bytes + tensors_[i].bytes > max_shard_bytes) {
            shards.emplace_back(first, i);
            first = i;
            bytes = 0;
        }
        bytes += tensors_[i].bytes;
    }
    shards.emplace_back(first, tensors_.size());
    files_.clear();
    headers_.clear();
    file_sizes_.clear();
    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    std::uint64_t total = 0;
    for (std::size_t s = 0; s < shards.size(); ++s) {
        char name[64];
        if (shards.size() == 1)
            std::snprintf(name, sizeof name, "model.safetensors");
        else
            std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1,
                          shards.size());
        nlohmann::ordered_json header = nlohmann::ordered_json::object();
        if (!metadata_.empty()) header["__metadata__"] = metadata_;
        std::uint64_t offset = 0;
        for (std::size_t i = shards[s].first; i < shards[s].second; ++i) {
            auto& t = tensors_[i];
            header[t.name] = {{"dtype", dtype_name(t.dtype)},
                              {"shape", t.shape},
                              {"data_offsets", {offset, offset + t.bytes}}};
            t.file = s;
            t.offset = offset;  // data-relative until the header length is known
            offset += t.bytes;
            weight_map[t.name] = name;
        }
        std::string text = header.dump();
        text.append((8 - text.size() % 8) % 8, ' ');
        std::string head(8, '\0');
        for (int b = 0; b < 8; ++b)
            head[static_cast<std::size_t>(b)] = static_cast<char>((text.size() >> (8 * b)) & 0xff);
        head += text;
        for (std::size_t i = shards[s].first; i < shards[s].second; ++i)
            tensors_[i].offset += head.size();
        files_.push_back((fs::path(dir) / name).string());
        file_sizes_.push_back(head.size() + offset);
        headers_.push_back(std::move(head));
        total += offset;
    }
    index_path_.clear();
    if (shards.size() > 1) {
        index_path_ = (fs::path(dir) / "model.safetensors.index.json").string();
        nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}},
                                        {"weight_map", weight_map}};
        index_text_ = index.dump(2) + "\n";
    }
}

void CheckpointLayout::create() const {
    if (!files_.empty())  // every file of a layout lies in one folder
        require_free_space(files_.front(), std::accumulate(file_sizes_.begin(), file_sizes_.end(),
                                                           std::uint64_t{0}));
    for (std::size_t f = 0; f < files_.size(); ++f) {
        fs::create_directories(fs::path(files_[f]).parent_path());
        const int fd = ::open(files_[f].c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) throw FormatError(files_[f] + ": cannot create: " + std::strerror(errno));
        try {
            write_all(fd, reinterpret_cast<const std::uint8_t*>(headers_[f].data()),
                      headers_[f].size(), 0, files_[f]);
            if (::ftruncate(fd, static_cast<off_t>(file_sizes_[f])) != 0)
                throw FormatError(files_[f] + ": cannot size: " + std::strerror(errno));
        } catch (...) {
            ::close(fd);
            throw;
        }
        ::close(fd);
    }
    if (!index_path_.empty()) {
        const int fd = ::open(index_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) throw FormatError(index_path_ + ": cannot create: " + std::strerror(errno));
        write_all(fd, reinterpret_cast<const std::uint8_t*>(index_text_.data()), index_text_.size(),
                  0, index_path_);
        ::close(fd);
    }
}

void CheckpointLayout::write(std::size_t index, std::span<const std::uint8_t> bytes) const {
    const Tensor& t = tensors_.at(index);
    if (bytes.size() != t.bytes)
        throw std::invalid_argument(t.name + ": " + std::to_string(bytes.size()) +
                                    " bytes, the layout has " + std::to_string(t.bytes));
    const std::string& path = files_.at(t.file);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw FormatError(path + ": cannot open for writing: " + std::strerror(errno));
    try {
        write_all(fd, bytes.data(), bytes.size(), t.offset, path);
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
}

CheckpointLayout::Place CheckpointLayout::place(std::size_t index) const {
    const Tensor& t = tensors_.at(index);
    return {files_.at(t.file), t.offset, t.bytes, t.dtype};
}

std::vector<std::uint8_t>& TensorWriter::thread_buffer() {
    thread_local std::vector<std::uint8_t> buffer;
    return buffer;
}

TensorWriter::TensorWriter(const CheckpointLayout& layout, std::size_t index,
                           std::size_t buffer_bytes)
    : place_(layout.place(index)), buffer_(thread_buffer()), capacity_(buffer_bytes) {
    if (buffer_.size() < capacity_) buffer_.resize(capacity_);
    fd_ = ::open(place_.path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0)
        throw FormatError(place_.path + ": cannot open for writing: " + std::strerror(errno));
}

TensorWriter::~TensorWriter() {
    if (fd_ >= 0) ::close(fd_);
}

void TensorWriter::append(std::span<const float> values) {
    const std::size_t size = dtype_size(place_.dtype);
    while (!values.empty()) {
        const std::size_t room = (capacity_ - used_) / size;
        if (room == 0) {
            flush();
            continue;
        }
        const std::size_t n = std::min(room, values.size());
        from_f32(place_.dtype, values.first(n), buffer_.data() + used_);
        used_ += n * size;
        values = values.subspan(n);
    }
}

void TensorWriter::flush() {
    if (written_ + used_ > place_.bytes)
        throw std::invalid_argument(place_.path + ": more bytes than the tensor has");
    write_all(fd_, buffer_.data(), used_, place_.offset + written_, place_.path);
    written_ += used_;
    used_ = 0;
}

void TensorWriter::finish() {
    flush();
    if (written_ != place_.bytes)
        throw std::invalid_argument(place_.path + ": " + std::to_string(written_) +
                                    " bytes written of a tensor's " + std::to_string(place_.bytes));
}

}  // namespace compatbench::formats
