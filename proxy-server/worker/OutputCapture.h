// OutputCapture: run a DLL entry point on marked output buffers and report what it wrote.
//
// Before the call, prepare() fills an output struct with the WriteTracking markers; after it,
// capture() encodes the fields (and character runs) that no longer hold them. The shim applies
// exactly those to the debugger's own buffer (proxy-client/OutputApply), which reproduces a
// native load byte for byte: a field the DLL leaves alone keeps the debugger's contents.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mqd.capnp.h"
#include "mqs_interface.h"

namespace mqd::server {

void prepare(mqs_communicator& out);
void capture(const mqs_communicator& in, wire::Communicator::Builder out);

void prepare(mqs_pending_operation& out);
void capture(const mqs_pending_operation& in, wire::PendingOperation::Builder out);

void prepare(mqs_process_location& out);
void capture(const mqs_process_location& in, wire::ProcessLocation::Builder out);

void prepare(int& out);
void capture(const int& in, wire::OutInt::Builder out);

// An int array for mqs_get_comm_group, sized for the communicator the DLL last reported and
// followed by an inaccessible guard page: a DLL that writes past the size it reported faults
// in this worker instead of corrupting it silently.
class GroupBuffer {
 public:
  // The capacity for a communicator whose size the DLL reported as `size` (0 or less: not
  // reported): at least kMinCapacity, so a debugger that skips mqs_get_communicator still gets
  // an answer; at most kMaxCapacity, as the size comes from target memory, which a corrupt or
  // hostile target (or debugger) makes anything up to 2^31 - 1.
  static constexpr size_t kMinCapacity = 4096;
  static constexpr size_t kMaxCapacity = 1u << 24;
  static size_t capacityFor(long long size);

  explicit GroupBuffer(size_t capacity);  // marks every element
  ~GroupBuffer();
  GroupBuffer(const GroupBuffer&) = delete;
  GroupBuffer& operator=(const GroupBuffer&) = delete;

  int* data() { return data_; }
  // Encodes, into anything with ranks and written (a reply or a recorded call), the elements
  // up to the last one written, with one bit per element saying which were written.
  template <typename Builder>
  void capture(Builder out) const {
    size_t used = usedLength();
    fill(out.initRanks(static_cast<unsigned>(used)),
         out.initWritten(static_cast<unsigned>((used + 7) / 8)));
  }

 private:
  size_t usedLength() const;
  void fill(capnp::List<int32_t>::Builder ranks, capnp::Data::Builder written) const;

  void* mapping_ = nullptr;
  size_t mappingSize_ = 0;
  int* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace mqd::server
