// A PEFT LoRA adapter applied to its base, as mergekit's `model: BASE+ADAPTER` references do
// (mergekit's common.py ModelReference.merged at the commit docs/mergekit.md cites: the base
// loaded by transformers in float32 and peft's merge_and_unload, W + (lora_alpha / r)·B·A,
// transposed with fan_in_fan_out, saved). The adapter folder holds adapter_config.json and
// adapter_model.safetensors; its tensors `base_model.model.<module>.lora_A.weight` [r, in] and
// `….lora_B.weight` [out, r] change `<module>.weight` of the base. What peft would do and
// this does not is refused by name (FormatError naming the file and the key): DoRA
// (use_dora), rsLoRA (use_rslora), trained biases (bias other than "none"), modules_to_save,
// rank_pattern and alpha_pattern, other peft types, and adapter tensors that are no lora_A /
// lora_B pair of a base matrix (embedding or convolution LoRA).
#pragma once

#include <map>
#include <string>

#include "formats/safetensors.h"

namespace compatbench::formats {

struct LoraAdapter {
    std::string folder;
    double scale = 1.0;   // lora_alpha / r
    std::uint64_t r = 0;  // the rank adapter_config.json gives: every lora_A/lora_B pair's
    bool fan_in_fan_out = false;
    std::map<std::string, std::pair<std::string, std::string>> pairs;  // base tensor -> A, B
};

// Reads and checks the adapter in `folder` against the base checkpoint's tensors.
LoraAdapter read_lora_adapter(const std::string& folder, const Checkpoint& base);

// Writes the base with the adapter applied into `out` (a folder: model.safetensors, and
// config.json of a base folder with torch_dtype float32, as transformers saves the merged
// model): floating-point tensors as F32, the others as they are. Memory stays at a tensor.
void write_lora_merged(const Checkpoint& base, const LoraAdapter& adapter, const std::string& out);

}  // namespace compatbench::formats
