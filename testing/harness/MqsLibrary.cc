#include "MqsLibrary.h"

#include <dlfcn.h>

#include <stdexcept>

namespace mqd::harness {

MqsLibrary::MqsLibrary(const std::string& path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = ::dlerror();
    throw std::runtime_error("cannot load " + path + ": " + (why ? why : "?"));
  }
#define MQD_RESOLVE(result, name, method, parameters, arguments, absent) \
  name = reinterpret_cast<decltype(name)>(::dlsym(handle_, "mqs_" #name));
  MQS_ENTRY_POINTS(MQD_RESOLVE)
#undef MQD_RESOLVE
  if (setup_basic_callbacks == nullptr || setup_image == nullptr || next_operation == nullptr) {
    ::dlclose(handle_);
    throw std::runtime_error(path + " is not an MQD DLL");
  }
}

MqsLibrary::~MqsLibrary() { ::dlclose(handle_); }

}  // namespace mqd::harness
