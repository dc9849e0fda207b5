// MqsLibrary: an MQD DLL opened with dlopen(), as a debugger opens one: the vendor's own DLL
// or libmqdproxy.so, indistinguishably. Optional entry points may be null.
#pragma once

#include <string>

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

  decltype(&::mqs_setup_basic_callbacks) setup_basic_callbacks = nullptr;
  decltype(&::mqs_version_string) version_string = nullptr;
  decltype(&::mqs_version_compatibility) version_compatibility = nullptr;
  decltype(&::mqs_dll_taddr_width) dll_taddr_width = nullptr;
  decltype(&::mqs_dll_error_string) dll_error_string = nullptr;
  decltype(&::mqs_setup_image) setup_image = nullptr;
  decltype(&::mqs_image_has_queues) image_has_queues = nullptr;
  decltype(&::mqs_destroy_image_info) destroy_image_info = nullptr;
  decltype(&::mqs_setup_process) setup_process = nullptr;
  decltype(&::mqs_process_has_queues) process_has_queues = nullptr;
  decltype(&::mqs_destroy_process_info) destroy_process_info = nullptr;
  decltype(&::mqs_update_communicator_list) update_communicator_list = nullptr;
  decltype(&::mqs_setup_communicator_iterator) setup_communicator_iterator = nullptr;
  decltype(&::mqs_get_communicator) get_communicator = nullptr;
  decltype(&::mqs_get_comm_group) get_comm_group = nullptr;
  decltype(&::mqs_next_communicator) next_communicator = nullptr;
  decltype(&::mqs_setup_operation_iterator) setup_operation_iterator = nullptr;
  decltype(&::mqs_next_operation) next_operation = nullptr;
  decltype(&::mqs_setup_job) setup_job = nullptr;
  decltype(&::mqs_destroy_job_info) destroy_job_info = nullptr;
  decltype(&::mqs_setup_new_process_iterator) setup_new_process_iterator = nullptr;
  decltype(&::mqs_next_new_process) next_new_process = nullptr;
  decltype(&::mqs_set_process_identity) set_process_identity = nullptr;
  decltype(&::mqs_get_comm_coll_state) get_comm_coll_state = nullptr;

 private:
  std::string path_;
  void* handle_;
};

}  // namespace mqd::harness
