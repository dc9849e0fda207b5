// OutputApply: write what the vendor DLL wrote (as captured by the server's OutputCapture) into
// the debugger's own output buffers, and nothing else.
//
// Fields the DLL left alone keep the debugger's bytes, exactly as with a native load. Values are
// narrowed to this build's mqs_taddr_t / mqs_tword_t:
//   - an address (mqs_taddr_t) that does not fit fails the whole call with
//     ProxyError(MQD_PROXY_ERR_ADDRESS_WIDTH); it is never truncated;
//   - a word (mqs_tword_t) that does not fit is reduced modulo 2^N, as a C conversion of the
//     64-bit value to an N-bit long does on every supported compiler (so Open MPI's
//     4294967295 "any source" reads as -1 in a 32-bit debugger).
// Each apply() checks everything before it writes, so a failed call leaves the buffer as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "StringPool.h"
#include "mqd.capnp.h"
#include "mqs_interface.h"

namespace mqd::client {

void apply(wire::Communicator::Reader in, mqs_communicator& out);
void apply(wire::PendingOperation::Reader in, mqs_pending_operation& out);
void apply(wire::ProcessLocation::Reader in, mqs_process_location& out);
// `out` may be NULL (the debugger passed no buffer): then nothing is written.
void apply(wire::OutInt::Reader in, int* out);
// Writes the elements marked written, at most `limit` of them (the communicator size the
// debugger was told, so the shim never writes past the buffer the spec asks it to allocate).
void applyGroup(capnp::List<int32_t>::Reader ranks, capnp::Data::Reader written, int* out,
                size_t limit);

// The narrowing rules above, for single values, to any width (tests use 32 bits on any host).
template <typename Address>
Address narrowAddressAs(uint64_t value, const char* what);
template <typename Word>
Word narrowWordAs(int64_t value);

inline mqs_taddr_t narrowAddress(uint64_t value, const char* what) {
  return narrowAddressAs<mqs_taddr_t>(value, what);
}
inline mqs_tword_t narrowWord(int64_t value) { return narrowWordAs<mqs_tword_t>(value); }

// has_queues messages are printf formats with at most one "%s" (the image or process name).
// Every other '%' is escaped, so text from the network can never make the debugger's printf
// read or write memory it should not.
std::string safePrintfFormat(const std::string& text);

// A has_queues message into *message (when `message` is not null and the DLL wrote one): NULL,
// or the text made safe (safePrintfFormat) and kept in `strings` for the session's life.
void applyMessage(wire::OutString::Reader in, char** message, StringPool& strings);

}  // namespace mqd::client
