#include "QueueDump.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "QueueIteration.h"
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

// Notes where the dump failed; no rc, so that the iteration stops there.
std::optional<int> fail(QueueDump& d, const char* call, int rc) {
  d.failedCall = call;
  d.failedRc = rc;
  d.text += line("%s -> %d", call, rc);
  return std::nullopt;
}

// The dump's steps: each call made through the DLL, its answer rendered into the text. A proxy
// error (or a DLL error where a debugger could not go on) is noted as where the dump failed.
class DumpSteps final : public QueueIterationSteps {
 public:
  DumpSteps(MqsLibrary& dll, mqs_process* process, QueueDump& d)
      : dll_(dll), process_(process), d_(d) {}

  std::optional<int> setupCommunicatorIterator() override {
    ++d_.calls;
    int rc = dll_.setup_communicator_iterator(process_);
    if (rc != mqs_ok && rc != mqs_end_of_list) fail(d_, "mqs_setup_communicator_iterator", rc);
    return rc;
  }

  std::optional<int> getCommunicator() override {
    poison(c_);
    ++d_.calls;
    int rc = dll_.get_communicator(process_, &c_);
    if (rc != mqs_ok) {
      fail(d_, "mqs_get_communicator", rc);
      return rc;
    }
    d_.text += line("comm %llu rank %lld size %lld name '%s'",
                    static_cast<unsigned long long>(c_.unique_id),
                    static_cast<long long>(c_.local_rank), static_cast<long long>(c_.size),
                    chars(c_.name, sizeof c_.name).c_str());
    return rc;
  }

  bool asksCommGroup() override {
    return dll_.get_comm_group != nullptr && c_.size > 0 && c_.size < 1 << 20;
  }

  std::optional<int> getCommGroup() override {
    std::vector<int> ranks(static_cast<size_t>(c_.size), -7);
    ++d_.calls;
    int rc = dll_.get_comm_group(process_, ranks.data());
    if (MQD_PROXY_IS_PROXY_ERROR(rc)) return fail(d_, "mqs_get_comm_group", rc);
    std::string group;
    for (int r : ranks) group += " " + std::to_string(r);
    d_.text += line("  group rc %d:%s", rc, group.c_str());
    return rc;
  }

  std::optional<int> setupOperationIterator(int opClass) override {
    ++d_.calls;
    int rc = dll_.setup_operation_iterator(process_, opClass);
    if (MQD_PROXY_IS_PROXY_ERROR(rc)) return fail(d_, "mqs_setup_operation_iterator", rc);
    d_.text += line("  queue %d rc %d", opClass, rc);
    return rc;
  }

  std::optional<int> nextOperation() override {
    mqs_pending_operation op;
    poison(op);
    ++d_.calls;
    int rc = dll_.next_operation(process_, &op);
    if (rc == mqs_end_of_list) return rc;
    if (rc != mqs_ok) {
      // A DLL may stop a queue with its own error; a proxy error ends the dump.
      if (MQD_PROXY_IS_PROXY_ERROR(rc)) return fail(d_, "mqs_next_operation", rc);
      d_.text += line("    next_operation -> %d", rc);
      return rc;
    }
    ++d_.operations;
    d_.text += line(
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
    return rc;
  }

  std::optional<int> nextCommunicator() override {
    ++d_.calls;
    int rc = dll_.next_communicator(process_);
    if (rc != mqs_ok && rc != mqs_end_of_list) fail(d_, "mqs_next_communicator", rc);
    return rc;
  }

 private:
  MqsLibrary& dll_;
  mqs_process* process_;
  QueueDump& d_;
  mqs_communicator c_;  // the communicator just got
};

}  // namespace

QueueDump dumpQueues(MqsLibrary& dll, mqs_process* process, bool update) {
  QueueDump d;
  if (update) {
    ++d.calls;
    int rc = dll.update_communicator_list(process);
    if (rc != mqs_ok) {
      fail(d, "mqs_update_communicator_list", rc);
      return d;
    }
  }
  DumpSteps steps(dll, process, d);
  iterateQueues(steps);
  return d;
}

}  // namespace mqd::harness
