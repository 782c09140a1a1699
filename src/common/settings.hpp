// SPDX-License-Identifier: Apache-2.0
// The typed registry of GICL_* settings (rows in settings.def). Values are read from the
// environment at each access so that a communicator sees the environment of its creation.
#pragma once

#include <cstdint>
#include <string>

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

/// Parsers shared with tests. Sizes accept K/M/G/T (powers of 1024) suffixes.
bool parse_int64(const char* text, int64_t* out);
bool parse_size(const char* text, int64_t* out);
bool parse_bool(const char* text, bool* out);
/// Index of `text` in a '|'-separated choice list, case-insensitive; -1 if absent.
int parse_choice(const char* choices, const char* text);

}  // namespace gicl
