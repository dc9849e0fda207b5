// MqsLibrary: an MQD DLL opened with dlopen(), as a debugger opens one: the vendor's own DLL
// or libmqdproxy.so, indistinguishably. Optional entry points may be null.
#pragma once

#include <string>

#include "mqs_entry_points.h"
#include "mqs_interface.h"

namespace mqd::harness {

class MqsLibrary {
 public:
  // dlopen(RTLD_NOW | RTLD_LOCAL); throws std::runtime_error with dlerror() text.
  explicit MqsLibrary(const std::string& path);
  ~MqsLibrary();  // dlclose
  MqsLibrary(const MqsLibrary&) = delete;
  MqsLibrary& operator=(const MqsLibrary&) = delete;

  const std::string& path() const { return path_; }

  // One member per entry point of mqs_entry_points.h, named without "mqs_" (next_operation
  // for mqs_next_operation); null when the DLL does not export it.
#define MQD_LIBRARY_MEMBER(result, name, method, parameters, arguments, absent) \
  decltype(&::mqs_##name) name = nullptr;
  MQS_ENTRY_POINTS(MQD_LIBRARY_MEMBER)
#undef MQD_LIBRARY_MEMBER

 private:
  std::string path_;
  void* handle_;
};

}  // namespace mqd::harness
