#include "formats/tensor_reader.h"

#include <algorithm>
#include <string>

namespace compatbench::formats {

TensorReader::TensorReader(const SafetensorsFile& file, const TensorInfo& tensor,
                           std::vector<std::uint8_t>& buffer)
    : file_(&file),
      tensor_(&tensor),
      buffer_(&buffer),
      numel_(tensor.numel()),
      size_(dtype_size(tensor.dtype)) {}

const std::uint8_t* TensorReader::elements(std::size_t begin, std::size_t count) {
    if (begin > numel_ || count > numel_ - begin)
        throw FormatError(file_->path() + ": tensor '" + tensor_->name + "': elements [" +
                          std::to_string(begin) + ", " + std::to_string(begin + count) +
                          ") are outside its " + std::to_string(numel_));
    if (begin < first_ || begin + count > last_) {
        const std::size_t n = std::min(numel_ - begin, std::max(count, kChunkBytes / size_));
        if (buffer_->size() < n * size_) buffer_->resize(n * size_);
        file_->read_bytes(*tensor_, begin * size_, {buffer_->data(), n * size_});
        first_ = begin;
        last_ = begin + n;
    }
    return buffer_->data() + (begin - first_) * size_;
}

}  // namespace compatbench::formats
