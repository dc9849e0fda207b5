#include "DebuggerObjects.h"

#include <set>
#include <string>

#include "ProxyErrors.h"

namespace mqd::server {
namespace {

// A debugger has a handful of images and one object per attached process; this bounds what a
// misbehaving or hostile client can make the server allocate.
constexpr size_t kMaxObjectsPerKind = 1u << 20;

}  // namespace

const char* kindName(wire::InfoKind kind) {
  switch (kind) {
    case wire::InfoKind::IMAGE: return "image";
    case wire::InfoKind::PROCESS: return "process";
    case wire::InfoKind::JOB: return "job";
  }
  return "info";
}

template <typename T>
T& DebuggerObjects::lookup(std::unordered_map<uint64_t, std::unique_ptr<T>>& table,
                           uint64_t token, const char* what) {
  if (token == 0) throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE, std::string("NULL ") + what);
  auto it = table.find(token);
  if (it != table.end()) return *it->second;
  if (table.size() >= kMaxObjectsPerKind) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE, std::string("too many distinct ") + what + "s");
  }
  auto object = std::make_unique<T>();
  object->token = token;
  T& ref = *object;
  table.emplace(token, std::move(object));
  return ref;
}

RemoteImage& DebuggerObjects::image(uint64_t token) {
  RemoteImage& r = lookup(images_, token, "image");
  imageByAddress_[&r] = &r;
  return r;
}

RemoteProcess& DebuggerObjects::process(uint64_t token) {
  RemoteProcess& r = lookup(processes_, token, "process");
  processByAddress_[&r] = &r;
  return r;
}

RemoteJob& DebuggerObjects::job(uint64_t token) {
  RemoteJob& r = lookup(jobs_, token, "job");
  jobByAddress_[&r] = &r;
  return r;
}

RemoteImage& DebuggerObjects::setUpImage(uint64_t token, const char* entryPoint) {
  auto it = images_.find(token);
  if (it == images_.end() || !it->second->setUp) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE,
                     std::string(entryPoint) + " on an image that mqs_setup_image never saw");
  }
  return *it->second;
}

RemoteProcess& DebuggerObjects::setUpProcess(uint64_t token, const char* entryPoint) {
  RemoteProcess* process = setUpProcessOrNull(token);
  if (process == nullptr) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE,
                     std::string(entryPoint) + " on a process that mqs_setup_process never saw");
  }
  return *process;
}

RemoteProcess* DebuggerObjects::setUpProcessOrNull(uint64_t token) {
  auto it = processes_.find(token);
  return it == processes_.end() || !it->second->setUp ? nullptr : it->second.get();
}

RemoteImage* DebuggerObjects::fromDll(mqs_image* image) {
  auto it = imageByAddress_.find(image);
  return it == imageByAddress_.end() ? nullptr : it->second;
}

RemoteProcess* DebuggerObjects::fromDll(mqs_process* process) {
  auto it = processByAddress_.find(process);
  return it == processByAddress_.end() ? nullptr : it->second;
}

RemoteJob* DebuggerObjects::fromDll(mqs_job* job) {
  auto it = jobByAddress_.find(job);
  return it == jobByAddress_.end() ? nullptr : it->second;
}

void DebuggerObjects::reserve(const std::vector<Reservation>& reservations) {
  std::set<uint64_t> taken;
  for (const Reservation& r : reservations) {
    if (r.token == 0 || !taken.insert(r.token).second) continue;
    reserved_[{static_cast<int>(r.kind), r.handle}] = r.token;
    if (r.token >= nextInfoToken_ && r.token < wire::FIRST_CHOSEN_INFO_TOKEN) {
      nextInfoToken_ = r.token + 1;
    }
  }
}

uint64_t DebuggerObjects::infoToken(wire::InfoKind kind, uint64_t handle, void* info) {
  if (info == nullptr) return 0;
  auto it = tokenByInfo_.find(info);
  if (it != tokenByInfo_.end()) return it->second;
  uint64_t token = 0;
  auto r = reserved_.find({static_cast<int>(kind), handle});
  if (r != reserved_.end()) {
    token = r->second;
    reserved_.erase(r);
    if (infoByToken_.count(token) != 0) token = 0;  // already issued: never name two infos
  }
  if (token == 0) {
    if (nextInfoToken_ >= wire::FIRST_CHOSEN_INFO_TOKEN) {
      throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "more infos than the server can name");
    }
    token = nextInfoToken_++;
  }
  tokenByInfo_.emplace(info, token);
  infoByToken_.emplace(token, InfoEntry{kind, info});
  return token;
}

void* DebuggerObjects::infoFromToken(wire::InfoKind kind, uint64_t token,
                                     const char* entryPoint) {
  auto it = infoByToken_.find(token);
  if (it == infoByToken_.end() || it->second.kind != kind) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE,
                     std::string(entryPoint) + ": " + kindName(kind) + " info " +
                         std::to_string(token) + " was never issued or is already destroyed");
  }
  return it->second.info;
}

void DebuggerObjects::forgetInfo(uint64_t token) {
  auto it = infoByToken_.find(token);
  if (it == infoByToken_.end()) return;
  const void* info = it->second.info;
  wire::InfoKind kind = it->second.kind;
  tokenByInfo_.erase(info);
  infoByToken_.erase(it);
  // The DLL has freed it: no stand-in hands it back through get_*_info any more, whatever the
  // client calls next on that object (the DLL then sees no info, as before put_*_info).
  auto clear = [info](auto& table) {
    for (auto& entry : table) {
      if (entry.second->info == info) entry.second->info = nullptr;
    }
  };
  switch (kind) {
    case wire::InfoKind::IMAGE: clear(images_); break;
    case wire::InfoKind::PROCESS: clear(processes_); break;
    case wire::InfoKind::JOB: clear(jobs_); break;
  }
}

std::vector<void*> DebuggerObjects::takeLiveInfos(wire::InfoKind kind) {
  std::vector<void*> out;
  for (auto it = infoByToken_.begin(); it != infoByToken_.end();) {
    if (it->second.kind == kind) {
      out.push_back(it->second.info);
      tokenByInfo_.erase(it->second.info);
      it = infoByToken_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void DebuggerObjects::forEachProcess(const std::function<void(RemoteProcess&)>& fn) {
  for (auto& [token, process] : processes_) fn(*process);
}

}  // namespace mqd::server
