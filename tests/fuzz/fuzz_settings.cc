// SPDX-License-Identifier: Apache-2.0
// Every setting's parser on arbitrary text: the input picks a setting and its value (as the
// environment would hold it); the value is accepted within the setting's bounds or refused with a
// message. Also the number, size and choice parsers alone and the subsystem mask.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/log.hpp"
#include "common/settings.hpp"
#include "fuzz/fuzz_common.hpp"

using namespace gicl;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz_quiet_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % setting_count();
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (text.find('\0') != std::string::npos) return 0;  // the environment holds C strings
  int64_t v = 0;
  bool b = false;
  uint32_t mask = 0;
  (void)parse_int64(text.c_str(), &v);
  (void)parse_size(text.c_str(), &v);
  (void)parse_bool(text.c_str(), &b);
  (void)parse_choice("AUTO|OFI|VERBS", text.c_str());
  (void)parse_subsys_mask(text.c_str(), &mask);
  const SettingDef& d = setting_def(static_cast<Setting>(which));
  if (d.name == std::string("GICL_DEBUG") || d.name == std::string("GICL_DEBUG_FILE")) return 0;
  setenv(d.name, text.c_str(), 1);
  if (d.type == SettingType::kString) {
    std::string s;
    (void)setting_string(static_cast<Setting>(which), &s);
  } else {
    const Status st = setting_int(static_cast<Setting>(which), &v);
    if (st.ok() && d.type != SettingType::kEnum && d.type != SettingType::kBool &&
        (v < d.min || v > d.max))
      __builtin_trap();  // accepted outside its bounds
  }
  unsetenv(d.name);
  return 0;
}
