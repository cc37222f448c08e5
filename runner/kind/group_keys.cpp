#include "kind/group_keys.h"

namespace compatbench {

void append_csv(std::string& list, const std::string& item) {
    if (!list.empty()) list += ',';
    list += item;
}

std::vector<Scalar> list_of(const std::vector<std::string>& texts) {
    std::vector<Scalar> out;
    for (const auto& t : texts) out.push_back(Scalar::parse(t));
    return out;
}

std::vector<Scalar> list_of(const std::vector<int>& values) {
    std::vector<Scalar> out;
    for (int v : values) out.push_back(Scalar::parse(std::to_string(v)));
    return out;
}

std::vector<int> ints_of(const std::vector<Scalar>& list) {
    std::vector<int> out;
    for (const auto& s : list) out.push_back(static_cast<int>(s.integer));
    return out;
}

std::vector<int> int_list_key(const TaskGroup& group, const std::string& key, const YamlChecker& yc,
                              std::vector<int> fallback, int lo, int hi) {
    const YAML::Node n = group.node[key];
    if (!n) return fallback;
    const std::string path = "tasks." + group.name + "." + key;
    std::vector<int> out;
    const auto one = [&](const YAML::Node& v, const std::string& p) {
        const std::int64_t x = yc.as_int(v, p);
        if (x < lo || x > hi)
            yc.fail(v, p,
                    std::to_string(x) + " is outside [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "]");
        out.push_back(static_cast<int>(x));
    };
    if (n.IsSequence()) {
        for (std::size_t i = 0; i < n.size(); ++i) one(n[i], index_path(path, i));
    } else {
        one(n, path);
    }
    if (out.empty()) yc.fail(n, path, "the list is empty");
    return out;
}

std::vector<std::string> string_list_key(const TaskGroup& group, const std::string& key,
                                         const YamlChecker& yc, std::vector<std::string> fallback) {
    const YAML::Node n = group.node[key];
    if (!n) return fallback;
    const std::string path = "tasks." + group.name + "." + key;
    std::vector<std::string> out;
    if (n.IsSequence()) {
        for (std::size_t i = 0; i < n.size(); ++i)
            out.push_back(yc.as_string(n[i], index_path(path, i)));
    } else {
        out.push_back(yc.as_string(n, path));
    }
    if (out.empty()) yc.fail(n, path, "the list is empty");
    return out;
}

const TaskGroup& earlier_group(const TaskGroup& group, const std::string& key,
                               const std::vector<TaskGroup>& earlier, const std::string& kind,
                               const YamlChecker& yc) {
    const YAML::Node n = group.node[key];
    const std::string path = "tasks." + group.name + "." + key;
    if (!n) yc.fail(group.node, path, "missing required key '" + key + "' (a " + kind + " group)");
    const std::string name = yc.as_string(n, path);
    for (const auto& g : earlier) {
        if (g.name == name && g.kind->name() == kind) return g;
    }
    yc.fail(n, path, "no earlier " + kind + " group named '" + name + "'");
}

}  // namespace compatbench
