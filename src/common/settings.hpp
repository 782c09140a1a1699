// SPDX-License-Identifier: Apache-2.0
// The typed registry of GICL_* settings (rows in settings.def). Values are read from the
// environment at each access so that a communicator sees the environment of its creation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.hpp"

namespace gicl {

enum class SettingType { kBool, kInt, kSize, kDuration, kString, kEnum };

enum class Setting : int {
#define GICL_SETTING(id, name, type, def, doc, lo, hi, choices) id,
#include "common/settings.def"
#undef GICL_SETTING
  kCount
};

struct SettingDef {
  const char* name;
  SettingType type;
  const char* default_value;
  const char* doc;
  int64_t min;
  int64_t max;
  const char* choices;
};

const SettingDef& setting_def(Setting s);
int setting_count();
const char* setting_type_name(SettingType t);

/// Where the value in effect came from.
enum class SettingSource { kDefault, kEnvironment };

/// Integer-valued settings (kBool, kInt, kSize, kDuration; kEnum gives the choice's index).
/// A malformed or out-of-range value is GICL_INVALID_ARGUMENT naming the variable.
Status setting_int(Setting s, int64_t* value, SettingSource* source = nullptr);
/// String-valued settings (kString, and kEnum's canonical upper-case spelling).
Status setting_string(Setting s, std::string* value, SettingSource* source = nullptr);
/// The raw text in effect (env or default) without validation, for display.
std::string setting_raw(Setting s, SettingSource* source);

/// GICL_* variables that gicl's scripts and tests read and the library never does
/// (tool_variables.def).
struct ToolVariable {
  const char* name;
  const char* doc;
};
int tool_variable_count();
const ToolVariable& tool_variable(int i);

/// A GICL_* variable of the environment that neither the registry nor the tool list knows, with
/// the known name closest to it (edit distance).
struct UnknownVariable {
  std::string name;
  std::string closest;
};
/// The unknown GICL_* names among `environ_entries` ("NAME=value" strings, NULL-terminated).
std::vector<UnknownVariable> unknown_variables(const char* const* environ_entries);
/// Warns once per process (at the first communicator or tool start) about each unknown GICL_*
/// variable of the environment: a mistyped name would otherwise be ignored silently.
void warn_unknown_variables_once();

/// Parsers shared with tests. Sizes accept K/M/G/T (powers of 1024) suffixes.
bool parse_int64(const char* text, int64_t* out);
bool parse_size(const char* text, int64_t* out);
bool parse_bool(const char* text, bool* out);
/// Index of `text` in a '|'-separated choice list, case-insensitive; -1 if absent.
int parse_choice(const char* choices, const char* text);

}  // namespace gicl
