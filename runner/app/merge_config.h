// The merge YAML of `compatbench merge` and `compatbench screen`: mergekit's configuration
// format (docs/mergekit.md: what is supported, how, and what is refused), and
// compatbench's own operators (dare, prism, prism_hard, norm_matched) in the same shape.
// Every key is checked; one that is not supported is refused by name, with the file, line
// and column (ConfigError).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "merging/mergekit.h"

namespace compatbench {

struct MergeSpec {
    std::string file;
    merging::mergekit::Config config;  // models (resolved paths), base, sources, parameters
    std::vector<std::string> written;  // each of config.models as the YAML names it
    // Models given as BASE+ADAPTER: config.models[model] is "BASE+ADAPTER" until the merge
    // applies the adapter into a scratch folder and puts that folder there.
    struct Lora {
        std::size_t model = 0;
        std::string base, adapter;
    };
    std::vector<Lora> loras;
    bool mergekit = false;           // one of mergekit's methods, else compatbench's own
    merging::MergeParams params;     // compatbench's own operators (one set for all tensors)
    std::vector<std::string> scope;  // compatbench's own operators
    std::optional<formats::DType> out_dtype;  // out_dtype, else dtype (config.json's)
    bool out_dtype_given = false;             // out_dtype itself (every tensor written in it)
    std::optional<formats::DType> dtype;      // dtype: what mergekit converts inputs to
    std::optional<std::size_t> donor;         // where config and tokenizer files come from
    std::optional<double> shard_mb;
    nlohmann::json parameters;          // as written, for the output's metadata
    std::vector<std::string> warnings;  // accepted, with no effect: said once, by rank 0
};

MergeSpec parse_merge_spec(const std::string& path);

// Which of config.models the merge reads (config.py's referenced_models: the base and every
// source; not a tokenizer_source donor that is none of them).
std::vector<bool> referenced_models(const MergeSpec& spec);

// The merged models besides the base (compatbench's own operators; mergekit's plan
// its sources itself).
std::vector<std::string> merged_model_paths(const MergeSpec& spec);

}  // namespace compatbench
