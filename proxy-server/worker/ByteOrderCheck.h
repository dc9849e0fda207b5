// ByteOrderCheck: does the byte order the shim reported for a process agree with the target's
// memory?
//
// The shim learns a process's byte order from the debugger's own target_to_host (one probe at
// mqs_setup_process), and the server's target_to_host converts by it. A debugger whose
// target_to_host does not swap for a target of the other byte order (or swaps for one of its
// own) makes the DLL read every integer byte-reversed: sizes of 0x04000000, reads of hundreds
// of megabytes, and queues that come out empty with no error. The DLL cannot tell, and a
// native load of it would not either; the server can, from a value whose bytes it knows.
//
// Known values (the first that the DLL's set-up read decides):
//   MPIR_debug_typedefs_sizeof   Open MPI's int[] {sizeof(short), sizeof(int), ...}: its first
//                                two elements are 2 and 4 on every platform Open MPI runs on.
//
// The check costs no round trip and no callback the DLL did not make: it looks only at the
// symbol answer and the memory that mqs_setup_process itself caused and the server keeps
// (cache policies call and epoch). With cache policy off, or a DLL that reads no known value,
// nothing is known and nothing is said.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "DebuggerObjects.h"

namespace mqd::server {

enum class ByteOrder { Little, Big };

// The byte order in which the two 4-byte integers in `bytes` read as {2, 4}; nullopt when they
// read so in neither (not the value we know: the DLL read something else there).
std::optional<ByteOrder> byteOrderOfTypedefSizes(const unsigned char (&bytes)[8]);

// The sentence for the user when `process`'s reported byte order contradicts its memory, as
// the DLL's set-up left it in the caches; nullopt when they agree or nothing is known.
// `image` is the process's image (nullptr when the DLL never asked for it).
std::optional<std::string> byteOrderContradiction(const RemoteImage* image,
                                                  const RemoteProcess& process);

}  // namespace mqd::server
