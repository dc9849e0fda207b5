#include "QueueDump.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mqd_proxy.h"

namespace mqd::harness {
namespace {

// Fills a struct with a pattern, so that fields the DLL leaves alone show as such.
template <typename T>
void poison(T& value) {
  std::memset(&value, 0x5a, sizeof value);
}

std::string line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string line(const char* format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return std::string(buffer) + "\n";
}

std::string chars(const char* p, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && p[i] != '\0'; ++i) out += p[i];
  return out;
}

}  // namespace

QueueDump dumpQueues(MqsLibrary& dll, mqs_process* process, bool update) {
  QueueDump d;
  auto failed = [&d](const char* call, int rc) {
    d.failedCall = call;
    d.failedRc = rc;
    d.text += line("%s -> %d", call, rc);
    return d;
  };
  int rc;
  if (update) {
    ++d.calls;
    if ((rc = dll.update_communicator_list(process)) != mqs_ok) {
      return failed("mqs_update_communicator_list", rc);
    }
  }
  ++d.calls;
  if ((rc = dll.setup_communicator_iterator(process)) != mqs_ok) {
    if (rc == mqs_end_of_list) return d;
    return failed("mqs_setup_communicator_iterator", rc);
  }
  for (;;) {
    mqs_communicator c;
    poison(c);
    ++d.calls;
    if ((rc = dll.get_communicator(process, &c)) != mqs_ok) {
      return failed("mqs_get_communicator", rc);
    }
    d.text += line("comm %llu rank %lld size %lld name '%s'",
                   static_cast<unsigned long long>(c.unique_id),
                   static_cast<long long>(c.local_rank), static_cast<long long>(c.size),
                   chars(c.name, sizeof c.name).c_str());
    if (dll.get_comm_group != nullptr && c.size > 0 && c.size < 1 << 20) {
      std::vector<int> ranks(static_cast<size_t>(c.size), -7);
      ++d.calls;
      rc = dll.get_comm_group(process, ranks.data());
      if (MQD_PROXY_IS_PROXY_ERROR(rc)) return failed("mqs_get_comm_group", rc);
      std::string group;
      for (int r : ranks) group += " " + std::to_string(r);
      d.text += line("  group rc %d:%s", rc, group.c_str());
    }
    for (int q = 0; q < 3; ++q) {
      ++d.calls;
      rc = dll.setup_operation_iterator(process, q);
      if (MQD_PROXY_IS_PROXY_ERROR(rc)) return failed("mqs_setup_operation_iterator", rc);
      d.text += line("  queue %d rc %d", q, rc);
      if (rc != mqs_ok) continue;
      for (;;) {
        mqs_pending_operation op;
        poison(op);
        ++d.calls;
        rc = dll.next_operation(process, &op);
        if (rc == mqs_end_of_list) break;
        if (rc != mqs_ok) {
          // A DLL may stop a queue with its own error; a proxy error ends the dump.
          if (MQD_PROXY_IS_PROXY_ERROR(rc)) return failed("mqs_next_operation", rc);
          d.text += line("    next_operation -> %d", rc);
          break;
        }
        ++d.operations;
        d.text += line(
            "    op status %d peer %lld/%lld wild %d tag %lld len %lld sysbuf %d buf %llx "
            "actual %lld/%lld tag %lld len %lld '%s' '%s' '%s'",
            op.status, static_cast<long long>(op.desired_local_rank),
            static_cast<long long>(op.desired_global_rank), op.tag_wild,
            static_cast<long long>(op.desired_tag), static_cast<long long>(op.desired_length),
            op.system_buffer, static_cast<unsigned long long>(op.buffer),
            static_cast<long long>(op.actual_local_rank),
            static_cast<long long>(op.actual_global_rank),
            static_cast<long long>(op.actual_tag), static_cast<long long>(op.actual_length),
            chars(op.extra_text[0], 64).c_str(), chars(op.extra_text[1], 64).c_str(),
            chars(op.extra_text[2], 64).c_str());
      }
    }
    ++d.calls;
    rc = dll.next_communicator(process);
    if (rc == mqs_end_of_list) break;
    if (rc != mqs_ok) return failed("mqs_next_communicator", rc);
  }
  return d;
}

}  // namespace mqd::harness
