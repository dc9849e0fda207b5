// VendorDll: a vendor MQD DLL loaded with dlopen(), and its entry points.
//
// Only a worker process loads one (the supervisor never runs vendor code). The handle is
// closed when the object is destroyed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mqd.capnp.h"
#include "mqs_interface.h"

namespace mqd::server {

// The longest string (has_queues message, error text) taken from the DLL; longer ones are cut.
constexpr size_t kMaxDllString = 64 << 10;

// Every entry point a vendor DLL must export: X(name). Types come from mqs_interface.h.
#define MQD_REQUIRED_ENTRY_POINTS(X)                                            \
  X(mqs_setup_basic_callbacks)                    \
  X(mqs_version_string)                           \
  X(mqs_version_compatibility)                    \
  X(mqs_dll_error_string)                         \
  X(mqs_setup_image)                              \
  X(mqs_image_has_queues)                         \
  X(mqs_destroy_image_info)                       \
  X(mqs_setup_process)                            \
  X(mqs_process_has_queues)                       \
  X(mqs_destroy_process_info)                     \
  X(mqs_update_communicator_list)                 \
  X(mqs_setup_communicator_iterator)              \
  X(mqs_get_communicator)                         \
  X(mqs_next_communicator)                        \
  X(mqs_setup_operation_iterator)                 \
  X(mqs_next_operation)

// Entry points a DLL may lack; each has a documented answer when absent
// (docs/transparency.md, "Optional entry points").
#define MQD_OPTIONAL_ENTRY_POINTS(X)                                            \
  X(mqs_dll_taddr_width)                          \
  X(mqs_get_comm_group)                           \
  X(mqs_setup_job)                                \
  X(mqs_destroy_job_info)                         \
  X(mqs_setup_new_process_iterator)               \
  X(mqs_next_new_process)                         \
  X(mqs_set_process_identity)                     \
  X(mqs_get_comm_coll_state)

class VendorDll {
 public:
  struct EntryPoints {
#define MQD_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;
    MQD_REQUIRED_ENTRY_POINTS(MQD_DECLARE_ENTRY)
    MQD_OPTIONAL_ENTRY_POINTS(MQD_DECLARE_ENTRY)
#undef MQD_DECLARE_ENTRY
  };

  // dlopen()s the DLL (RTLD_NOW | RTLD_LOCAL) and resolves its entry points. `fd` is the file
  // to load, opened by the allow-list at start-up (DllAllowList.h); it is loaded as
  // /proc/self/fd/FD, so what runs is that very file, never one the loader found by searching
  // or by following `path` again. -1: open `path` (absolute) now, for an open list. `path` is
  // what is shown. Throws std::runtime_error naming the path and the dlerror() text, or the
  // first missing required entry point, or an mqs_taddr_t width that differs from this
  // server's. (A DLL that finds its own dependencies through $ORIGIN finds them in
  // /proc/self/fd: an MQD DLL depends on libc only.)
  static std::unique_ptr<VendorDll> load(const std::string& path, int fd = -1);
  ~VendorDll();
  VendorDll(const VendorDll&) = delete;
  VendorDll& operator=(const VendorDll&) = delete;

  const std::string& path() const { return path_; }
  const EntryPoints& entry() const { return entry_; }

  // Names of the optional entry points this DLL exports.
  std::vector<std::string> optionalEntryPoints() const;

  // Version string, compatibility level, taddr width, entry points and build id.
  void describe(wire::DllDescription::Builder out) const;

  // GNU build-id in hex (empty if the DLL has none).
  const std::string& buildId() const { return buildId_; }

 private:
  VendorDll(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}
  std::string path_;
  void* handle_;
  EntryPoints entry_;
  std::string buildId_;
};

}  // namespace mqd::server
