// VendorDll: a vendor MQD DLL loaded with dlopen(), and its entry points.
//
// Only a worker process loads one (the supervisor never runs vendor code). The handle is
// closed when the object is destroyed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "EntryPoints.h"
#include "mqd.capnp.h"
#include "mqs_entry_points.h"
#include "mqs_interface.h"

namespace mqd::server {

// The longest string (has_queues message, error text) taken from the DLL; longer ones are cut.
constexpr size_t kMaxDllString = 64 << 10;

class VendorDll {
 public:
  // Every entry point of mqs_entry_points.h, resolved in the DLL: null for an optional one
  // (one not marked REQUIRED there) the DLL does not export.
  struct EntryPoints {
#define MQD_DECLARE_ENTRY(result, name, method, parameters, arguments, absent) \
  decltype(&::mqs_##name) mqs_##name = nullptr;
    MQS_ENTRY_POINTS(MQD_DECLARE_ENTRY)
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

  // Whether the DLL exports `entryPoint` (always true for a REQUIRED one: load() refuses a DLL
  // without it).
  bool exports(EntryPoint entryPoint) const;

  // Names of the optional entry points (mqs_entry_points.h) this DLL exports.
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
