#include "tasks/compass_common.h"

#include <cstring>

#include "formats/matrix.h"
#include "formats/safetensors.h"

namespace compatbench {

fs::path knn_artifact(const fs::path& out_dir, const std::string& group, const std::string& model) {
    return out_dir / "artifacts" / "knn" / group / (model + ".safetensors");
}

void write_knn_artifact(const fs::path& path, const similarity::KnnLists& lists,
                        const MatF& probe) {
    formats::SafetensorsWriter w;
    w.add("knn", formats::DType::I32,
          {static_cast<std::uint64_t>(lists.n), static_cast<std::uint64_t>(lists.k)},
          {reinterpret_cast<const std::uint8_t*>(lists.index.data()), lists.index.size() * 4});
    formats::add_matrix(w, "probe", probe);
    fs::create_directories(path.parent_path());
    w.write(path.string());
}

KnnArtifact read_knn_artifact(const fs::path& path) {
    const auto f = formats::SafetensorsFile::open(path.string());
    const auto& t = f.at("knn");
    if (t.dtype != formats::DType::I32 || t.shape.size() != 2)
        throw formats::FormatError(path.string() + ": tensor 'knn' must be a 2-D I32 matrix");
    KnnArtifact a;
    a.lists.n = static_cast<int>(t.shape[0]);
    a.lists.k = static_cast<int>(t.shape[1]);
    a.lists.index.resize(t.numel());
    const auto raw = f.raw(t);
    std::memcpy(a.lists.index.data(), raw.data(), raw.size());
    for (auto i : a.lists.index) {
        if (i < 0 || i >= a.lists.n)
            throw formats::FormatError(path.string() + ": tensor 'knn' holds row " +
                                       std::to_string(i) + " of " + std::to_string(a.lists.n));
    }
    a.probe = formats::read_matrix(f, "probe");
    return a;
}

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

std::vector<int> int_list_key(const GroupSpec& group, const std::string& key, const YamlChecker& yc,
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

std::vector<std::string> string_list_key(const GroupSpec& group, const std::string& key,
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

std::string Manifest::resolve(const std::string& path) const {
    if (path == "{out}") return "@out/";
    if (path.rfind("{out}/", 0) == 0) return "@out/" + path.substr(6);
    const fs::path p = path;
    return (p.is_relative() ? dir / p : p).lexically_normal().string();
}

Manifest load_manifest(const GroupSpec& group, const YamlChecker& yc,
                       const std::vector<KeyRule>& rules) {
    const std::string key = "tasks." + group.name + ".manifest";
    const YAML::Node mnode = group.node["manifest"];
    fs::path path = yc.as_string(mnode, key);
    if (path.is_relative()) path = fs::path(yc.file()).parent_path() / path;
    path = fs::absolute(path).lexically_normal();
    if (!fs::exists(path)) yc.fail(mnode, key, path.string() + ": no such file");
    YAML::Node root;
    try {
        root = YAML::LoadFile(path.string());
    } catch (const YAML::Exception& e) {
        yc.fail(mnode, key, path.string() + ": " + e.what());
    }
    Manifest m{path.parent_path(), root, YamlChecker(path.string())};
    m.checker.check_map(root, "manifest", rules);
    return m;
}

const GroupSpec& earlier_group(const GroupSpec& group, const std::string& key,
                               const std::vector<GroupSpec>& earlier, const std::string& kind,
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
