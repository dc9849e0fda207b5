#include "OutputCapture.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "WriteTracking.h"

namespace mqd::server {

void prepare(mqs_communicator& out) {
  fillScalar(out.unique_id);
  fillScalar(out.local_rank);
  fillScalar(out.size);
  fillChars(out.name, sizeof out.name);
}

void capture(const mqs_communicator& in, wire::Communicator::Builder out) {
  using C = wire::Communicator;
  uint8_t written = 0;
  if (scalarWritten(in.unique_id)) {
    written |= C::WRITTEN_UNIQUE_ID;
    out.setUniqueId(in.unique_id);
  }
  if (scalarWritten(in.local_rank)) {
    written |= C::WRITTEN_LOCAL_RANK;
    out.setLocalRank(in.local_rank);
  }
  if (scalarWritten(in.size)) {
    written |= C::WRITTEN_SIZE;
    out.setSize(in.size);
  }
  out.setWritten(written);
  captureChars(in.name, sizeof in.name, out.initName());
}

void prepare(mqs_pending_operation& out) {
  fillScalar(out.status);
  fillScalar(out.desired_local_rank);
  fillScalar(out.desired_global_rank);
  fillScalar(out.tag_wild);
  fillScalar(out.desired_tag);
  fillScalar(out.desired_length);
  fillScalar(out.system_buffer);
  fillScalar(out.buffer);
  fillScalar(out.actual_local_rank);
  fillScalar(out.actual_global_rank);
  fillScalar(out.actual_tag);
  fillScalar(out.actual_length);
  for (auto& line : out.extra_text) fillChars(line, sizeof line);
}

void capture(const mqs_pending_operation& in, wire::PendingOperation::Builder out) {
  using P = wire::PendingOperation;
  uint16_t written = 0;
  auto mark = [&written](uint16_t bit, bool was) {
    if (was) written = static_cast<uint16_t>(written | bit);
    return was;
  };
  if (mark(P::WRITTEN_STATUS, scalarWritten(in.status))) out.setStatus(in.status);
  if (mark(P::WRITTEN_DESIRED_LOCAL_RANK, scalarWritten(in.desired_local_rank)))
    out.setDesiredLocalRank(in.desired_local_rank);
  if (mark(P::WRITTEN_DESIRED_GLOBAL_RANK, scalarWritten(in.desired_global_rank)))
    out.setDesiredGlobalRank(in.desired_global_rank);
  if (mark(P::WRITTEN_TAG_WILD, scalarWritten(in.tag_wild))) out.setTagWild(in.tag_wild);
  if (mark(P::WRITTEN_DESIRED_TAG, scalarWritten(in.desired_tag)))
    out.setDesiredTag(in.desired_tag);
  if (mark(P::WRITTEN_DESIRED_LENGTH, scalarWritten(in.desired_length)))
    out.setDesiredLength(in.desired_length);
  if (mark(P::WRITTEN_SYSTEM_BUFFER, scalarWritten(in.system_buffer)))
    out.setSystemBuffer(in.system_buffer);
  if (mark(P::WRITTEN_BUFFER, scalarWritten(in.buffer))) out.setBuffer(in.buffer);
  if (mark(P::WRITTEN_ACTUAL_LOCAL_RANK, scalarWritten(in.actual_local_rank)))
    out.setActualLocalRank(in.actual_local_rank);
  if (mark(P::WRITTEN_ACTUAL_GLOBAL_RANK, scalarWritten(in.actual_global_rank)))
    out.setActualGlobalRank(in.actual_global_rank);
  if (mark(P::WRITTEN_ACTUAL_TAG, scalarWritten(in.actual_tag))) out.setActualTag(in.actual_tag);
  if (mark(P::WRITTEN_ACTUAL_LENGTH, scalarWritten(in.actual_length)))
    out.setActualLength(in.actual_length);
  out.setWritten(written);
  auto lines = out.initExtraText(5);
  for (unsigned i = 0; i < 5; ++i) {
    captureChars(in.extra_text[i], sizeof in.extra_text[i], lines[i]);
  }
}

void prepare(mqs_process_location& out) {
  fillScalar(out.pid);
  fillChars(out.image_name, sizeof out.image_name);
  fillChars(out.host_name, sizeof out.host_name);
}

void capture(const mqs_process_location& in, wire::ProcessLocation::Builder out) {
  if (scalarWritten(in.pid)) {
    out.setWritten(wire::ProcessLocation::WRITTEN_PID);
    out.setPid(in.pid);
  }
  captureChars(in.image_name, sizeof in.image_name, out.initImageName());
  captureChars(in.host_name, sizeof in.host_name, out.initHostName());
}

void prepare(int& out) { fillScalar(out); }

void capture(const int& in, wire::OutInt::Builder out) {
  if (scalarWritten(in)) {
    out.setValue(in);
  } else {
    out.setUntouched();
  }
}

size_t GroupBuffer::capacityFor(long long size) {
  if (size <= static_cast<long long>(kMinCapacity)) return kMinCapacity;
  if (size >= static_cast<long long>(kMaxCapacity)) return kMaxCapacity;
  return static_cast<size_t>(size);
}

GroupBuffer::GroupBuffer(size_t capacity) : capacity_(capacity) {
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t bytes = (capacity * sizeof(int) + page - 1) / page * page;
  if (bytes == 0) bytes = page;
  mappingSize_ = bytes + page;
  mapping_ = ::mmap(nullptr, mappingSize_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  if (mapping_ == MAP_FAILED) throw std::bad_alloc();
  ::mprotect(static_cast<char*>(mapping_) + bytes, page, PROT_NONE);
  // Place the array so that it ends exactly at the guard page.
  data_ = reinterpret_cast<int*>(static_cast<char*>(mapping_) + bytes - capacity * sizeof(int));
  for (size_t i = 0; i < capacity_; ++i) fillScalar(data_[i]);
}

GroupBuffer::~GroupBuffer() { ::munmap(mapping_, mappingSize_); }

size_t GroupBuffer::usedLength() const {
  size_t used = capacity_;
  while (used > 0 && !scalarWritten(data_[used - 1])) --used;
  return used;
}

void GroupBuffer::fill(capnp::List<int32_t>::Builder ranks, capnp::Data::Builder bits) const {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (scalarWritten(data_[i])) {
      ranks.set(static_cast<unsigned>(i), data_[i]);
      bits[i / 8] = static_cast<uint8_t>(bits[i / 8] | (1u << (i % 8)));
    }
  }
}

}  // namespace mqd::server
