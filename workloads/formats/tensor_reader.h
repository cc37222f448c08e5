// A tensor's elements read in order, a chunk of about 256 KiB at a time, into a buffer the
// caller reuses across tensors (SafetensorsFile::read_bytes, i.e. pread). The streaming
// passes over checkpoints (interference, merge) read their inputs this way: the kernel
// copies page-cache pages into the same few hot pages of the process, where touching a
// fresh mapping costs a fault and a new page-table entry every 4 KiB (measured in the
// project's bench/README.md: mapped first touches ran several times slower).
#pragma once

#include <cstdint>
#include <vector>

#include "formats/safetensors.h"

namespace compatbench::formats {

class TensorReader {
  public:
    static constexpr std::size_t kChunkBytes = std::size_t{256} << 10;

    TensorReader(const SafetensorsFile& file, const TensorInfo& tensor,
                 std::vector<std::uint8_t>& buffer);
    std::size_t numel() const { return numel_; }
    DType dtype() const { return tensor_->dtype; }
    // The raw little-endian bytes of elements [begin, begin + count), valid until the next
    // call: from the chunk held, or else a new chunk of max(count, a chunk's worth) elements
    // read from `begin` on. Chunks of a power-of-two element count, so blocks of a
    // power-of-two size up to 16,384 that start at 0 never straddle two chunks.
    const std::uint8_t* elements(std::size_t begin, std::size_t count);

  private:
    const SafetensorsFile* file_;
    const TensorInfo* tensor_;
    std::vector<std::uint8_t>* buffer_;
    std::size_t numel_, size_, first_ = 0, last_ = 0;  // elements [first_, last_) held
};

}  // namespace compatbench::formats
