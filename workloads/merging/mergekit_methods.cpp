// mergekit's methods as compatbench knows them (mergekit.h's find_method): their parameters
// with mergekit's defaults (merge_methods/registry.py, easy_define.py and each method's
// parameters()), and the pretty names and references of its model cards.
#include <map>
#include <tuple>

#include "merging/mergekit.h"

namespace compatbench::merging::mergekit {

namespace {

ParamDef number(std::string name, std::optional<double> fallback) {
    return {std::move(name), false, fallback};
}
ParamDef boolean(std::string name, bool fallback) { return {std::move(name), true, fallback}; }

// merge_methods/registry.py's generalized task arithmetic methods.
MethodDef gta(std::string name, Sparsify sparsify, bool consensus, bool normalize, bool rescale) {
    MethodDef m;
    m.name = std::move(name);
    m.sparsify = sparsify;
    m.consensus = consensus;
    m.normalize = normalize;
    m.rescale = rescale;
    m.global = {boolean("int8_mask", false), boolean("normalize", normalize),
                number("lambda", 1.0)};
    m.per_model = {number("weight", 1.0)};
    if (sparsify != Sparsify::none) {
        m.global.push_back(boolean("rescale", rescale));
        m.per_model.push_back(number("density", 1.0));
    }
    if (sparsify == Sparsify::magnitude_outliers) m.per_model.push_back(number("gamma", 0.01));
    if (sparsify == Sparsify::della) m.per_model.push_back(number("epsilon", 0.15));
    return m;
}

// pretty_name and reference_url of each method, as registry.py and the methods give them.
void add_card_names(std::vector<MethodDef>& v) {
    const std::map<std::string, std::pair<const char*, const char*>> card = {
        {"task_arithmetic", {"Task Arithmetic", "https://arxiv.org/abs/2212.04089"}},
        {"ties", {"TIES", "https://arxiv.org/abs/2306.01708"}},
        {"dare_ties", {"DARE TIES", "https://arxiv.org/abs/2311.03099"}},
        {"dare_linear", {"Linear DARE", "https://arxiv.org/abs/2311.03099"}},
        {"breadcrumbs", {"Model Breadcrumbs", "https://arxiv.org/abs/2312.06795"}},
        {"breadcrumbs_ties", {"Model Breadcrumbs with TIES", "https://arxiv.org/abs/2312.06795"}},
        {"della", {"DELLA", "https://arxiv.org/abs/2406.11617"}},
        {"della_linear", {"Linear DELLA", "https://arxiv.org/abs/2406.11617"}},
        {"linear", {"Linear", "https://arxiv.org/abs/2203.05482"}},
        {"slerp", {"SLERP", "https://en.wikipedia.org/wiki/Slerp"}},
        {"model_stock", {"Model Stock", "https://arxiv.org/abs/2403.19522"}},
        {"passthrough", {"Passthrough", ""}},
        {"nearswap", {"NearSwap", "https://huggingface.co/alchemonaut/QuartetAnemoi-70B-t0.0001"}},
        {"sce", {"SCE", "https://arxiv.org/abs/2408.07990"}},
        {"multislerp",
         {"Multi-SLERP", "https://goddard.blog/posts/multislerp-wow-what-a-cool-idea"}},
        {"nuslerp", {"NuSLERP", ""}},
        {"karcher", {"Karcher Mean", "https://en.wikipedia.org/wiki/Karcher_mean"}},
        {"ram", {"Reinforced Agent Merging", "https://arxiv.org/abs/2601.13572"}},
        {"ramplus_tl",
         {"Reinforced Agent Merging Plus (Tensor-Local)", "https://arxiv.org/abs/2601.13572"}},
        {"arcee_fusion", {"Arcee Fusion", "https://arcee.ai"}}};
    for (auto& m : v) std::tie(m.pretty, m.url) = card.at(m.name);
}

const std::vector<MethodDef>& methods() {
    static const std::vector<MethodDef> all = [] {
        std::vector<MethodDef> v;
        MethodDef ta = gta("task_arithmetic", Sparsify::none, false, false, false);
        ta.op = Method::task_arithmetic;
        ta.ignored = {"rescale", "density"};  // GTA's, read by its sparsification only
        v.push_back(ta);
        v.push_back(gta("ties", Sparsify::magnitude, true, true, false));
        v.push_back(gta("dare_ties", Sparsify::random, true, false, true));
        v.push_back(gta("dare_linear", Sparsify::random, false, false, true));
        v.push_back(gta("breadcrumbs", Sparsify::magnitude_outliers, false, false, false));
        v.push_back(gta("breadcrumbs_ties", Sparsify::magnitude_outliers, true, false, false));
        v.push_back(gta("della", Sparsify::della, true, true, true));
        v.push_back(gta("della_linear", Sparsify::della, false, false, true));
        const auto named = [](const char* n, Method op) {
            MethodDef m;
            m.name = n;
            m.op = op;
            return m;
        };
        MethodDef linear = named("linear", Method::linear);
        linear.uses_base = false;
        linear.global = {boolean("normalize", true)};
        linear.per_model = {number("weight", std::nullopt)};
        v.push_back(linear);
        MethodDef slerp = named("slerp", Method::slerp);
        slerp.global = {number("t", std::nullopt)};
        v.push_back(slerp);
        MethodDef stock = named("model_stock", Method::model_stock);
        stock.global = {boolean("filter_wise", false)};
        v.push_back(stock);
        MethodDef pass = named("passthrough", Method::passthrough);
        pass.uses_base = false;
        pass.per_model = {number("scale", 1.0)};
        v.push_back(pass);
        // easy_define.py: scalar arguments are global parameters, List[float] per model.
        MethodDef nearswap = named("nearswap", Method::nearswap);
        nearswap.global = {number("t", std::nullopt)};
        v.push_back(nearswap);
        MethodDef sce = named("sce", Method::sce);
        sce.global = {boolean("int8_mask", false), number("select_topk", 1.0)};
        v.push_back(sce);
        MethodDef multislerp = named("multislerp", Method::multislerp);
        multislerp.base_optional = true;
        multislerp.global = {boolean("normalize_weights", true), number("eps", 1e-8)};
        multislerp.per_model = {number("weight", std::nullopt)};
        v.push_back(multislerp);
        MethodDef nuslerp = named("nuslerp", Method::nuslerp);
        nuslerp.base_optional = true;
        nuslerp.global = {boolean("nuslerp_row_wise", false), boolean("nuslerp_flatten", true)};
        nuslerp.per_model = {number("weight", std::nullopt)};
        v.push_back(nuslerp);
        MethodDef karcher = named("karcher", Method::karcher);  // the base is an input too
        karcher.uses_base = false;
        karcher.global = {number("max_iter", 10), number("tol", 1e-5)};
        v.push_back(karcher);
        MethodDef ram = named("ram", Method::ram);  // ram.py, through easy_define.py
        ram.global = {number("epsilon", 1e-5)};
        v.push_back(ram);
        MethodDef ramplus = named("ramplus_tl", Method::ramplus_tl);
        ramplus.global = {number("r", 0.1), number("alpha", 0.2), number("epsilon", 1e-5)};
        v.push_back(ramplus);
        v.push_back(named("arcee_fusion", Method::arcee_fusion));
        add_card_names(v);
        return v;
    }();
    return all;
}

}  // namespace

const MethodDef* find_method(const std::string& name) {
    for (const auto& m : methods())
        if (m.name == name) return &m;
    return nullptr;
}

std::string method_list() {
    std::string out;
    for (const auto& m : methods()) out += (out.empty() ? "" : ", ") + m.name;
    return out;
}

}  // namespace compatbench::merging::mergekit
