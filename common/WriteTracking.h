// WriteTracking: find out which parts of an output buffer a callee wrote.
//
// MQD output parameters are write-only by contract, and a callee may leave parts of them
// untouched (Open MPI's DLL never clears bytes 1..63 of extra_text lines it does not use). A
// natively loaded DLL would leave the debugger's own bytes there. To reproduce that across a
// process boundary, the side that calls the real code fills the buffer with a marker pattern
// first, and afterwards reports only what no longer holds the marker:
//
//   scalar fields   marker kScalarFill in every byte; the field counts as written unless all
//                   of its bytes still hold it (a callee storing 0xA5A5... is indistinguishable
//                   from one that stored nothing, which no real value is);
//   char arrays     marker kCharFill per byte (0xFE never occurs in UTF-8 text); reported as
//                   runs of written bytes.
//
// The receiving side then copies exactly those fields and bytes into the debugger's buffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mqd.capnp.h"

namespace mqd {

constexpr uint8_t kScalarFill = 0xA5;
constexpr uint8_t kCharFill = 0xFE;

// Fill a scalar with kScalarFill, and test whether it was overwritten.
void fillScalar(void* p, size_t size);
bool scalarWritten(const void* p, size_t size);

template <typename T>
void fillScalar(T& value) { fillScalar(&value, sizeof value); }
template <typename T>
bool scalarWritten(const T& value) { return scalarWritten(&value, sizeof value); }

// Fill a character array with kCharFill.
void fillChars(char* p, size_t size);

// Record the runs of bytes in p[0..size) that no longer hold kCharFill.
void captureChars(const char* p, size_t size, wire::WrittenChars::Builder out);

// Copy the recorded runs into dst[0..size). Throws ProxyError(MQD_PROXY_ERR_PROTOCOL) if a
// run does not fit, so a hostile peer cannot write outside the array.
void applyChars(wire::WrittenChars::Reader in, char* dst, size_t size);
// The check applyChars makes before it writes anything: throws ProxyError(PROTOCOL) when a run
// does not fit a `size`-byte field.
void checkChars(wire::WrittenChars::Reader in, size_t size);

}  // namespace mqd
