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
#define MQD_RESOLVE(member) \
  member = reinterpret_cast<decltype(member)>(::dlsym(handle_, "mqs_" #member));
  MQD_RESOLVE(setup_basic_callbacks)
  MQD_RESOLVE(version_string)
  MQD_RESOLVE(version_compatibility)
  MQD_RESOLVE(dll_taddr_width)
  MQD_RESOLVE(dll_error_string)
  MQD_RESOLVE(setup_image)
  MQD_RESOLVE(image_has_queues)
  MQD_RESOLVE(destroy_image_info)
  MQD_RESOLVE(setup_process)
  MQD_RESOLVE(process_has_queues)
  MQD_RESOLVE(destroy_process_info)
  MQD_RESOLVE(update_communicator_list)
  MQD_RESOLVE(setup_communicator_iterator)
  MQD_RESOLVE(get_communicator)
  MQD_RESOLVE(get_comm_group)
  MQD_RESOLVE(next_communicator)
  MQD_RESOLVE(setup_operation_iterator)
  MQD_RESOLVE(next_operation)
  MQD_RESOLVE(setup_job)
  MQD_RESOLVE(destroy_job_info)
  MQD_RESOLVE(setup_new_process_iterator)
  MQD_RESOLVE(next_new_process)
  MQD_RESOLVE(set_process_identity)
  MQD_RESOLVE(get_comm_coll_state)
#undef MQD_RESOLVE
  if (setup_basic_callbacks == nullptr || setup_image == nullptr || next_operation == nullptr) {
    ::dlclose(handle_);
    throw std::runtime_error(path + " is not an MQD DLL");
  }
}

MqsLibrary::~MqsLibrary() { ::dlclose(handle_); }

}  // namespace mqd::harness
