#include "CallbackTables.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "DllCall.h"
#include "Log.h"
#include "ProxyErrors.h"
#include "RemoteDebugger.h"
#include "VendorDll.h"

namespace mqd::server {
namespace {

// The largest single fetch_data the DLL may ask for (mqd.capnp, maxFetchBytes).
constexpr int kMaxFetchBytes = wire::MAX_FETCH_BYTES;
// The longest symbol, type or field name the DLL may pass (C identifiers; a longer one is
// taken for a string without its NUL).
constexpr size_t kMaxDllName = 4096;

// Runs `body(call)` for callback `name`; returns `failure` when there is no call in progress
// or when anything throws. Nothing escapes into the DLL's C frames.
template <typename R, typename Body>
R guarded(const char* name, R failure, Body&& body) {
  DllCall* call = nullptr;
  KJ_IF_MAYBE(c, DllCall::current()) {
    call = c;
  } else {
    MQD_LOG(Warn, "vendor DLL called %s outside of any mqs_* call; refused", name);
    return failure;
  }
  try {
    return body(*call);
  } catch (const kj::Exception& e) {
    call->recordCallbackFailure(std::string(name) + ": " + e.getDescription().cStr());
  } catch (const std::exception& e) {
    call->recordCallbackFailure(std::string(name) + ": " + e.what());
  } catch (...) {
    call->recordCallbackFailure(std::string(name) + ": unknown exception");
  }
  return failure;
}

// `text` from the DLL, which must be a name of at most kMaxDllName bytes; throws
// ProxyError(CALLBACK_FAILED) otherwise, so that nothing reads on into the DLL's memory.
const char* checkedName(const char* text, const char* callback) {
  if (strnlen(text, kMaxDllName + 1) > kMaxDllName) {
    throw ProxyError(MQD_PROXY_ERR_CALLBACK_FAILED,
                     std::string("the vendor DLL passed ") + callback + " a name longer than " +
                         std::to_string(kMaxDllName) + " bytes (not NUL-terminated?)");
  }
  return text;
}

// The debugger's side of the call: its caches, and the requests that leave (which relay what
// the DLL printed before them: RemoteDebugger.cc, await and notify).
RemoteDebugger& debuggerFor(DllCall& call) { return call.host().remote(); }

// The stand-in of an image, process or job handle the DLL passed; throws
// ProxyError(BAD_HANDLE) for a pointer that is not one of ours.
template <typename Handle>
StandInOf<Handle>& objectOf(DllCall& call, Handle* handle) {
  StandInOf<Handle>* r = call.host().objects().fromDll(handle);
  if (r == nullptr) {
    throw ProxyError(MQD_PROXY_ERR_BAD_HANDLE,
                     std::string("DLL passed an unknown ") +
                         kindName(StandInOf<Handle>::kInfoKind));
  }
  return *r;
}

// ---- basic callbacks: all local except dprints and errorstring ----

// Zeroed memory, and a distinct non-NULL block for size 0 (Open MPI asks for 0 bytes for empty
// groups and frees NULL). Zeroing keeps uninitialised fields the DLL forgets to set stable.
void* cbMalloc(size_t size) { return std::calloc(1, size == 0 ? 1 : size); }

void cbFree(void* p) { std::free(p); }

void cbDprints(const char* text) {
  if (text == nullptr) return;
  if (DllCall::current() == nullptr) {
    MQD_LOG(Info, "vendor DLL dprints outside a call: %s", text);
    return;
  }
  guarded("dprints", 0, [&](DllCall& call) {
    // Bounded like every string from the DLL.
    debuggerFor(call).notify(call,
                             Effect{Effect::Kind::Dprints,
                                    std::string(text, strnlen(text, kMaxDllString))});
    return 0;
  });
}

// NULL when the debugger cannot be asked.
char* cbErrorString(int code) {
  if (MQD_PROXY_IS_PROXY_ERROR(code)) return const_cast<char*>(proxyErrorText(code));
  return guarded<char*>("errorstring", nullptr,
                        [&](DllCall& call) { return debuggerFor(call).errorString(call, code); });
}

// put_*_info and get_*_info, by wire::InfoKind.
constexpr const char* kPutInfoNames[] = {"put_image_info", "put_process_info", "put_job_info"};
constexpr const char* kGetInfoNames[] = {"get_image_info", "get_process_info", "get_job_info"};
static_assert(static_cast<int>(wire::InfoKind::IMAGE) == 0 &&
              static_cast<int>(wire::InfoKind::PROCESS) == 1 &&
              static_cast<int>(wire::InfoKind::JOB) == 2);

template <typename Handle>
using InfoOf = decltype(StandInOf<Handle>::info);

// put_*_info: kept here for get_*_info, and relayed (not awaited) so the debugger stores the
// token, in order with the call's other callbacks.
template <typename Handle>
void cbPutInfo(Handle* handle, InfoOf<Handle> info) {
  constexpr wire::InfoKind kind = StandInOf<Handle>::kInfoKind;
  guarded(kPutInfoNames[static_cast<int>(kind)], 0, [&](DllCall& call) {
    auto& r = objectOf(call, handle);
    r.info = info;
    uint64_t token = call.host().objects().infoToken(kind, r.token, info);
    debuggerFor(call).notify(call, Effect{Effect::Kind::PutInfo, {}, kind, r.token, token});
    return 0;
  });
}

// NULL when the DLL put none (or it was destroyed), or the handle is not one of ours.
template <typename Handle>
InfoOf<Handle> cbGetInfo(Handle* handle) {
  constexpr wire::InfoKind kind = StandInOf<Handle>::kInfoKind;
  return guarded<InfoOf<Handle>>(kGetInfoNames[static_cast<int>(kind)], nullptr,
                                 [&](DllCall& call) { return objectOf(call, handle).info; });
}

// ---- image callbacks: the debugger's symbol and type information ----

// Leaves every size untouched when the debugger cannot be asked.
void cbGetTypeSizes(mqs_process* process, mqs_target_type_sizes* sizes) {
  guarded("get_type_sizes", 0, [&](DllCall& call) {
    debuggerFor(call).getTypeSizes(call, objectOf(call, process), sizes);
    return 0;
  });
}

// MQD_PROXY_ERR_CALLBACK_FAILED when the debugger cannot be asked. *addr is written only if
// the debugger wrote its own copy, and never when the DLL passed NULL.
int cbFindFunction(mqs_image* image, char* name, mqs_lang_code lang, mqs_taddr_t* addr) {
  if (name == nullptr) return mqs_no_information;
  return guarded("find_function", static_cast<int>(MQD_PROXY_ERR_CALLBACK_FAILED),
                 [&](DllCall& call) {
                   return debuggerFor(call).findFunction(
                       call, objectOf(call, image), checkedName(name, "find_function"),
                       static_cast<int>(lang), addr);
                 });
}

int cbFindSymbol(mqs_image* image, char* name, mqs_taddr_t* addr) {
  if (name == nullptr) return mqs_no_information;
  return guarded("find_symbol", static_cast<int>(MQD_PROXY_ERR_CALLBACK_FAILED),
                 [&](DllCall& call) {
                   return debuggerFor(call).findSymbol(call, objectOf(call, image),
                                                       checkedName(name, "find_symbol"), addr);
                 });
}

// Type handles are the debugger's tokens, cast to mqs_type*: they are only ever handed back
// to field_offset and sizeof, which send them back to the debugger. NULL when unavailable.
mqs_type* cbFindType(mqs_image* image, char* name, mqs_lang_code lang) {
  if (name == nullptr) return nullptr;
  return guarded<mqs_type*>("find_type", nullptr, [&](DllCall& call) -> mqs_type* {
    uint64_t token = debuggerFor(call).findType(call, objectOf(call, image),
                                                checkedName(name, "find_type"),
                                                static_cast<int>(lang));
    if (token > std::numeric_limits<uintptr_t>::max()) {
      throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "type token does not fit a pointer");
    }
    return reinterpret_cast<mqs_type*>(static_cast<uintptr_t>(token));
  });
}

// -1 (no such field) when unavailable.
int cbFieldOffset(mqs_type* type, char* field) {
  if (field == nullptr) return -1;
  return guarded("field_offset", -1, [&](DllCall& call) {
    return debuggerFor(call).fieldOffset(call, reinterpret_cast<uintptr_t>(type),
                                         checkedName(field, "field_offset"));
  });
}

// 0 when unavailable.
int cbSizeof(mqs_type* type) {
  return guarded("sizeof", 0, [&](DllCall& call) {
    return debuggerFor(call).sizeOf(call, reinterpret_cast<uintptr_t>(type));
  });
}

// ---- process callbacks ----

// MQS_INVALID_PROCESS when unavailable.
int cbGetGlobalRank(mqs_process* process) {
  return guarded("get_global_rank", static_cast<int>(MQS_INVALID_PROCESS), [&](DllCall& call) {
    return debuggerFor(call).globalRank(call, objectOf(call, process));
  });
}

// NULL when unavailable.
mqs_image* cbGetImage(mqs_process* process) {
  return guarded<mqs_image*>("get_image", nullptr, [&](DllCall& call) -> mqs_image* {
    uint64_t token = debuggerFor(call).image(call, objectOf(call, process));
    if (token == 0) return nullptr;
    return reinterpret_cast<mqs_image*>(&call.host().objects().image(token));
  });
}

// The buffer is written only when the debugger returns mqs_ok, with exactly `size` bytes.
int cbFetchData(mqs_process* process, mqs_taddr_t addr, int size, void* buf) {
  if (size < 0 || size > kMaxFetchBytes || (buf == nullptr && size > 0)) {
    return MQD_PROXY_ERR_FETCH_TOO_LARGE;
  }
  return guarded("fetch_data", static_cast<int>(MQD_PROXY_ERR_CALLBACK_FAILED),
                 [&](DllCall& call) {
                   return debuggerFor(call).fetchData(call, objectOf(call, process), addr, size,
                                                      buf);
                 });
}

// Runs here, never on the debugger: the DLL's "host" is this server. Byte order comes from
// the target's, learned once when the process was set up.
void cbTargetToHost(mqs_process* process, const void* in, void* out, int size) {
  if (in == nullptr || out == nullptr || size <= 0) return;
  guarded("target_to_host", 0, [&](DllCall& call) {
    bool swap = objectOf(call, process).targetBigEndian != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
    const auto* src = static_cast<const unsigned char*>(in);
    auto* dst = static_cast<unsigned char*>(out);
    if (!swap) {
      std::memmove(dst, src, static_cast<size_t>(size));
    } else if (src == dst) {
      for (int i = 0, j = size - 1; i < j; ++i, --j) std::swap(dst[i], dst[j]);
    } else {
      for (int i = 0; i < size; ++i) dst[i] = src[size - 1 - i];
    }
    return 0;
  });
}

// NULL / MQS_INVALID_PROCESS when unavailable.
mqs_job* cbGetProcessJob(mqs_process* process) {
  return guarded<mqs_job*>("get_process_job", nullptr, [&](DllCall& call) -> mqs_job* {
    uint64_t token = debuggerFor(call).job(call, objectOf(call, process));
    if (token == 0) return nullptr;
    return reinterpret_cast<mqs_job*>(&call.host().objects().job(token));
  });
}

int cbGetProcessIdentity(mqs_process* process) {
  return guarded("get_process_identity", static_cast<int>(MQS_INVALID_PROCESS),
                 [&](DllCall& call) {
                   return debuggerFor(call).identity(call, objectOf(call, process));
                 });
}

// ---- job callbacks ----

mqs_process* cbGetProcess(mqs_job* job, int index) {
  return guarded<mqs_process*>("get_process", nullptr, [&](DllCall& call) -> mqs_process* {
    uint64_t token = debuggerFor(call).process(call, objectOf(call, job), index);
    if (token == 0) return nullptr;
    return reinterpret_cast<mqs_process*>(&call.host().objects().process(token));
  });
}

const mqs_basic_callbacks kBasic = {cbMalloc,
                                    cbFree,
                                    cbDprints,
                                    cbErrorString,
                                    cbPutInfo<mqs_image>,
                                    cbGetInfo<mqs_image>,
                                    cbPutInfo<mqs_process>,
                                    cbGetInfo<mqs_process>,
                                    cbPutInfo<mqs_job>,
                                    cbGetInfo<mqs_job>};
const mqs_image_callbacks kImage = {cbGetTypeSizes, cbFindFunction, cbFindSymbol,
                                    cbFindType,     cbFieldOffset,  cbSizeof};
const mqs_process_callbacks kProcess = {cbGetGlobalRank, cbGetImage,      cbFetchData,
                                        cbTargetToHost,  cbGetProcessJob, cbGetProcessIdentity};
const mqs_job_callbacks kJob = {cbGetProcess};

}  // namespace

const mqs_basic_callbacks* basicCallbackTable() { return &kBasic; }
const mqs_image_callbacks* imageCallbackTable() { return &kImage; }
const mqs_process_callbacks* processCallbackTable() { return &kProcess; }
const mqs_job_callbacks* jobCallbackTable() { return &kJob; }

}  // namespace mqd::server
