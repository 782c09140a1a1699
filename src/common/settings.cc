// SPDX-License-Identifier: Apache-2.0
#include "common/settings.hpp"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/log.hpp"

namespace gicl {
namespace {

constexpr SettingDef kDefs[] = {
#define GICL_SETTING(id, name, type, def, doc, lo, hi, choices) \
  {name, SettingType::type, def, doc, lo, hi, choices},
#include "common/settings.def"
#undef GICL_SETTING
};
static_assert(sizeof(kDefs) / sizeof(kDefs[0]) == static_cast<size_t>(Setting::kCount));

constexpr ToolVariable kTools[] = {
#define GICL_TOOL_VARIABLE(name, doc) {name, doc},
#include "common/tool_variables.def"
#undef GICL_TOOL_VARIABLE
};

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

const char* raw_value(const SettingDef& d, SettingSource* source) {
  const char* env = std::getenv(d.name);
  if (env != nullptr && env[0] != '\0') {
    if (source) *source = SettingSource::kEnvironment;
    return env;
  }
  if (source) *source = SettingSource::kDefault;
  return d.default_value;
}

}  // namespace

const SettingDef& setting_def(Setting s) {
  return kDefs[static_cast<int>(s)];
}
int setting_count() {
  return static_cast<int>(Setting::kCount);
}

int tool_variable_count() {
  return static_cast<int>(sizeof(kTools) / sizeof(kTools[0]));
}
const ToolVariable& tool_variable(int i) {
  return kTools[i];
}

std::vector<UnknownVariable> unknown_variables(const char* const* environ_entries) {
  std::vector<UnknownVariable> out;
  for (const char* const* e = environ_entries; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    const std::string name = eq ? std::string(*e, eq) : std::string(*e);
    if (name.rfind("GICL_", 0) != 0) continue;
    bool known = false;
    std::string closest;
    size_t best = SIZE_MAX;
    auto consider = [&](const char* candidate) {
      if (name == candidate) known = true;
      const size_t d = edit_distance(name, candidate);
      if (d < best) best = d, closest = candidate;
    };
    for (const SettingDef& d : kDefs) consider(d.name);
    for (const ToolVariable& t : kTools) consider(t.name);
    if (!known) out.push_back({name, closest});
  }
  return out;
}

void warn_unknown_variables_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const UnknownVariable& u : unknown_variables(environ))
      GICL_WARN(kSubsysEnv,
                "%s is not a gicl setting and is ignored; did you mean %s? (gicl-info "
                "lists every setting)",
                u.name.c_str(), u.closest.c_str());
  });
}

const char* setting_type_name(SettingType t) {
  switch (t) {
    case SettingType::kBool:
      return "bool";
    case SettingType::kInt:
      return "int";
    case SettingType::kSize:
      return "size";
    case SettingType::kDuration:
      return "milliseconds";
    case SettingType::kString:
      return "string";
    case SettingType::kEnum:
      return "enum";
  }
  return "?";
}

bool parse_int64(const char* text, int64_t* out) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_size(const char* text, int64_t* out) {
  if (text == nullptr || *text == '\0' || *text == '-') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text) return false;
  int shift = 0;
  if (*end != '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        return false;
    }
    ++end;
    if (*end == 'B' || *end == 'b') ++end;
    if (*end != '\0') return false;
  }
  if (v > (static_cast<unsigned long long>(INT64_MAX) >> shift)) return false;
  *out = static_cast<int64_t>(v << shift);
  return true;
}

bool parse_bool(const char* text, bool* out) {
  static const char* kTrue[] = {"1", "true", "yes", "on"};
  static const char* kFalse[] = {"0", "false", "no", "off"};
  for (const char* t : kTrue)
    if (strcasecmp(text, t) == 0) return *out = true, true;
  for (const char* f : kFalse)
    if (strcasecmp(text, f) == 0) return *out = false, true;
  return false;
}

int parse_choice(const char* choices, const char* text) {
  int index = 0;
  const char* p = choices;
  const size_t n = std::strlen(text);
  while (*p != '\0') {
    const char* bar = std::strchr(p, '|');
    const size_t len = bar ? static_cast<size_t>(bar - p) : std::strlen(p);
    if (len == n && strncasecmp(p, text, n) == 0) return index;
    if (bar == nullptr) break;
    p = bar + 1;
    ++index;
  }
  return -1;
}

std::string setting_raw(Setting s, SettingSource* source) {
  return raw_value(setting_def(s), source);
}

Status setting_int(Setting s, int64_t* value, SettingSource* source) {
  const SettingDef& d = setting_def(s);
  const char* text = raw_value(d, source);
  int64_t v = 0;
  switch (d.type) {
    case SettingType::kBool: {
      bool b = false;
      if (!parse_bool(text, &b))
        return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s='%s' is not a boolean (use 0/1, true/false)",
                         d.name, text);
      *value = b ? 1 : 0;
      return GICL_SUCCESS;
    }
    case SettingType::kInt:
    case SettingType::kDuration:
      if (!parse_int64(text, &v))
        return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s='%s' is not an integer", d.name, text);
      break;
    case SettingType::kSize:
      if (!parse_size(text, &v))
        return GICL_FAIL(GICL_INVALID_ARGUMENT,
                         "%s='%s' is not a size (a number with an optional K, M, G or T suffix)",
                         d.name, text);
      break;
    case SettingType::kEnum: {
      int idx = parse_choice(d.choices, text);
      if (idx < 0)
        return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s='%s' is not one of %s", d.name, text,
                         d.choices);
      *value = idx;
      return GICL_SUCCESS;
    }
    case SettingType::kString:
      return GICL_FAIL(GICL_INTERNAL_ERROR, "%s is a string setting, read as an integer", d.name);
  }
  if (v < d.min || v > d.max)
    return GICL_FAIL(GICL_INVALID_ARGUMENT, "%s=%s is out of range [%lld, %lld]", d.name, text,
                     static_cast<long long>(d.min), static_cast<long long>(d.max));
  *value = v;
  return GICL_SUCCESS;
}

Status setting_string(Setting s, std::string* value, SettingSource* source) {
  const SettingDef& d = setting_def(s);
  if (d.type == SettingType::kEnum) {
    int64_t idx = 0;
    GICL_CHECK(setting_int(s, &idx, source));
    const char* p = d.choices;
    for (int64_t i = 0; i < idx; ++i) p = std::strchr(p, '|') + 1;
    const char* bar = std::strchr(p, '|');
    *value = bar ? std::string(p, bar) : std::string(p);
    return GICL_SUCCESS;
  }
  if (d.type != SettingType::kString)
    return GICL_FAIL(GICL_INTERNAL_ERROR, "%s is not a string setting", d.name);
  const char* text = raw_value(d, source);
  uint32_t mask = 0;
  if (s == Setting::kDebugSubsys && !parse_subsys_mask(text, &mask))
    return GICL_FAIL(GICL_INVALID_ARGUMENT,
                     "%s='%s' names an unknown subsystem (use INIT,BOOTSTRAP,TOPO,MEM,NET,PROXY,"
                     "COLL,ENV,ALL)",
                     d.name, text);
  *value = text;
  return GICL_SUCCESS;
}

}  // namespace gicl
