#include "Transcript.h"

#include <cstdio>
#include <cstring>
#include <memory>

namespace mqd::harness {
namespace {

char gUntouchedMessage[] = "(untouched)";
constexpr int kMaxIterations = 100000;  // a runaway iterator ends the transcript, not the test

std::string str(long long v) { return std::to_string(v); }

std::string hex(unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", v);
  return buf;
}

std::string message(char* m) {
  if (m == gUntouchedMessage) return "untouched";
  if (m == nullptr) return "NULL";
  return "\"" + renderBytes(m, std::strlen(m)) + "\"";
}

}  // namespace

std::string renderBytes(const char* bytes, size_t size) {
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

int Transcript::record(const std::string& call, int rc) {
  lines_.push_back(call + " -> " + str(rc));
  if (rc != mqs_ok) results_.insert(rc);
  return rc;
}

void Transcript::versions(bool withTaddrWidth) {
  auto& dll = d_.dll();
  const char* v = dll.version_string();
  lines_.push_back(std::string("version_string -> ") + (v ? "\"" + std::string(v) + "\"" : "NULL"));
  lines_.push_back("version_compatibility -> " + str(dll.version_compatibility()));
  if (withTaddrWidth) lines_.push_back("dll_taddr_width -> " + str(dll.dll_taddr_width()));
}

void Transcript::setupBasicCallbacks() {
  d_.dll().setup_basic_callbacks(d_.basicCallbacks());
  lines_.push_back("setup_basic_callbacks");
}

int Transcript::setupImage(DebuggerHarness::Image* image) {
  d_.settingUp(image);
  return record("setup_image(" + image->name + ")",
                d_.dll().setup_image(reinterpret_cast<mqs_image*>(image), d_.imageCallbacks()));
}

int Transcript::imageHasQueues(DebuggerHarness::Image* image) {
  char* m = gUntouchedMessage;
  int rc = d_.dll().image_has_queues(reinterpret_cast<mqs_image*>(image), &m);
  return record("image_has_queues(" + image->name + ") message=" + message(m), rc);
}

int Transcript::setupProcess(DebuggerHarness::Process* process) {
  d_.settingUp(process);
  int rc = d_.dll().setup_process(reinterpret_cast<mqs_process*>(process), d_.processCallbacks());
  d_.setUpReturned(process);
  return record("setup_process(" + process->name + ")", rc);
}

int Transcript::processHasQueues(DebuggerHarness::Process* process) {
  char* m = gUntouchedMessage;
  int rc = d_.dll().process_has_queues(reinterpret_cast<mqs_process*>(process), &m);
  return record("process_has_queues(" + process->name + ") message=" + message(m), rc);
}

int Transcript::updateCommunicatorList(DebuggerHarness::Process* process) {
  return record("update_communicator_list",
                d_.dll().update_communicator_list(reinterpret_cast<mqs_process*>(process)));
}

int Transcript::setupCommunicatorIterator(DebuggerHarness::Process* process) {
  return record("setup_communicator_iterator",
                d_.dll().setup_communicator_iterator(reinterpret_cast<mqs_process*>(process)));
}

int Transcript::getCommunicator(DebuggerHarness::Process* process, long* size) {
  mqs_communicator c;
  std::memset(&c, pattern(), sizeof c);
  int rc = d_.dll().get_communicator(reinterpret_cast<mqs_process*>(process), &c);
  if (size != nullptr) *size = static_cast<long>(c.size);
  return record("get_communicator unique_id=" + hex(c.unique_id) + " local_rank=" +
                    str(c.local_rank) + " size=" + str(c.size) + " name=" +
                    renderBytes(c.name, sizeof c.name),
                rc);
}

int Transcript::getCommGroup(DebuggerHarness::Process* process, long size) {
  if (size < 0 || size > 1 << 20) size = 0;
  const size_t slack = 4;  // elements past the size must stay untouched
  std::vector<int> ranks(static_cast<size_t>(size) + slack);
  std::memset(ranks.data(), pattern(), ranks.size() * sizeof(int));
  int rc = d_.dll().get_comm_group(reinterpret_cast<mqs_process*>(process), ranks.data());
  std::string line = "get_comm_group ranks=";
  for (int r : ranks) line += str(r) + ",";
  return record(line, rc);
}

int Transcript::nextCommunicator(DebuggerHarness::Process* process) {
  return record("next_communicator",
                d_.dll().next_communicator(reinterpret_cast<mqs_process*>(process)));
}

int Transcript::setupOperationIterator(DebuggerHarness::Process* process, int opClass) {
  return record("setup_operation_iterator(" + str(opClass) + ")",
                d_.dll().setup_operation_iterator(reinterpret_cast<mqs_process*>(process),
                                                  opClass));
}

int Transcript::nextOperation(DebuggerHarness::Process* process) {
  auto op = std::make_unique<mqs_pending_operation>();
  std::memset(op.get(), pattern(), sizeof *op);
  int rc = d_.dll().next_operation(reinterpret_cast<mqs_process*>(process), op.get());
  std::string line = "next_operation status=" + str(op->status) + " desired_local=" +
                     str(op->desired_local_rank) + " desired_global=" +
                     str(op->desired_global_rank) + " tag_wild=" + str(op->tag_wild) +
                     " desired_tag=" + str(op->desired_tag) + " desired_length=" +
                     str(op->desired_length) + " system_buffer=" + str(op->system_buffer) +
                     " buffer=" + hex(op->buffer) + " actual_local=" + str(op->actual_local_rank) +
                     " actual_global=" + str(op->actual_global_rank) + " actual_tag=" +
                     str(op->actual_tag) + " actual_length=" + str(op->actual_length);
  for (int i = 0; i < 5; ++i) {
    line += " extra" + str(i) + "=" + renderBytes(op->extra_text[i], 64);
  }
  return record(line, rc);
}

int Transcript::getCommCollState(DebuggerHarness::Process* process, int collective) {
  int sequence, active;
  std::memset(&sequence, pattern(), sizeof sequence);
  std::memset(&active, pattern(), sizeof active);
  int rc = d_.dll().get_comm_coll_state(reinterpret_cast<mqs_process*>(process), collective,
                                        &sequence, &active);
  return record("get_comm_coll_state(" + str(collective) + ") sequence=" + str(sequence) +
                    " active=" + str(active),
                rc);
}

int Transcript::setupJob(DebuggerHarness::Job* job) {
  return record("setup_job", d_.dll().setup_job(reinterpret_cast<mqs_job*>(job),
                                                d_.jobCallbacks()));
}

int Transcript::setProcessIdentity(DebuggerHarness::Process* process, int identity) {
  process->identity = identity;
  return record("set_process_identity(" + str(identity) + ")",
                d_.dll().set_process_identity(reinterpret_cast<mqs_process*>(process), identity));
}

int Transcript::setupNewProcessIterator(DebuggerHarness::Process* process) {
  return record("setup_new_process_iterator",
                d_.dll().setup_new_process_iterator(reinterpret_cast<mqs_process*>(process)));
}

int Transcript::nextNewProcess(DebuggerHarness::Process* process) {
  auto loc = std::make_unique<mqs_process_location>();
  std::memset(loc.get(), pattern(), sizeof *loc);
  int rc = d_.dll().next_new_process(reinterpret_cast<mqs_process*>(process), loc.get());
  return record("next_new_process pid=" + str(loc->pid) + " image=" +
                    renderBytes(loc->image_name, 160) + " host=" +
                    renderBytes(loc->host_name, sizeof loc->host_name),
                rc);
}

void Transcript::dllErrorString(int code) {
  const char* text = d_.dll().dll_error_string(code);
  lines_.push_back("dll_error_string(" + str(code) + ") -> " +
                   (text ? "\"" + renderBytes(text, std::strlen(text)) + "\"" : "NULL"));
}

void Transcript::destroyProcessInfo(DebuggerHarness::Process* process) {
  lines_.push_back("destroy_process_info(" + d_.infoName(process->info) + ")");
  d_.dll().destroy_process_info(process->info);
  d_.forgetInfo(process->info);
  process->info = nullptr;
}

void Transcript::destroyImageInfo(DebuggerHarness::Image* image) {
  lines_.push_back("destroy_image_info(" + d_.infoName(image->info) + ")");
  d_.dll().destroy_image_info(image->info);
  d_.forgetInfo(image->info);
  image->info = nullptr;
}

int Transcript::destroyJobInfo(DebuggerHarness::Job* job) {
  std::string name = d_.infoName(job->info);
  int rc = d_.dll().destroy_job_info(job->info);
  d_.forgetInfo(job->info);
  job->info = nullptr;
  return record("destroy_job_info(" + name + ")", rc);
}

void Transcript::appendEffects() {
  for (const std::string& e : d_.effects()) lines_.push_back("effect: " + e);
  d_.effects().clear();
}

void refresh(Transcript& t, DebuggerHarness::Process* process, const Capabilities& caps) {
  t.updateCommunicatorList(process);
  if (t.setupCommunicatorIterator(process) != mqs_ok) return;
  for (int c = 0; c < kMaxIterations; ++c) {
    long size = 0;
    if (t.getCommunicator(process, &size) != mqs_ok) break;
    if (caps.optional) t.getCommGroup(process, size);
    for (int opClass : {mqs_pending_receives, mqs_unexpected_messages, mqs_pending_sends}) {
      if (t.setupOperationIterator(process, opClass) != mqs_ok) continue;
      for (int i = 0; i < kMaxIterations && t.nextOperation(process) == mqs_ok; ++i) {
      }
    }
    if (caps.optional) {
      for (int k = 0; k < 15; ++k) t.getCommCollState(process, k);
    }
    if (t.nextCommunicator(process) != mqs_ok) break;
  }
}

void fullConversation(Transcript& t, DebuggerHarness::Image* image,
                      DebuggerHarness::Process* process, DebuggerHarness::Job* job,
                      const Capabilities& caps) {
  t.versions(caps.optional);
  t.setupBasicCallbacks();
  if (t.setupImage(image) == mqs_ok && t.imageHasQueues(image) == mqs_ok) {
    if (caps.level3 && job != nullptr) t.setupJob(job);
    if (t.setupProcess(process) == mqs_ok && t.processHasQueues(process) == mqs_ok) {
      if (caps.level3) t.setProcessIdentity(process, 7);
      if (caps.level3 && t.setupNewProcessIterator(process) == mqs_ok) {
        for (int i = 0; i < kMaxIterations && t.nextNewProcess(process) == mqs_ok; ++i) {
        }
      }
      refresh(t, process, caps);
      refresh(t, process, caps);  // a second refresh, as after the debugger stops the target again
    }
  }
  std::set<int> codes = t.resultsSeen();
  for (int c : {0, 1, 2, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 4242}) {
    codes.insert(c);
  }
  for (int c : codes) {
    if (c < 0x4d510000 || c > 0x4d51ffff) t.dllErrorString(c);  // the proxy's own range differs
  }
  if (process->info != nullptr) t.destroyProcessInfo(process);
  if (image->info != nullptr) t.destroyImageInfo(image);
  if (caps.level3 && job != nullptr && job->info != nullptr) {
    t.destroyJobInfo(job);
  }
  t.appendEffects();
}

void unusualOrders(Transcript& t, DebuggerHarness::Image* image,
                   DebuggerHarness::Process* process, const Capabilities& caps) {
  t.versions(caps.optional);
  t.setupBasicCallbacks();
  t.setupImage(image);
  t.imageHasQueues(image);
  t.imageHasQueues(image);  // asked twice
  t.setupProcess(process);
  // Iterators before the list was ever read.
  t.getCommunicator(process, nullptr);
  t.nextOperation(process);
  t.setupOperationIterator(process, mqs_pending_sends);
  t.setupCommunicatorIterator(process);
  t.processHasQueues(process);
  t.updateCommunicatorList(process);
  t.updateCommunicatorList(process);  // twice, nothing changed
  t.setupCommunicatorIterator(process);
  t.nextOperation(process);               // no queue chosen yet
  t.setupOperationIterator(process, 7);   // no such queue
  t.setupOperationIterator(process, -1);
  t.setupOperationIterator(process, mqs_pending_receives);
  t.nextOperation(process);
  t.setupOperationIterator(process, mqs_pending_receives);  // restart mid-way
  t.nextOperation(process);
  t.nextOperation(process);
  for (int i = 0; i < 8; ++i) t.nextCommunicator(process);  // past the end
  t.getCommunicator(process, nullptr);
  t.nextOperation(process);
  t.setupCommunicatorIterator(process);
  long size = 0;
  t.getCommunicator(process, &size);
  t.setupProcess(process);  // set up again: a new info replaces the old one
  t.updateCommunicatorList(process);
  t.setupCommunicatorIterator(process);
  t.getCommunicator(process, &size);
  t.appendEffects();
}

}  // namespace mqd::harness
