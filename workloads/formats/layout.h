// A safetensors checkpoint written tensor by tensor: the layout (names, dtypes, shapes,
// shards) is fixed first, the files are created with their headers at full size, and each
// tensor's bytes are then written at their offset by whoever computed them (pwrite), in any
// order, from any process. Memory stays at one tensor, whatever the model size.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "formats/safetensors.h"

namespace compatbench::formats {

class CheckpointLayout {
  public:
    void add(const std::string& name, DType dtype, std::vector<std::uint64_t> shape);
    void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

    // Assigns tensors to shards of at most `max_shard_bytes` of data (a larger tensor gets
    // a shard of its own) under `dir`: model.safetensors when one shard suffices, else
    // model-0000k-of-0000n.safetensors and model.safetensors.index.json. Deterministic: every
    // process that plans the same tensors gets the same files and offsets.
    void plan(const std::string& dir, std::uint64_t max_shard_bytes);
    // Writes every shard's header, sizes the files and writes the index (one process).
    void create() const;
    // Writes tensor `index`'s bytes (numel x dtype size) at its offset.
    void write(std::size_t index, std::span<const std::uint8_t> bytes) const;

    // Where tensor `index`'s bytes go.
    struct Place {
        std::string path;
        std::uint64_t offset = 0, bytes = 0;
        DType dtype = DType::F32;
    };
    Place place(std::size_t index) const;

    std::size_t size() const { return tensors_.size(); }
    const std::vector<std::string>& files() const { return files_; }

  private:
    struct Tensor {
        std::string name;
        DType dtype;
        std::vector<std::uint64_t> shape;
        std::uint64_t bytes = 0;
        std::size_t file = 0;
        std::uint64_t offset = 0;  // absolute, in the file
    };
    std::vector<Tensor> tensors_;
    std::map<std::string, std::string> metadata_;
    std::vector<std::string> files_;
    std::vector<std::string> headers_;  // per file: the 8-byte size + JSON + padding
    std::vector<std::uint64_t> file_sizes_;
    std::string index_path_, index_text_;
};

// Writes one tensor of a layout in pieces, in order, through a buffer (one pwrite per
// `buffer_bytes`), the file open throughout. finish() checks that every byte came. The
// buffer is the thread's, reused by every writer (one writer at a time per thread), and
// small enough by default to stay in the core's cache between conversion and pwrite.
class TensorWriter {
  public:
    TensorWriter(const CheckpointLayout& layout, std::size_t index,
                 std::size_t buffer_bytes = std::size_t{256} << 10);
    ~TensorWriter();
    TensorWriter(const TensorWriter&) = delete;
    TensorWriter& operator=(const TensorWriter&) = delete;
    // Appends float32 values converted to the tensor's dtype.
    void append(std::span<const float> values);
    void finish();

  private:
    void flush();
    static std::vector<std::uint8_t>& thread_buffer();
    CheckpointLayout::Place place_;
    int fd_ = -1;
    std::vector<std::uint8_t>& buffer_;
    std::size_t capacity_;
    std::size_t used_ = 0;
    std::uint64_t written_ = 0;
};

}  // namespace compatbench::formats
