#include "catalog/manifest.h"

namespace compatbench {

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
    refuse_repeated_keys(root, path.string());
    Manifest m{path.parent_path(), root, YamlChecker(path.string())};
    m.checker.check_map(root, "manifest", rules);
    return m;
}

}  // namespace compatbench
