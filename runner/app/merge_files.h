// The files a merge writes beside its safetensors, as mergekit writes them
// (docs/mergekit.md "The output folder"): config.json of the base (else the first model), the
// tokenizer files of the donor, mergekit_config.yml (the merge YAML as given) and a README.md
// model card (mergekit's card.py).
#pragma once

#include <filesystem>
#include <string>

#include "app/merge_config.h"
#include "merging/mergekit.h"

namespace compatbench {

// Before anything is merged: ConfigError (exit 2) for a tokenizer_source that is not the
// identity, and for a donor whose tokenizer mergekit would rebuild with transformers rather
// than copy (tokenizer files, but not tokenizer_config.json with tokenizer.json or
// tokenizer.model), unless copy_tokenizer is off. A donor with no tokenizer files at all
// adds a warning (the output then has none; so does mergekit's, after an error it logs).
void check_tokenizer(MergeSpec& spec, bool copy_tokenizer);

// Writes the side files into `dir` (the staging folder of the output `out`).
void write_side_files(const MergeSpec& spec, const merging::mergekit::Plan& plan,
                      const std::filesystem::path& dir, bool copy_tokenizer,
                      const std::string& out);

// mergekit's card.py generate_card: the card of a merge named `name`.
std::string model_card(const MergeSpec& spec, const std::string& name, const std::string& yaml);

}  // namespace compatbench
