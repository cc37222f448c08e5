// libFuzzer target: the safetensors header parser on arbitrary bytes. Build and run with
// tests/fuzz/run.sh (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>

#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto header = compatbench::formats::parse_header({data, size}, "fuzz");
        // Every accepted range must lie inside the input.
        for (const auto& t : header.tensors) {
            if (header.data_start + t.end > size) __builtin_trap();
        }
    } catch (const compatbench::formats::FormatError&) {
    }
    return 0;
}
