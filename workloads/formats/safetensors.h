// safetensors: reading and writing, treating every file as untrusted.
//
// The format (https://huggingface.co/docs/safetensors, the reference implementation's
// checks followed here):
//   bytes [0, 8)        N, the header size: unsigned 64-bit little-endian
//   bytes [8, 8 + N)    the header: UTF-8 JSON object, possibly padded with trailing spaces
//                       { "<tensor name>": {"dtype": "F32", "shape": [2, 3],
//                                           "data_offsets": [BEGIN, END]}, ...,
//                         "__metadata__": {"<key>": "<string value>", ...} }   (optional)
//   bytes [8 + N, EOF)  the data buffer; BEGIN/END are offsets into it, END exclusive.
// Tensors are little-endian, row-major (C order). Their byte ranges must tile the buffer
// exactly: no overlap, no hole, nothing left over. END - BEGIN must equal the element
// count (the product of the shape; 1 for a scalar []) times the dtype's size.
//
// Checks on reading, each failure naming the file and the tensor or field: the file holds
// the 8-byte size; N is at most the header cap (100 MiB) and inside the file; the header
// is a JSON object of valid UTF-8; no name appears twice; each entry has exactly dtype,
// shape and data_offsets of the right JSON types; the dtype is one we read; the element
// count and byte size do not overflow 64 bits; offsets lie inside the buffer and tile it;
// __metadata__ maps strings to strings.
//
// Writing pads the header with spaces so that the data buffer starts 8-byte aligned, and
// writes to a temporary name that is renamed into place when complete.
//
// Sharded checkpoints: a folder with model.safetensors.index.json
//   {"metadata": {...}, "weight_map": {"<tensor name>": "model-00001-of-00002.safetensors"}}
// or with a single model.safetensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace compatbench::formats {

// A malformed or unreadable file; the message names the file and what is wrong.
class FormatError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

enum class DType { BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64 };

const char* dtype_name(DType dtype);
std::size_t dtype_size(DType dtype);
bool dtype_is_float(DType dtype);
// Throws FormatError for a name outside the whitelist above.
DType dtype_from_name(const std::string& name);

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin = 0;  // offsets into the data buffer
    std::uint64_t end = 0;
    std::uint64_t numel() const;
    std::uint64_t bytes() const { return end - begin; }
};

struct Header {
    std::vector<TensorInfo> tensors;  // in data-offset order
    std::map<std::string, std::string> metadata;
    std::uint64_t data_start = 0;  // 8 + N
};

struct ReadLimits {
    std::uint64_t max_header_bytes = 100ull << 20;
};

// Parses and checks the header of a whole file held in `file` (pure; used by the fuzzer).
Header parse_header(std::span<const std::uint8_t> file, const std::string& file_name,
                    const ReadLimits& limits = {});

// A safetensors file mapped into memory (read-only; nothing is copied).
class SafetensorsFile {
  public:
    static SafetensorsFile open(const std::string& path, const ReadLimits& limits = {});
    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    ~SafetensorsFile();

    const std::string& path() const { return path_; }
    const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    const TensorInfo* find(const std::string& name) const;
    // Throws FormatError naming the file when there is no such tensor.
    const TensorInfo& at(const std::string& name) const;
    // The tensor's raw little-endian bytes inside the mapping.
    std::span<const std::uint8_t> raw(const TensorInfo& tensor) const;
    // Asks the kernel to read the tensor ahead (posix_fadvise WILLNEED): a cold read then
    // streams from the disk while the tensor before is being worked on.
    void will_need(const TensorInfo& tensor) const;
    // Copies the tensor's bytes [offset, offset + out.size()) into `out` (pread). Streaming
    // passes read this way, a chunk at a time into a reused buffer: the kernel copies from
    // the page cache, where a first touch of each mapped page costs several times more.
    // FormatError naming the file, tensor and offset when the range is outside the tensor
    // or the file cannot be read there (shortened since it was opened).
    void read_bytes(const TensorInfo& tensor, std::uint64_t offset,
                    std::span<std::uint8_t> out) const;
    // The tensor as float32 (from F32, F16, BF16 or F64; FormatError for other dtypes).
    void read_f32(const TensorInfo& tensor, std::span<float> out) const;
    std::vector<float> read_f32(const TensorInfo& tensor) const;

  private:
    SafetensorsFile() = default;
    std::string path_;
    int fd_ = -1;
    const std::uint8_t* map_ = nullptr;
    std::size_t size_ = 0;
    Header header_;
    std::map<std::string, std::size_t> index_;
};

// Converts `count` values of `dtype` at `src` (little-endian, any alignment) to float32.
void to_f32(DType dtype, const std::uint8_t* src, std::size_t count, float* out);
// Converts float32 values to `dtype` bytes (F32, F16, BF16, F64), rounding to nearest even.
std::vector<std::uint8_t> from_f32(DType dtype, std::span<const float> values);
// The same into `out` (values.size() × dtype_size(dtype) bytes).
void from_f32(DType dtype, std::span<const float> values, std::uint8_t* out);

// Throws FormatError naming `path` when the file system that will hold it has less than
// `bytes` free: a write that would run out of disk fails before it starts, saying so.
void require_free_space(const std::string& path, std::uint64_t bytes);

// Collects tensors and writes one safetensors file.
class SafetensorsWriter {
  public:
    // Copies `bytes`, which must be numel * dtype size long (std::invalid_argument if not,
    // or if the name is empty or repeated).
    void add(const std::string& name, DType dtype, std::vector<std::uint64_t> shape,
             std::span<const std::uint8_t> bytes);
    void add_f32(const std::string& name, std::vector<std::uint64_t> shape,
                 std::span<const float> values, DType stored = DType::F32);
    void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
    // Writes `path` (via `path`.tmp and a rename). Throws FormatError on I/O failure.
    void write(const std::string& path) const;
    // Writes model-0000k-of-0000n.safetensors shards of at most `max_shard_bytes` of data
    // each (a larger single tensor gets a shard of its own) and model.safetensors.index.json
    // into `dir`; a single shard is written as model.safetensors. Returns the files written.
    std::vector<std::string> write_sharded(const std::string& dir,
                                           std::uint64_t max_shard_bytes) const;

  private:
    struct Entry {
        std::string name;
        DType dtype;
        std::vector<std::uint64_t> shape;
        std::vector<std::uint8_t> bytes;
    };
    std::vector<Entry> entries_;
    std::map<std::string, std::string> metadata_;
    std::uint64_t data_bytes_ = 0;
};

// A checkpoint that may be sharded: PATH is a .safetensors file, or a folder holding
// model.safetensors.index.json (sharded) or model.safetensors.
class Checkpoint {
  public:
    static Checkpoint open(const std::string& path, const ReadLimits& limits = {});
    const std::string& path() const { return path_; }
    // Every tensor name, sorted.
    std::vector<std::string> names() const;
    const TensorInfo& info(const std::string& name) const;
    const SafetensorsFile& file_of(const std::string& name) const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

  private:
    std::string path_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, std::size_t> where_;  // tensor -> file
    std::map<std::string, std::string> metadata_;
};

// When either checkpoint is a folder with a config.json (Hugging Face's), both must have one
// and agree on the fields that shape the model (model_type, num_hidden_layers, hidden_size,
// intermediate_size, num_attention_heads, num_key_value_heads — defaulting to the heads —,
// vocab_size, tie_word_embeddings): a fine-tune of another size or vocabulary is not a
// fine-tune of this base. FormatError names the file and the key.
void check_same_config(const std::string& base, const std::string& other);

// ‖θ − θ0‖ / ‖θ0‖ over the floating-point tensors of `base` with two or more dimensions (its
// matrices: norms' weights near 1 that barely move would otherwise dominate ‖θ0‖; methods.md
// §3.3, unlike advise merge's §3.4 norm over every in-scope coordinate), read a chunk at a
// time; the tensors must match (checked before).
double relative_norm(const Checkpoint& base, const Checkpoint& other);

}  // namespace compatbench::formats
