// SPDX-License-Identifier: Apache-2.0
// Dependencies run one way: every #include of every library, tool, benchmark and example source
// is checked against the layer table in docs/architecture.md ("## Layers"), and the table itself
// must be free of cycles. A lower layer that includes a higher one fails here, naming the file,
// the line and both layers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Layer {
  std::string name;
  std::vector<std::string> folders;   // relative to the source tree
  std::set<std::string> may_include;  // other layers' names
};

std::string source_dir() {
  const char* s = std::getenv("GICL_TEST_SOURCE_DIR");
  return s ? s : ".";
}

std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex tick("`([^`]+)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), tick); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream ss(row);
  std::string c;
  std::getline(ss, c, '|');  // before the first bar
  while (std::getline(ss, c, '|')) out.push_back(c);
  return out;
}

/// The table under "## Layers": | layer | folders | what | may include |.
std::vector<Layer> read_layers() {
  std::ifstream f(source_dir() + "/docs/architecture.md");
  std::vector<Layer> layers;
  bool in = false;
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("## ", 0) == 0) in = line == "## Layers";
    if (!in || line.rfind("| `", 0) != 0) continue;
    const auto c = cells(line);
    if (c.size() < 4) continue;
    Layer l;
    const auto name = backticked(c[0]);
    if (name.empty()) continue;
    l.name = name[0];
    l.folders = backticked(c[1]);
    for (const auto& d : backticked(c[3])) l.may_include.insert(d);
    layers.push_back(l);
  }
  return layers;
}

/// The layer a source-tree path belongs to (the longest matching folder), or "".
std::string layer_of(const std::vector<Layer>& layers, const std::string& rel) {
  std::string best, best_folder;
  for (const auto& l : layers)
    for (const auto& f : l.folders)
      if (rel.rfind(f + "/", 0) == 0 && f.size() > best_folder.size())
        best = l.name, best_folder = f;
  return best;
}

/// Where an include resolves, as a source-tree path, searched as the compiler does: the
/// includer's own folder, then the library's include roots (src/, the tree, include/, device/),
/// and the includer's top folder (perf/, tests/ keep their own roots). "" when nothing matches.
std::string resolve(const std::string& src, const std::string& includer, const std::string& inc) {
  const std::string dir = fs::path(includer).parent_path().string() + "/";
  const std::string top = includer.substr(0, includer.find('/')) + "/";
  for (const std::string& root : {dir, std::string("src/"), std::string(), std::string("include/"),
                                  std::string("device/"), top}) {
    if (fs::exists(src + "/" + root + inc)) return fs::path(root + inc).lexically_normal().string();
  }
  if (inc == "gicl/version.h") return "include/gicl/version.h.in";  // generated at configure
  return "";
}

TEST(Layers, TheTableIsComplete) {
  const auto layers = read_layers();
  ASSERT_GE(layers.size(), 10u) << "docs/architecture.md has no '## Layers' table";
  std::set<std::string> names;
  for (const auto& l : layers) names.insert(l.name);
  for (const auto& l : layers)
    for (const auto& d : l.may_include)
      EXPECT_TRUE(names.count(d)) << l.name << " may include unknown layer " << d;
  // Acyclic: no layer reaches itself through what it may include.
  for (const auto& start : layers) {
    std::set<std::string> seen;
    std::vector<std::string> todo(start.may_include.begin(), start.may_include.end());
    while (!todo.empty()) {
      const std::string n = todo.back();
      todo.pop_back();
      if (n == start.name) ADD_FAILURE() << "layer " << start.name << " depends on itself";
      if (!seen.insert(n).second) continue;
      for (const auto& l : layers)
        if (l.name == n) todo.insert(todo.end(), l.may_include.begin(), l.may_include.end());
    }
  }
}

TEST(Layers, EveryIncludeGoesDownward) {
  const std::string src = source_dir();
  const auto layers = read_layers();
  ASSERT_FALSE(layers.empty());
  std::map<std::string, const Layer*> by_name;
  for (const auto& l : layers) by_name[l.name] = &l;
  static const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  int files = 0, checked = 0;
  for (const char* top :
       {"src", "net", "device", "include", "collectives", "perf", "docs", "shim"}) {
    if (!fs::exists(src + "/" + top)) continue;
    for (const auto& e : fs::recursive_directory_iterator(src + "/" + top)) {
      const std::string ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".hpp" && ext != ".cc" && ext != ".cu" &&
                                   ext != ".cuh" && ext != ".c" && ext != ".def"))
        continue;
      const std::string rel = fs::relative(e.path(), src).string();
      const std::string mine = layer_of(layers, rel);
      if (mine.empty()) {
        ADD_FAILURE() << rel << " lies in no layer of docs/architecture.md";
        continue;
      }
      ++files;
      std::ifstream f(e.path());
      int line_no = 0;
      for (std::string line; std::getline(f, line);) {
        ++line_no;
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string target = resolve(src, rel, m[1]);
        if (target.empty()) {
          ADD_FAILURE() << rel << ":" << line_no << " includes \"" << m[1]
                        << "\", which is no file of the tree";
          continue;
        }
        const std::string theirs = layer_of(layers, target);
        ++checked;
        if (theirs.empty() || theirs == mine) continue;
        EXPECT_TRUE(by_name[mine]->may_include.count(theirs))
            << rel << ":" << line_no << " (layer " << mine << ") includes " << m[1] << " (layer "
            << theirs << ")";
      }
    }
  }
  EXPECT_GT(files, 100);
  EXPECT_GT(checked, 300);
}

}  // namespace
