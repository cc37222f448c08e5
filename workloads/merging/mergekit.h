// mergekit's merge configurations, planned as mergekit plans them (mergekit at commit
// a6e402884ba9bc30da7f23e8304a35f19485de95: config.py, plan.py, merge_methods/registry.py;
// docs/mergekit.md maps every feature). A parameter is a number, a boolean, a gradient (a
// list of numbers interpolated over a slice's layers) or a list of filters; it is looked up
// for a model in its source, its slice and the whole merge, in that order, else the method's
// default. Every tensor of the output is planned with its inputs and its own parameters
// before anything is read.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "merging/model_merge.h"

namespace compatbench::merging::mergekit {

struct Setting {
    enum class Kind { number, boolean, gradient, filters } kind = Kind::number;
    double number = 0.0;  // also a boolean's value (0 or 1)
    std::vector<double> gradient;
    std::vector<std::string> filters;  // with `values`: "" matches every tensor, as `*` does
    std::vector<Setting> values;
};
using Parameters = std::map<std::string, Setting>;

// config.py's evaluate_setting: the value for `tensor` at t in [0, 1], none when no filter
// matches (a filter matches when it is a substring of the tensor's name).
std::optional<double> evaluate(const Setting& s, const std::string& tensor, double t);

struct Source {
    std::size_t model = 0;                      // index into Config::models
    std::optional<std::pair<int, int>> layers;  // [first, last); none: all of the model's
    Parameters parameters;
};
struct Slice {
    std::vector<Source> sources;
    std::optional<std::size_t> base;  // a slice's own base_model
    Parameters parameters;
};

struct Config {
    std::string method;
    std::vector<std::string> models;  // every referenced model, its path
    std::optional<std::size_t> base;  // base_model
    std::vector<Source> listed;       // `models:` (empty with slices)
    std::vector<Slice> slices;        // `slices:`
    Parameters parameters;
    std::uint64_t seed = 0;  // the random masks of dare_* and della*
};

struct ParamDef {
    std::string name;
    bool boolean = false;
    std::optional<double> fallback;  // the default; none: required
};
struct MethodDef {
    std::string name;
    Method op = Method::generalized;
    Sparsify sparsify = Sparsify::none;
    bool consensus = false, normalize = false, rescale = false;
    bool uses_base = true;       // the base is θ0, not one of the merged models
    bool base_optional = false;  // uses_base when a base is given (multislerp)
    std::vector<ParamDef> global, per_model;
    std::vector<std::string> ignored;  // declared by mergekit for the method, never read
    std::string pretty, url;           // its pretty_name and reference_url (model cards)
};
// mergekit's method of that name (nullptr for one compatbench does not support).
const MethodDef* find_method(const std::string& name);
// The names find_method knows, comma-separated.
std::string method_list();

// What planning needs of one model: its tensor names and its number of layers.
struct ModelInfo {
    std::vector<std::string> names;
    int layers = 0;
};
// The layer of a tensor named `<prefix>.layers.N.<rest>` (also `.h.N.` and `.blocks.N.`).
std::optional<int> layer_of(const std::string& tensor);

struct Plan {
    std::vector<PlannedTensor> tensors;  // sorted by name; checkpoint = index into models
    int layers = 0;                      // the output's
    bool layers_changed = false;         // slices set the layer count (config.json's)
};
// std::invalid_argument naming the tensor and the parameter for what cannot be planned.
Plan plan(const Config& config, const std::vector<ModelInfo>& models);

}  // namespace compatbench::merging::mergekit
