#include "merging/mergekit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <tuple>

namespace compatbench::merging::mergekit {

namespace {

// A layer's number in a tensor name: `….layers.N.…`, `….h.N.…`, `….blocks.N.…`.
const std::regex& layer_pattern() {
    static const std::regex re(R"((^|\.)(layers|h|blocks)\.(\d+)\.)");
    return re;
}

}  // namespace

std::optional<double> evaluate(const Setting& s, const std::string& tensor, double t) {
    switch (s.kind) {
        case Setting::Kind::number:
        case Setting::Kind::boolean:
            return s.number;
        case Setting::Kind::gradient: {  // interpolated between the two nearest points
            const auto& g = s.gradient;
            const double scaled = t * static_cast<double>(g.size() - 1);
            const auto i0 = static_cast<std::size_t>(scaled);
            const std::size_t i1 = std::min(g.size() - 1, i0 + 1);
            const double frac = scaled - static_cast<double>(i0);
            return (1 - frac) * g[i0] + frac * g[i1];
        }
        case Setting::Kind::filters:
            for (std::size_t i = 0; i < s.filters.size(); ++i) {
                const std::string& f = s.filters[i];
                if (f.empty() || f == "*" || tensor.find(f) != std::string::npos)
                    return evaluate(s.values[i], tensor, t);
            }
            return std::nullopt;
    }
    return std::nullopt;
}

std::optional<int> layer_of(const std::string& tensor) {
    std::smatch m;
    if (!std::regex_search(tensor, m, layer_pattern())) return std::nullopt;
    return std::stoi(m[3].str());
}

namespace {

// What stands before a layer tensor's number: one stack of layers per model is planned.
std::string stack_of(const std::string& tensor) {
    std::smatch m;
    return std::regex_search(tensor, m, layer_pattern()) ? m.prefix().str() + m[2].str() : "";
}

// Tensors outside the layers that come before them (plan.py's pre weights): the token and
// position embeddings (`embed_tokens`, GPT-2's `wte` and `wpe`), not GPT-NeoX's `embed_out`.
bool before_layers(const std::string& tensor) {
    if (tensor.find("embed_out") != std::string::npos) return false;
    for (const char* pre : {"embed", "wte.", "wpe."})
        if (tensor.find(pre) != std::string::npos) return true;
    return false;
}

// `tensor` with its layer number replaced by `layer`.
std::string with_layer(const std::string& tensor, int layer) {
    return std::regex_replace(tensor, layer_pattern(), "$1$2." + std::to_string(layer) + ".",
                              std::regex_constants::format_first_only);
}

// ConfigReader.parameter: the source's (for a model), the slice's, then the merge's.
std::optional<double> lookup(const Config& c, const Slice& slice, const Source* source,
                             const std::string& name, const std::string& tensor, double t) {
    for (const Parameters* p :
         {source ? &source->parameters : nullptr, &slice.parameters, &c.parameters}) {
        if (!p) continue;
        const auto it = p->find(name);
        if (it == p->end()) continue;
        if (auto v = evaluate(it->second, tensor, t)) return v;
    }
    return std::nullopt;
}

double value_of(const Config& c, const Slice& slice, const Source* source, const ParamDef& def,
                const std::string& tensor, double t, const std::string& model) {
    if (auto v = lookup(c, slice, source, def.name, tensor, t)) return *v;
    if (def.fallback) return *def.fallback;
    throw std::invalid_argument(tensor + ": parameter '" + def.name + "' is required by " +
                                c.method + (model.empty() ? "" : " for model " + model) +
                                " (mergekit requires it too)");
}

struct Planner {
    const Config& c;
    const MethodDef& def;
    const std::vector<ModelInfo>& info;
    Plan out;

    // Whether the slice's base is θ0 (for a method whose base is optional: when one is given).
    bool based(const Slice& s) const {
        return def.uses_base && (!def.base_optional || s.base || c.base);
    }

    std::size_t base_of(const Slice& s) const {
        const auto b = s.base ? s.base : c.base;
        if (!b) throw std::invalid_argument(c.method + " needs a base_model");
        for (const auto& src : s.sources)
            if (src.model == *b) return *b;
        throw std::invalid_argument(c.method + ": the base model " + c.models[*b] +
                                    " must be one of each slice's sources");
    }

    // One output tensor from `slice` at t: input j's tensor is `inputs[j]`.
    void add(const Slice& slice, const std::string& name, const std::vector<std::string>& inputs,
             double t) {
        PlannedTensor p;
        p.name = name;
        MergeParams& q = p.params;
        q.method = def.op;
        q.sparsify = def.sparsify;
        q.consensus = def.consensus;
        q.seed = c.seed;
        for (const auto& g : def.global) {
            const double v = value_of(c, slice, nullptr, g, name, t, "");
            if (g.name == "normalize") q.normalize = v != 0 ? Normalize::mean : Normalize::sum;
            if (g.name == "rescale") q.rescale = v != 0;
            if (g.name == "lambda") q.coef = v;
            if (g.name == "t") q.t = v;
            if (g.name == "select_topk" && v <= 0)  // sce_mask's zeros_like(tvs): a shape error
                throw std::invalid_argument(name + ": sce's select_topk " + std::to_string(v) +
                                            " keeps no coordinate, where mergekit fails");
            if (g.name == "select_topk") q.select_topk = v;
            if (g.name == "eps") q.eps = v;
            if (g.name == "normalize_weights")
                q.normalize = v != 0 ? Normalize::mean : Normalize::sum;
            if (g.name == "filter_wise") q.filter_wise = v != 0;
            if (g.name == "nuslerp_row_wise") q.row_wise = v != 0;
            if (g.name == "nuslerp_flatten") q.flatten = v != 0;
            if (g.name == "tol") q.tol = v;
            if (g.name == "epsilon") q.ram_epsilon = v;
            if (g.name == "r") q.ram_r = v;
            if (g.name == "alpha") q.ram_alpha = v;
            if (g.name == "max_iter" && (v != std::floor(v) || v < 0 || v > 1e6))
                throw std::invalid_argument(name + ": karcher's max_iter " + std::to_string(v) +
                                            " is not a whole number of iterations");
            if (g.name == "max_iter") q.max_iter = static_cast<int>(v);
        }
        const std::optional<std::size_t> base =
            based(slice) ? std::optional(base_of(slice)) : std::nullopt;
        q.has_base = base.has_value();
        for (std::size_t j = 0; j < slice.sources.size(); ++j) {
            const Source& src = slice.sources[j];
            const PlannedTensor::Input in{src.model, inputs[j]};
            if (base && src.model == *base) {
                p.base = in;
                continue;
            }
            if (p.models.empty() && !base) p.base = in;
            p.models.push_back(in);
            for (const auto& d : def.per_model) {
                const double v = value_of(c, slice, &src, d, inputs[j], t, c.models[src.model]);
                if (d.name == "weight") q.weights.push_back(v);
                if (d.name == "density") q.densities.push_back(v);
                if (d.name == "gamma") q.gammas.push_back(v);
                if (d.name == "epsilon") q.epsilons.push_back(v);
                if (d.name == "scale") q.scale = v;
            }
        }
        check(p);
        if (def.op == Method::slerp) p.models.insert(p.models.begin(), p.base);  // θ0 → θ1
        out.tensors.push_back(std::move(p));
    }

    void check(const PlannedTensor& p) const {
        const MergeParams& q = p.params;
        const std::size_t k = p.models.size();
        const auto fail = [&](const std::string& why) {
            throw std::invalid_argument(p.name + ": " + why);
        };
        if (def.op == Method::slerp && k != 1)
            fail("slerp merges the base with exactly one other model (mergekit's rule)");
        if (def.op == Method::model_stock && k < 2)
            fail("model_stock needs at least two models besides the base");
        if (def.op == Method::passthrough && k != 1)
            fail("passthrough takes exactly one model per slice");
        if (def.op == Method::nuslerp && !(k == 2 || (k == 1 && !q.has_base)))
            fail("nuslerp merges exactly two models besides the base, if any (mergekit's rule)");
        if (def.op == Method::nearswap && k != 1)
            fail("nearswap merges the base with exactly one other model (mergekit's rule)");
        if (def.op == Method::arcee_fusion && k != 1)
            fail("arcee_fusion merges the base with exactly one other model (mergekit's rule)");
        if (k == 0) fail("no model to merge besides the base");
        double total = 0;
        for (double w : q.weights) total += w;
        if ((def.op == Method::linear || def.op == Method::multislerp) &&
            q.normalize == Normalize::mean && total == 0)
            fail(def.name + ": the weights sum to 0 (mergekit would divide by it)");
        for (double d : q.densities)
            if (!(d >= 0)) fail("density " + std::to_string(d) + " is below 0");
        for (double g : q.gammas)
            if (!(g >= 0 && g <= 1)) fail("gamma " + std::to_string(g) + " is outside [0, 1]");
        for (std::size_t i = 0; i < q.epsilons.size(); ++i) {
            const double d = q.densities[i], e = q.epsilons[i];
            if (d < 1 && d > 0 && (d + e >= 1 || d - e <= 0))
                fail("DELLA needs density ± epsilon inside (0, 1), got density " +
                     std::to_string(d) + " and epsilon " + std::to_string(e));
        }
    }

    // mergekit's plan_slice: layer idx of every source, at t = idx / (n − 1).
    void plan_slice(const Slice& s) {
        std::vector<std::pair<int, int>> ranges;
        for (const auto& src : s.sources)
            ranges.push_back(src.layers ? *src.layers : std::pair{0, info[src.model].layers});
        const int n = ranges[0].second - ranges[0].first;
        for (const auto& r : ranges)
            if (r.second - r.first != n)
                throw std::invalid_argument(
                    "every source of a slice must have the same number of layers (mergekit's "
                    "rule)");
        for (std::size_t j = 0; j < ranges.size(); ++j)
            if (ranges[j].second > info[s.sources[j].model].layers)
                throw std::invalid_argument(
                    "layer_range [" + std::to_string(ranges[j].first) + ", " +
                    std::to_string(ranges[j].second) + ") of " + c.models[s.sources[j].model] +
                    ", which has " + std::to_string(info[s.sources[j].model].layers) + " layers");
        const std::size_t ref = reference(s);
        for (int idx = 0; idx < n; ++idx) {
            const double t = n > 1 ? static_cast<double>(idx) / (n - 1) : 1.0;
            const std::size_t before = out.tensors.size();
            for (const auto& name : info[s.sources[ref].model].names) {
                if (layer_of(name) != ranges[ref].first + idx) continue;
                std::vector<std::string> inputs;
                for (const auto& r : ranges) inputs.push_back(with_layer(name, r.first + idx));
                add(s, with_layer(name, out.layers), inputs, t);
            }
            if (out.tensors.size() == before)
                throw std::invalid_argument(c.models[s.sources[ref].model] +
                                            " has no tensor of layer " +
                                            std::to_string(ranges[ref].first + idx));
            ++out.layers;
        }
    }

    // Which source's tensor names the output takes: the base's, else the first.
    std::size_t reference(const Slice& s) const {
        if (based(s)) {
            const std::size_t b = base_of(s);
            for (std::size_t j = 0; j < s.sources.size(); ++j)
                if (s.sources[j].model == b) return j;
        }
        return 0;
    }

    // Tensors outside the layers, at t = 0: embeddings from the first slice, the rest from
    // the last (plan_module's pre and post weights).
    void plan_outside_layers(const std::vector<Slice>& slices) {
        for (const bool pre : {true, false}) {
            const Slice& s = pre ? slices.front() : slices.back();
            for (const auto& name : info[s.sources[reference(s)].model].names) {
                if (layer_of(name) || before_layers(name) != pre) continue;
                add(s, name, std::vector<std::string>(s.sources.size(), name), 0.0);
            }
        }
    }
};

// One stack of numbered layers per model (mergekit plans each module of a multi-module
// architecture, such as a vision tower beside a language model, with its own layer count).
void check_one_stack(const std::string& path, const ModelInfo& m) {
    std::string first;
    for (const auto& name : m.names) {
        const std::string stack = stack_of(name);
        if (stack.empty()) continue;
        if (first.empty()) first = stack;
        if (stack != first)
            throw std::invalid_argument(path + " has two stacks of layers (" + first + " and " +
                                        stack + "): models of several modules are not supported");
    }
}

}  // namespace

Plan plan(const Config& c, const std::vector<ModelInfo>& models) {
    const MethodDef* def = find_method(c.method);
    if (!def) throw std::invalid_argument("merge_method " + c.method + " is not supported");
    std::vector<Slice> slices = c.slices;
    if (slices.empty()) {  // plan.py's normalize_config: `models:` as one slice, base added
        Slice s;
        s.sources = c.listed;
        const bool listed = std::any_of(c.listed.begin(), c.listed.end(),
                                        [&](const Source& x) { return x.model == c.base; });
        if (c.base && !listed) s.sources.push_back({*c.base, std::nullopt, {}});
        slices.push_back(std::move(s));
    }
    for (const auto& s : slices) {
        if (s.sources.empty()) throw std::invalid_argument("a slice without sources");
        for (const auto& src : s.sources) check_one_stack(c.models[src.model], models[src.model]);
    }
    Planner p{c, *def, models, {}};
    for (const auto& s : slices) p.plan_slice(s);
    p.plan_outside_layers(slices);
    std::sort(p.out.tensors.begin(), p.out.tensors.end(),
              [](const PlannedTensor& a, const PlannedTensor& b) { return a.name < b.name; });
    p.out.layers_changed = !c.slices.empty();
    if (c.slices.empty()) {  // every tensor of the model the output takes its names from
        const ModelInfo& ref = models[slices.front().sources[p.reference(slices.front())].model];
        std::set<std::string> planned;
        for (const auto& t : p.out.tensors) planned.insert(t.name);
        for (const auto& name : ref.names)
            if (!planned.count(name))
                throw std::invalid_argument(name + ": outside the model's " +
                                            std::to_string(ref.layers) +
                                            " layers (num_hidden_layers): not merged");
    }
    return p.out;
}

}  // namespace compatbench::merging::mergekit
