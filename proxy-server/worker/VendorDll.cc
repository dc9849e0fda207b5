#include "VendorDll.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <kj/io.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "EntryPoints.h"
#include "RegularFile.h"

namespace mqd::server {
namespace {

// Finds the GNU build-id note of the loaded object containing `address`.
struct BuildIdSearch {
  const void* address;
  std::string hex;
};

int findBuildId(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<BuildIdSearch*>(data);
  auto target = reinterpret_cast<ElfW(Addr)>(search->address);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    ElfW(Addr) start = info->dlpi_addr + ph.p_vaddr;
    if (target >= start && target < start + ph.p_memsz) contains = true;
  }
  if (!contains) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const auto* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const unsigned char* name = p + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && desc + note->n_descsz <= end) {
        char buf[3];
        for (unsigned k = 0; k < note->n_descsz; ++k) {
          std::snprintf(buf, sizeof buf, "%02x", desc[k]);
          search->hex += buf;
        }
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

// For a DLL without a build-id: FNV-1a over the bytes of the file loaded, as "fnv1a-<hex>".
std::string contentHash(int fd) {
  uint64_t hash = 1469598103934665603ull;
  unsigned char buf[65536];
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "";
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) hash = (hash ^ buf[i]) * 1099511628211ull;
    offset += n;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "fnv1a-%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

// dlerror()'s text with the descriptor's name put back to the DLL's.
std::string loaderError(const std::string& fdPath, const std::string& path) {
  const char* why = dlerror();
  std::string text = why != nullptr ? why : "unknown dlopen error";
  for (size_t at; (at = text.find(fdPath)) != std::string::npos;) {
    text.replace(at, fdPath.size(), path);
  }
  return text;
}

}  // namespace

std::unique_ptr<VendorDll> VendorDll::load(const std::string& path, int fd) {
  kj::AutoCloseFd opened;
  if (fd < 0) {
    // An open list's DLL (--stdio without --dll): opened now, by the absolute path named.
    try {
      RegularFile file = openRegularFile(path);
      opened = kj::mv(file.fd);
    } catch (const FileRefused& e) {
      throw std::runtime_error(std::string("cannot load vendor DLL ") + e.what());
    }
    fd = opened.get();
  }
  dlerror();
  int flags = RTLD_NOW | RTLD_LOCAL;
#if defined(__SANITIZE_ADDRESS__)
  // Under LeakSanitizer (tests/sanitize/): keep the DLL mapped after dlclose so that the check
  // as the worker ends can name it in a leak's stack, and the vendor's own leaks can be told
  // from ours (tests/sanitize/lsan.supp).
  flags |= RTLD_NODELETE;
#endif
  // The loader gets the open file, never the path: it neither searches the library path (for
  // a name without a slash) nor follows the path again (a link pointed elsewhere since).
  std::string fdPath = "/proc/self/fd/" + std::to_string(fd);
  void* handle = ::dlopen(fdPath.c_str(), flags);
  if (handle == nullptr) {
    throw std::runtime_error("cannot load vendor DLL " + path + ": " + loaderError(fdPath, path));
  }
  std::unique_ptr<VendorDll> dll(new VendorDll(path, handle));
  EntryPoints& e = dll->entry_;
#define MQD_RESOLVE(result, name, method, parameters, arguments, absent)                        \
  e.mqs_##name = reinterpret_cast<decltype(e.mqs_##name)>(                                       \
      ::dlsym(handle, nameOf(EntryPoint::name)));                                                \
  if (e.mqs_##name == nullptr && Absent::absent == Absent::REQUIRED) {                           \
    throw std::runtime_error("vendor DLL " + path + " does not export required entry point " +  \
                             nameOf(EntryPoint::name));                                          \
  }
  MQS_ENTRY_POINTS(MQD_RESOLVE)
#undef MQD_RESOLVE

  if (e.mqs_dll_taddr_width != nullptr) {
    int width = e.mqs_dll_taddr_width();
    if (width != static_cast<int>(sizeof(mqs_taddr_t))) {
      throw std::runtime_error("vendor DLL " + path + " uses a " + std::to_string(width) +
                               "-byte mqs_taddr_t but this server was built with " +
                               std::to_string(sizeof(mqs_taddr_t)) +
                               " bytes; use a server built for the DLL's ABI");
    }
  }

  BuildIdSearch search{reinterpret_cast<const void*>(e.mqs_setup_image), {}};
  dl_iterate_phdr(findBuildId, &search);
  dll->buildId_ = search.hex.empty() ? contentHash(fd) : search.hex;
  return dll;
}

VendorDll::~VendorDll() { ::dlclose(handle_); }

bool VendorDll::exports(EntryPoint entryPoint) const {
  switch (entryPoint) {
#define MQD_EXPORTS(result, name, method, parameters, arguments, absent) \
  case EntryPoint::name:                                                 \
    return entry_.mqs_##name != nullptr;
    MQS_ENTRY_POINTS(MQD_EXPORTS)
#undef MQD_EXPORTS
  }
  return false;
}

std::vector<std::string> VendorDll::optionalEntryPoints() const {
  std::vector<std::string> names;
#define MQD_LIST_OPTIONAL(result, name, method, parameters, arguments, absent) \
  if (Absent::absent != Absent::REQUIRED && entry_.mqs_##name != nullptr) {      \
    names.emplace_back(nameOf(EntryPoint::name));                                \
  }
  MQS_ENTRY_POINTS(MQD_LIST_OPTIONAL)
#undef MQD_LIST_OPTIONAL
  return names;
}

void VendorDll::describe(wire::DllDescription::Builder out) const {
  out.setPath(path_);
  const char* version = entry_.mqs_version_string();
  out.setVersionString(version != nullptr ? std::string(version, strnlen(version, kMaxDllString))
                                          : std::string());
  out.setCompatibility(entry_.mqs_version_compatibility());
  out.setTaddrWidth(entry_.mqs_dll_taddr_width != nullptr ? entry_.mqs_dll_taddr_width() : 0);
  auto names = optionalEntryPoints();
  auto list = out.initEntryPoints(static_cast<unsigned>(names.size()));
  for (size_t i = 0; i < names.size(); ++i) list.set(static_cast<unsigned>(i), names[i]);
  out.setBuildId(buildId_);
}

}  // namespace mqd::server
