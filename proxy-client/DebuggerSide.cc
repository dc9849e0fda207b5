#include "DebuggerSide.h"

#include <capnp/message.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>

#include "OutputApply.h"
#include "WriteTracking.h"

namespace mqd::client {

void DebuggerSide::setImageCallbacks(uint64_t image, const mqs_image_callbacks* table) {
  imageTables_[image] = table;
}

void DebuggerSide::setProcessCallbacks(uint64_t process, const mqs_process_callbacks* table) {
  processTables_[process] = table;
}

void DebuggerSide::setJobCallbacks(uint64_t job, const mqs_job_callbacks* table) {
  jobTables_[job] = table;
}

const mqs_image_callbacks* DebuggerSide::imageTable(uint64_t image) const {
  auto it = imageTables_.find(image);
  return it == imageTables_.end() ? nullptr : it->second;
}

const mqs_process_callbacks* DebuggerSide::processTable(uint64_t process) const {
  auto it = processTables_.find(process);
  return it == processTables_.end() ? nullptr : it->second;
}

bool DebuggerSide::probeTargetBigEndian(mqs_process* process,
                                        const mqs_process_callbacks* table) const {
  constexpr bool hostBig = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
  if (table == nullptr || table->mqs_target_to_host_fp == nullptr) return hostBig;
  const unsigned char in[4] = {1, 2, 3, 4};
  unsigned char out[4] = {0, 0, 0, 0};
  table->mqs_target_to_host_fp(process, in, out, 4);
  if (std::memcmp(in, out, 4) == 0) return hostBig;
  return !hostBig;  // reversed (anything else is treated as reversed too)
}

namespace {

// Runs a find_function / find_symbol lookup with a marked address variable (or NULL when the
// DLL passed NULL), so that an address the debugger did not store is reported as such.
template <typename Lookup>
DebuggerSide::Address lookUpAddress(bool wantAddress, Lookup&& lookup) {
  mqs_taddr_t address;
  fillScalar(address);
  int rc = lookup(wantAddress ? &address : nullptr);
  bool written = wantAddress && scalarWritten(address);
  return {rc, written, written ? static_cast<uint64_t>(address) : 0};
}

}  // namespace

DebuggerSide::Address DebuggerSide::findFunction(uint64_t image, const char* name, int lang,
                                                 bool wantAddress) {
  const mqs_image_callbacks* t = imageTable(image);
  if (t == nullptr || t->mqs_find_function_fp == nullptr) {
    return {MQD_PROXY_ERR_NOT_SET_UP, false, 0};
  }
  return lookUpAddress(wantAddress, [&](mqs_taddr_t* out) {
    return t->mqs_find_function_fp(images.handleOf(image), const_cast<char*>(name),
                                   static_cast<mqs_lang_code>(lang), out);
  });
}

DebuggerSide::Address DebuggerSide::findSymbol(uint64_t image, const char* name,
                                               bool wantAddress) {
  const mqs_image_callbacks* t = imageTable(image);
  if (t == nullptr || t->mqs_find_symbol_fp == nullptr) {
    return {MQD_PROXY_ERR_NOT_SET_UP, false, 0};
  }
  return lookUpAddress(wantAddress, [&](mqs_taddr_t* out) {
    return t->mqs_find_symbol_fp(images.handleOf(image), const_cast<char*>(name), out);
  });
}

uint64_t DebuggerSide::findType(uint64_t image, const char* name, int lang) {
  const mqs_image_callbacks* t = imageTable(image);
  if (t == nullptr || t->mqs_find_type_fp == nullptr) return 0;
  mqs_type* type = t->mqs_find_type_fp(images.handleOf(image), const_cast<char*>(name),
                                       static_cast<mqs_lang_code>(lang));
  uint64_t token = types.tokenOf(type);
  if (token != 0) typeNames_[token] = {name, lang};
  return token;
}

void DebuggerSide::lookedUpOfType(LookupKey::Kind kind, uint64_t type, const std::string& field) {
  auto named = typeNames_.find(type);
  if (named == typeNames_.end()) return;
  lookedUp(LookupKey{kind, named->second.first, named->second.second, field});
}

// Types belong to an image, but the type callbacks do not name it: any image's table serves.
// The tables of one debugger are the same functions, so the first one is used.
int DebuggerSide::fieldOffset(uint64_t type, const char* field) {
  mqs_type* handle = types.handleOf(type);
  for (auto& [image, t] : imageTables_) {
    if (t != nullptr && t->mqs_field_offset_fp != nullptr) {
      return t->mqs_field_offset_fp(handle, const_cast<char*>(field));
    }
  }
  return -1;
}

int DebuggerSide::sizeOf(uint64_t type) {
  mqs_type* handle = types.handleOf(type);
  for (auto& [image, t] : imageTables_) {
    if (t != nullptr && t->mqs_sizeof_fp != nullptr) return t->mqs_sizeof_fp(handle);
  }
  return 0;
}

DebuggerSide::TypeSizes DebuggerSide::getTypeSizes(uint64_t process) {
  TypeSizes answer;
  mqs_process* handle = processes.handleOf(process);
  // The image callbacks hold get_type_sizes; use the table of the process's own image if the
  // shim knows it, else any image's.
  const mqs_image_callbacks* t = nullptr;
  const mqs_process_callbacks* pt = processTable(process);
  if (pt != nullptr && pt->mqs_get_image_fp != nullptr) {
    t = imageTable(images.existingToken(pt->mqs_get_image_fp(handle)));
  }
  if (t == nullptr) {
    for (auto& [image, table] : imageTables_) {
      if (table != nullptr) {
        t = table;
        break;
      }
    }
  }
  if (t == nullptr || t->mqs_get_type_sizes_fp == nullptr) return answer;
  // Room for a debugger whose struct is larger than ours; marked so that untouched members
  // (a five-member debugger leaves two) are reported as such.
  int buffer[16];
  for (int& v : buffer) fillScalar(v);
  t->mqs_get_type_sizes_fp(handle, reinterpret_cast<mqs_target_type_sizes*>(buffer));
  for (size_t i = 0; i < answer.size(); ++i) {
    if (scalarWritten(buffer[i])) answer[i] = buffer[i];
  }
  return answer;
}

int DebuggerSide::fetchData(uint64_t process, uint64_t address, int size,
                            std::vector<unsigned char>* out) {
  const mqs_process_callbacks* t = processTable(process);
  if (t == nullptr || t->mqs_fetch_data_fp == nullptr) return MQD_PROXY_ERR_NOT_SET_UP;
  mqs_taddr_t narrowed = narrowAddress(address, "fetch_data address");
  out->assign(static_cast<size_t>(size), 0);
  return t->mqs_fetch_data_fp(processes.handleOf(process), narrowed, size, out->data());
}

int DebuggerSide::getGlobalRank(uint64_t process) {
  const mqs_process_callbacks* t = processTable(process);
  if (t == nullptr || t->mqs_get_global_rank_fp == nullptr) return MQS_INVALID_PROCESS;
  return t->mqs_get_global_rank_fp(processes.handleOf(process));
}

void DebuggerSide::writeTypeSizes(const TypeSizes& sizes,
                                  capnp::List<wire::OutInt>::Builder out) {
  for (unsigned i = 0; i < sizes.size() && i < out.size(); ++i) {
    if (sizes[i]) {
      out[i].setValue(*sizes[i]);
    } else {
      out[i].setUntouched();
    }
  }
}

uint64_t DebuggerSide::getImage(uint64_t process) {
  const mqs_process_callbacks* t = processTable(process);
  if (t == nullptr || t->mqs_get_image_fp == nullptr) return 0;
  return images.tokenOf(t->mqs_get_image_fp(processes.handleOf(process)));
}

uint64_t DebuggerSide::getProcessJob(uint64_t process) {
  const mqs_process_callbacks* t = processTable(process);
  if (!level3_ || t == nullptr || t->mqs_get_process_job_fp == nullptr) return 0;
  return jobs.tokenOf(t->mqs_get_process_job_fp(processes.handleOf(process)));
}

int DebuggerSide::getProcessIdentity(uint64_t process) {
  const mqs_process_callbacks* t = processTable(process);
  if (!level3_ || t == nullptr || t->mqs_get_process_identity_fp == nullptr) {
    return MQS_INVALID_PROCESS;
  }
  return t->mqs_get_process_identity_fp(processes.handleOf(process));
}

uint64_t DebuggerSide::getProcess(uint64_t job, int index) {
  auto it = jobTables_.find(job);
  if (it == jobTables_.end() || it->second == nullptr || it->second->mqs_get_process_fp == nullptr) {
    return 0;
  }
  return processes.tokenOf(it->second->mqs_get_process_fp(jobs.handleOf(job), index));
}

std::optional<std::string> DebuggerSide::errorString(int code) {
  if (basic_ == nullptr || basic_->mqs_errorstring_fp == nullptr) return std::nullopt;
  const char* text = basic_->mqs_errorstring_fp(code);
  if (text == nullptr) return std::nullopt;
  return std::string(text);
}

void DebuggerSide::dprints(const char* text) {
  if (replaying) return;
  if (basic_ != nullptr && basic_->mqs_dprints_fp != nullptr) basic_->mqs_dprints_fp(text);
}

void DebuggerSide::effect(wire::Effect::Reader effect) {
  switch (effect.which()) {
    case wire::Effect::DPRINTS:
      dprints(std::string(effect.getDprints()).c_str());
      return;
    case wire::Effect::PUT_INFO: {
      auto update = effect.getPutInfo();
      putInfo(update.getKind(), update.getHandle(), update.getInfo());
      return;
    }
    case wire::Effect::DLL_OUTPUT: {
      if (replaying) return;  // the debugger saw it the first time
      auto bytes = effect.getDllOutput();
      const kj::byte* p = bytes.begin();
      size_t left = bytes.size();
      while (left > 0) {
        ssize_t n = ::write(STDERR_FILENO, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<size_t>(n);
      }
      return;
    }
  }
}

void DebuggerSide::deliver(wire::Effect::Reader effect) {
  if (effectLog != nullptr) effectLog->push_back(capnp::clone(effect));
  if (divertEffects != nullptr) {
    divertEffects->push_back(capnp::clone(effect));
    return;
  }
  this->effect(effect);
}

std::vector<DebuggerSide::HeldInfo> DebuggerSide::heldInfos() const {
  std::vector<HeldInfo> out;
  for (const auto& [key, info] : held_) {
    out.push_back({static_cast<wire::InfoKind>(key.first), key.second, info});
  }
  return out;
}

void DebuggerSide::infoDestroyed(wire::InfoKind kind, uint64_t info) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->first.first == static_cast<int>(kind) && it->second == info) {
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

void DebuggerSide::putInfo(wire::InfoKind kind, uint64_t handle, uint64_t info) {
  if (basic_ == nullptr) return;
  if (info > UINTPTR_MAX) throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "info token too large");
  std::pair<int, uint64_t> key{static_cast<int>(kind), handle};
  auto held = held_.find(key);
  if (replaying && held != held_.end() && held->second == info) return;
  if (info == 0) {
    held_.erase(key);
  } else {
    held_[key] = info;
  }
  void* value = reinterpret_cast<void*>(static_cast<uintptr_t>(info));
  switch (kind) {
    case wire::InfoKind::IMAGE:
      if (basic_->mqs_put_image_info_fp != nullptr) {
        basic_->mqs_put_image_info_fp(images.handleOf(handle),
                                      static_cast<mqs_image_info*>(value));
      }
      break;
    case wire::InfoKind::PROCESS:
      if (basic_->mqs_put_process_info_fp != nullptr) {
        basic_->mqs_put_process_info_fp(processes.handleOf(handle),
                                        static_cast<mqs_process_info*>(value));
      }
      break;
    case wire::InfoKind::JOB:
      if (level3_ && basic_->mqs_put_job_info_fp != nullptr) {
        basic_->mqs_put_job_info_fp(jobs.handleOf(handle), static_cast<mqs_job_info*>(value));
      }
      break;
  }
}

DebuggerSide::Block DebuggerSide::readBlock(uint64_t process, uint64_t address, uint32_t size,
                                            uint64_t neededAddress, uint32_t neededSize,
                                            bool aside) {
  auto started = std::chrono::steady_clock::now();
  Block out = readBlockUntimed(process, address, size, neededAddress, neededSize);
  if (!aside) {
    readCost_.add(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                  out.bytes.size());
  }
  if (onRead) onRead(process, address, size, neededAddress, neededSize, aside, out);
  return out;
}

DebuggerSide::Block DebuggerSide::readBlockUntimed(uint64_t process, uint64_t address,
                                                   uint32_t size, uint64_t neededAddress,
                                                   uint32_t neededSize) {
  constexpr uint64_t kPage = 4096;
  Block out;
  const mqs_process_callbacks* t = processTable(process);
  if (t == nullptr || t->mqs_fetch_data_fp == nullptr) {
    out.rc = MQD_PROXY_ERR_NOT_SET_UP;
    return out;
  }
  mqs_process* handle = processes.handleOf(process);
  uint64_t blockEnd = address + size;
  uint64_t neededEnd = neededAddress + neededSize;
  if (neededAddress < address || neededEnd > blockEnd || neededEnd < neededAddress) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "fetchBlocks: needed range outside its block");
  }
  auto read = [&](uint64_t at, uint64_t n, std::vector<unsigned char>* bytes) {
    bytes->assign(n, 0);
    return t->mqs_fetch_data_fp(handle, narrowAddress(at, "fetch_data address"),
                                static_cast<int>(n), bytes->data());
  };
  out.rc = read(address, size, &out.bytes);
  if (out.rc == mqs_ok) {
    out.address = address;
    return out;
  }
  // The block runs into memory the debugger cannot read: the needed range decides, and the
  // readable pages around it are worth having. When the block is the needed range (what the
  // shim reads ahead), that read was the answer: a second one would only fail again.
  if (neededAddress != address || neededSize != size) {
    out.rc = read(neededAddress, neededSize, &out.bytes);
  }
  if (out.rc != mqs_ok) {
    out.bytes.clear();
    return out;
  }
  uint64_t lo = neededAddress, hi = neededEnd;
  std::vector<unsigned char> piece;
  uint64_t pageLo = std::max(address, neededAddress / kPage * kPage);
  uint64_t pageHi = std::min(blockEnd, (neededEnd + kPage - 1) / kPage * kPage);
  if (read(pageLo, pageHi - pageLo, &piece) == mqs_ok) {
    out.bytes = piece;
    lo = pageLo;
    hi = pageHi;
  }
  while (hi < blockEnd) {
    uint64_t n = std::min(kPage, blockEnd - hi);
    if (read(hi, n, &piece) != mqs_ok) break;
    out.bytes.insert(out.bytes.end(), piece.begin(), piece.end());
    hi += n;
  }
  while (lo > address) {
    uint64_t n = std::min(kPage, lo - address);
    if (read(lo - n, n, &piece) != mqs_ok) break;
    out.bytes.insert(out.bytes.begin(), piece.begin(), piece.end());
    lo -= n;
  }
  out.address = lo;
  return out;
}

void DebuggerSide::LookupResult::writeTo(wire::LookupAnswer::Builder out) const {
  out.setRc(rc);
  if (written) {
    out.initAddress().setValue(address);
  } else {
    out.initAddress().setUntouched();
  }
  out.setType(type);
  out.setValue(value);
}

std::vector<DebuggerSide::LookupResult> DebuggerSide::lookUp(
    uint64_t image, const std::vector<LookupKey>& requests) {
  std::vector<LookupResult> out(requests.size());
  std::map<std::pair<std::string, int>, uint64_t> types;
  auto typeOf = [&](const LookupKey& r) {
    auto key = std::make_pair(r.name, r.lang);
    auto it = types.find(key);
    if (it == types.end()) it = types.emplace(key, findType(image, r.name.c_str(), r.lang)).first;
    return it->second;
  };
  for (size_t i = 0; i < requests.size(); ++i) {
    const LookupKey& r = requests[i];
    LookupResult& a = out[i];
    switch (r.kind) {
      case LookupKey::Symbol:
      case LookupKey::Function: {
        Address found = r.kind == LookupKey::Symbol
                            ? findSymbol(image, r.name.c_str(), true)
                            : findFunction(image, r.name.c_str(), r.lang, true);
        a.rc = found.rc;
        a.written = found.written;
        a.address = found.value;
        break;
      }
      case LookupKey::Type:
        a.type = typeOf(r);
        break;
      case LookupKey::Field: {
        uint64_t type = typeOf(r);
        a.value = type == 0 ? -1 : fieldOffset(type, r.field.c_str());
        break;
      }
      case LookupKey::SizeOf: {
        uint64_t type = typeOf(r);
        a.value = type == 0 ? 0 : sizeOf(type);
        break;
      }
    }
  }
  return out;
}

}  // namespace mqd::client
