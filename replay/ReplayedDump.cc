#include "ReplayedDump.h"

#include <capnp/schema.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>

#include "OutputApply.h"
#include "ProxyErrors.h"
#include "QueueIteration.h"
#include "RecordedWalk.h"
#include "WireMethods.h"
#include "mqd_proxy.h"

namespace mqd::replay {

using namespace client;  // the shim's parts the replay runs as the shim would

namespace {

// The DLL's `char **` message as the front end reads it ("" when absent).
std::string messageText(wire::OutString::Reader m) {
  return m.isText() ? std::string(m.getText()) : std::string();
}

// The front end's _format_message: the message is a printf format with at most one %s.
std::string formatMessage(const std::string& message, const std::string& name) {
  std::string out;
  bool named = false;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '%' && i + 1 < message.size() && message[i + 1] == '%') {
      out += '%';
      ++i;
    } else if (!named && message.compare(i, 2, "%s") == 0) {
      out += name;
      named = true;
      ++i;
    } else {
      out += message[i];
    }
  }
  return out;
}

// The rc of the results of an iteration call that returns nothing else.
int rcOf(EntryPoint entryPoint, capnp::AnyPointer::Reader results) {
  switch (entryPoint) {
    case EntryPoint::setup_communicator_iterator:
      return results.getAs<wire::Session::SetupCommunicatorIteratorResults>().getRc();
    case EntryPoint::setup_operation_iterator:
      return results.getAs<wire::Session::SetupOperationIteratorResults>().getRc();
    case EntryPoint::next_communicator:
      return results.getAs<wire::Session::NextCommunicatorResults>().getRc();
    default:
      return MQD_PROXY_ERR_PROTOCOL;
  }
}

// The process a call of the queue walk is about, read from that call's own parameters.
template <typename Params>
uint64_t processIn(capnp::AnyPointer::Reader params) {
  return params.getAs<Params>().getProcess();
}

// mqs_dll_error_string as the front end uses it (ReplayedDump::errorText), from `texts`.
std::string errorTextIn(const std::map<int, std::string>& texts, int rc) {
  auto it = texts.find(rc);
  if (it != texts.end() && it->second != std::string(1, '\0')) return it->second;
  if (it == texts.end() && MQD_PROXY_IS_PROXY_ERROR(rc) && proxyErrorText(rc) != nullptr) {
    return std::string("mqd-proxy: ") + proxyErrorText(rc);
  }
  return "error " + std::to_string(rc);
}

int64_t number(const std::map<std::string, std::string>& label, const char* key,
               int64_t otherwise) {
  auto it = label.find(key);
  if (it == label.end()) return otherwise;
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    return otherwise;
  }
}

}  // namespace

capnp::AnyPointer::Reader ReplayedDump::Call::params() const {
  return message->getRoot<capnp::AnyPointer>().asReader().getAs<capnp::AnyStruct>()
      .getPointerSection()[0];
}

capnp::AnyPointer::Reader ReplayedDump::Call::results() const {
  return message->getRoot<capnp::AnyPointer>().asReader().getAs<capnp::AnyStruct>()
      .getPointerSection()[1];
}

void ReplayedDump::setDll(const std::string& versionString, bool hasCommGroup) {
  dll_ = versionString;
  hasCommGroup_ = hasCommGroup;
}

void ReplayedDump::label(uint64_t token, const std::string& text) {
  std::map<std::string, std::string>& label = process(token).label;
  label.clear();
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    size_t eq = word.find('=');
    if (eq != std::string::npos) label[word.substr(0, eq)] = word.substr(eq + 1);
  }
}

ReplayedDump::Process& ReplayedDump::process(uint64_t token) {
  auto it = processes_.find(token);
  if (it == processes_.end()) {
    it = processes_.emplace(token, Process()).first;
    it->second.order = nextOrder_++;
  }
  return it->second;
}

std::shared_ptr<ReplayedDump::Call> ReplayedDump::keep(EntryPoint entryPoint,
                                                       capnp::AnyPointer::Reader params,
                                                       const capnp::AnyPointer::Reader* results,
                                                       int failedCode) {
  auto call = std::make_shared<Call>();
  call->entryPoint = entryPoint;
  call->failedCode = failedCode;
  call->message = std::make_shared<capnp::MallocMessageBuilder>();
  auto pair = call->message->getRoot<capnp::AnyPointer>().initAsAnyStruct(0, 2);
  pair.getPointerSection()[0].set(params);
  if (results != nullptr) pair.getPointerSection()[1].set(*results);
  return call;
}

void ReplayedDump::add(uint16_t method, capnp::AnyPointer::Reader params,
                       const capnp::AnyPointer::Reader* results, int failedCode) {
  EntryPoint entryPoint;
  if (auto e = entryPointOfSessionMethod(method)) {
    entryPoint = *e;
  } else {
    return;  // Session.reposition: no answer a front end sees
  }
  // A call of the queue walk, kept for the refresh of its process.
  auto forward = [&](uint64_t token) {
    Process& process = this->process(token);
    if (process.refresh) {
      process.refresh->forwarded.push_back(keep(entryPoint, params, results, failedCode));
    }
  };
  using S = wire::Session;
  switch (entryPoint) {
    case EntryPoint::dll_error_string: {
      int code = params.getAs<wire::Session::DllErrorStringParams>().getCode();
      if (results == nullptr) return;
      auto text = results->getAs<wire::Session::DllErrorStringResults>().getText();
      errorTexts_[code] = text.isText() ? std::string(text.getText()) : std::string(1, '\0');
      return;
    }
    case EntryPoint::setup_image: {
      uint64_t image = params.getAs<wire::Session::SetupImageParams>().getImage();
      images_[image].setupRc =
          results ? results->getAs<wire::Session::SetupImageResults>().getRc() : failedCode;
      return;
    }
    case EntryPoint::image_has_queues:
      note<wire::Session::ImageHasQueuesResults>(
          images_[params.getAs<wire::Session::ImageHasQueuesParams>().getImage()].hasQueues,
          results, failedCode);
      return;
    case EntryPoint::setup_process: {
      auto p = params.getAs<wire::Session::SetupProcessParams>();
      Process& process = this->process(p.getProcess());
      process.setupRc =
          results ? results->getAs<wire::Session::SetupProcessResults>().getRc() : failedCode;
      return;
    }
    case EntryPoint::process_has_queues:
      note<wire::Session::ProcessHasQueuesResults>(
          process(params.getAs<wire::Session::ProcessHasQueuesParams>().getProcess()).hasQueues,
          results, failedCode);
      return;
    case EntryPoint::update_communicator_list: {
      Process& process =
          this->process(params.getAs<wire::Session::UpdateCommunicatorListParams>().getProcess());
      process.refresh = std::make_unique<Refresh>();
      process.refresh->update = keep(entryPoint, params, results, failedCode);
      process.refresh->rc = failedCode;
      if (results != nullptr) {
        auto r = results->getAs<wire::Session::UpdateCommunicatorListResults>();
        process.refresh->rc = r.getRc();
        keepErrorTexts(r.getWalk());
        auto refreshed = r.getRefreshed();
        for (unsigned i = 0; i < refreshed.size(); ++i) {
          Process& other = this->process(refreshed[i].getProcess());
          other.refresh = std::make_unique<Refresh>();
          other.refresh->update = process.refresh->update;
          other.refresh->ahead = static_cast<int>(i);
          other.refresh->rc = mqs_ok;
          keepErrorTexts(refreshed[i].getWalk());
        }
      }
      return;
    }
    case EntryPoint::setup_communicator_iterator:
      return forward(processIn<S::SetupCommunicatorIteratorParams>(params));
    case EntryPoint::get_communicator:
      return forward(processIn<S::GetCommunicatorParams>(params));
    case EntryPoint::get_comm_group:
      return forward(processIn<S::GetCommGroupParams>(params));
    case EntryPoint::next_communicator:
      return forward(processIn<S::NextCommunicatorParams>(params));
    case EntryPoint::setup_operation_iterator:
      return forward(processIn<S::SetupOperationIteratorParams>(params));
    case EntryPoint::next_operation:
      return forward(processIn<S::NextOperationParams>(params));
    case EntryPoint::get_comm_coll_state:
      return forward(processIn<S::GetCommCollStateParams>(params));
    default:
      return;
  }
}

void ReplayedDump::debuggerAnswer(uint16_t method, capnp::AnyPointer::Reader params,
                                  capnp::AnyPointer::Reader results) {
  const uint16_t getImage = debuggerMethod<wire::Debugger::GetImageParams>();
  const uint16_t getGlobalRank = debuggerMethod<wire::Debugger::GetGlobalRankParams>();
  // A damaged entry only costs the dump these two facts (the replay's matching reports it).
  kj::runCatchingExceptions([&]() {
    if (method == getImage) {
      process(params.getAs<wire::Debugger::GetImageParams>().getProcess()).image =
          results.getAs<wire::Debugger::GetImageResults>().getImage();
    } else if (method == getGlobalRank) {
      process(params.getAs<wire::Debugger::GetGlobalRankParams>().getProcess()).rank =
          results.getAs<wire::Debugger::GetGlobalRankResults>().getRank();
    }
  });
}

template <typename Results>
void ReplayedDump::note(HasQueues& out, const capnp::AnyPointer::Reader* results,
                        int failedCode) {
  out.asked = true;
  out.rc = failedCode;
  out.message.clear();
  if (results == nullptr) return;
  auto r = results->getAs<Results>();
  out.rc = r.getRc();
  out.message = messageText(r.getMessage());
}

std::string ReplayedDump::explain(const char* what, const HasQueues& answer,
                                  const std::string& name) const {
  std::string why = std::string("the DLL says this ") + what + " has no message queues: " +
                    errorText(answer.rc) + " (" + std::to_string(answer.rc) + ")";
  if (!answer.message.empty()) why += "; " + formatMessage(answer.message, name);
  return why;
}

std::string ReplayedDump::errorText(int rc) const { return errorTextIn(errorTexts_, rc); }

std::vector<ProcessView> ReplayedDump::processes() const {
  std::vector<const std::pair<const uint64_t, Process>*> ordered;
  for (const auto& p : processes_) ordered.push_back(&p);
  std::sort(ordered.begin(), ordered.end(),
            [](auto* a, auto* b) { return a->second.order < b->second.order; });
  std::vector<ProcessView> out;
  for (const auto* entry : ordered) {
    const Process& p = entry->second;
    ProcessView view;
    view.inferior = static_cast<int>(number(p.label, "inferior", p.order + 1));
    view.pid = number(p.label, "pid", 0);
    view.rank = number(p.label, "rank", p.rank);
    auto host = p.label.find("host");
    if (host != p.label.end()) view.host = host->second;
    view.dll = dll_;
    auto fail = [&view](const std::string& why) {
      view.failed = true;
      view.error = why;
    };
    auto image = images_.find(p.image);
    if (image != images_.end() && image->second.setupRc != mqs_ok) {
      fail("mqs_setup_image failed: " + errorText(image->second.setupRc) + " (" +
           std::to_string(image->second.setupRc) + ")");
    } else if (image != images_.end() && image->second.hasQueues.asked &&
               image->second.hasQueues.rc != mqs_ok) {
      fail(explain("image", image->second.hasQueues, "image"));  // gdb's file name is unknown
    } else if (p.setupRc != mqs_ok) {
      fail("mqs_setup_process failed: " + errorText(p.setupRc) + " (" +
           std::to_string(p.setupRc) + ")");
    } else if (p.hasQueues.asked && p.hasQueues.rc != mqs_ok) {
      fail(explain("process", p.hasQueues, "process " + std::to_string(view.pid)));
    } else if (!p.refresh) {
      continue;  // set up, never dumped
    } else if (p.refresh->rc != mqs_ok) {
      fail("mqs_update_communicator_list failed: " + errorText(p.refresh->rc) + " (" +
           std::to_string(p.refresh->rc) + ")");
    } else {
      try {
        dumpRefresh(*p.refresh, view);
      } catch (const ProxyError& e) {
        // An address this build's mqs_taddr_t cannot hold (a 64-bit target in a 32-bit
        // mqd-proxy): where the shim of such a debugger would have failed the call.
        view.error = e.what();
      }
    }
    out.push_back(std::move(view));
  }
  return out;
}

namespace {

// The answers of one refresh, in the order the front end asks for them: from the walk while it
// serves the calls (as the shim would), then from the forwarded calls of the process.
class RefreshAnswers {
 public:
  template <typename Calls>
  RefreshAnswers(std::unique_ptr<RecordedWalk> walk, const Calls& forwarded)
      : walk_(std::move(walk)) {
    for (const auto& c : forwarded) {
      forwarded_.push_back({c->entryPoint, c->params(), c->results(), c->failedCode});
    }
  }

  struct Answer {
    EntryPoint entryPoint;
    capnp::AnyPointer::Reader params;
    capnp::AnyPointer::Reader results;
    int failedCode;
  };

  RecordedWalk* walk() { return walk_.get(); }
  void leaveWalk() { walk_.reset(); }

  // The next forwarded call of `entryPoint`, skipping others; nullptr when there is none.
  const Answer* next(EntryPoint entryPoint) {
    while (next_ < forwarded_.size()) {
      const Answer& a = forwarded_[next_++];
      if (a.entryPoint == entryPoint) return &a;
    }
    return nullptr;
  }

 private:
  std::unique_ptr<RecordedWalk> walk_;
  std::vector<Answer> forwarded_;
  size_t next_ = 0;
};

// The front end's dump of one refresh as the steps of the queue iteration, into `out`. A call
// the recorded session never made stops the iteration, with out.error saying so.
class RefreshDumpSteps final : public QueueIterationSteps {
 public:
  RefreshDumpSteps(RefreshAnswers& answers, const std::map<int, std::string>& errorTexts,
                   bool hasCommGroup, ProcessView& out)
      : answers_(answers), errorTexts_(errorTexts), hasCommGroup_(hasCommGroup), out_(out) {}

  std::optional<int> setupCommunicatorIterator() override {
    return askRc(EntryPoint::setup_communicator_iterator,
                 [](RecordedWalk& w, wire::RecordedRc::Reader* r) {
                   return w.setupCommunicatorIterator(r);
                 });
  }

  std::optional<int> getCommunicator() override {
    current_ = CommunicatorView();
    std::memset(&current_.communicator, 0, sizeof current_.communicator);
    auto take = [this](wire::Communicator::Reader in) {
      apply(in, current_.communicator);
      if (in.getWritten() & wire::Communicator::WRITTEN_SIZE) {
        communicatorSize_ =
            current_.communicator.size < 0 ? 0 : static_cast<size_t>(current_.communicator.size);
      }
    };
    std::optional<int> rc = ask(
        EntryPoint::get_communicator,
        [&](RecordedWalk& w, int* out) {
          wire::RecordedCommunicator::Reader r;
          if (!w.getCommunicator(&r)) return false;
          take(r.getCommunicator());
          *out = r.getRc();
          return true;
        },
        [&](capnp::AnyPointer::Reader results) {
          auto r = results.getAs<wire::Session::GetCommunicatorResults>();
          take(r.getCommunicator());
          return r.getRc();
        });
    if (rc && *rc != mqs_ok) out_.error = "mqs_get_communicator: " + errorText(*rc);
    return rc;
  }

  // A DLL without mqs_get_comm_group (MPICH's): the group is unknown, shown as null, as the
  // front end shows it whether it skips the call (a native load) or the shim answers
  // MQD_PROXY_ERR_NO_ENTRY_POINT (frontends/gdb/mqd_gdb/dump.py).
  bool asksCommGroup() override { return hasCommGroup_ && current_.communicator.size > 0; }

  std::optional<int> getCommGroup() override {
    std::vector<int> ranks(static_cast<size_t>(current_.communicator.size), 0);
    size_t limit = std::min(communicatorSize_, ranks.size());
    std::optional<int> rc = ask(
        EntryPoint::get_comm_group,
        [&](RecordedWalk& w, int* out) {
          wire::RecordedGroup::Reader r;
          if (!w.getCommGroup(&r)) return false;
          applyGroup(r.getRanks(), r.getWritten(), ranks.data(), limit);
          *out = r.getRc();
          return true;
        },
        [&](capnp::AnyPointer::Reader results) {
          auto r = results.getAs<wire::Session::GetCommGroupResults>();
          applyGroup(r.getRanks(), r.getWritten(), ranks.data(), limit);
          return r.getRc();
        });
    if (!rc || *rc == MQD_PROXY_ERR_NO_ENTRY_POINT) return rc;  // the group stays unknown
    if (*rc == mqs_ok) {
      current_.group = CommunicatorView::Group::Ranks;
      current_.ranks = std::move(ranks);
    } else {
      current_.group = CommunicatorView::Group::Error;
      current_.groupRc = *rc;
      current_.groupError = errorText(*rc);
    }
    return rc;
  }

  std::optional<int> setupOperationIterator(int opClass) override {
    // A communicator is shown from its queues on: one whose get or group the session never
    // made is not.
    if (opClass == 0) out_.communicators.push_back(std::move(current_));
    opClass_ = opClass;
    std::optional<int> rc = askRc(EntryPoint::setup_operation_iterator,
                                  [opClass](RecordedWalk& w, wire::RecordedRc::Reader* r) {
                                    return w.setupOperationIterator(opClass, r);
                                  });
    if (rc && *rc != mqs_ok) {
      QueueView& q = queue();
      q.rc = *rc;
      q.setupFailed = true;
      q.error = errorText(*rc);
    }
    return rc;
  }

  std::optional<int> nextOperation() override {
    mqs_pending_operation op;
    std::memset(&op, 0, sizeof op);
    std::optional<int> rc = ask(
        EntryPoint::next_operation,
        [&](RecordedWalk& w, int* out) {
          wire::RecordedOperation::Reader r;
          if (!w.nextOperation(&r)) return false;
          apply(r.getOperation(), op);
          *out = r.getRc();
          return true;
        },
        [&](capnp::AnyPointer::Reader results) {
          auto r = results.getAs<wire::Session::NextOperationResults>();
          apply(r.getOperation(), op);
          return r.getRc();
        });
    if (!rc) return rc;
    QueueView& q = queue();
    if (*rc == mqs_ok) {
      q.operations.push_back(op);
    } else {
      q.rc = *rc;
      if (*rc != mqs_end_of_list) q.error = errorText(*rc);
    }
    return rc;
  }

  std::optional<int> nextCommunicator() override {
    return askRc(EntryPoint::next_communicator,
                 [](RecordedWalk& w, wire::RecordedRc::Reader* r) { return w.nextCommunicator(r); });
  }

 private:
  // One call of the front end: the walk's answer while it has one (fromWalk returns whether it
  // did), else the next forwarded call of `entryPoint` (fromResults reads it; a failed one
  // gives its code). No rc, with out.error saying so, when the recorded session never made it.
  template <typename FromWalk, typename FromResults>
  std::optional<int> ask(EntryPoint entryPoint, FromWalk fromWalk, FromResults fromResults) {
    int rc = 0;
    if (answers_.walk() != nullptr && fromWalk(*answers_.walk(), &rc)) return rc;
    answers_.leaveWalk();
    const auto* a = answers_.next(entryPoint);
    if (a == nullptr) {
      out_.error = std::string("the recorded session has no ") + nameOf(entryPoint) + " here";
      return std::nullopt;
    }
    return a->failedCode != 0 ? a->failedCode : fromResults(a->results);
  }

  // ask() for the calls that return nothing but rc.
  template <typename Serve>
  std::optional<int> askRc(EntryPoint entryPoint, Serve serve) {
    return ask(
        entryPoint,
        [&serve](RecordedWalk& w, int* rc) {
          wire::RecordedRc::Reader r;
          if (!serve(w, &r)) return false;
          *rc = r.getRc();
          return true;
        },
        [entryPoint](capnp::AnyPointer::Reader results) { return rcOf(entryPoint, results); });
  }

  std::string errorText(int rc) const { return errorTextIn(errorTexts_, rc); }
  QueueView& queue() { return out_.communicators.back().queues[opClass_]; }

  RefreshAnswers& answers_;
  const std::map<int, std::string>& errorTexts_;
  bool hasCommGroup_;
  ProcessView& out_;
  CommunicatorView current_;  // the communicator just got, until its queues are shown
  size_t communicatorSize_ = SIZE_MAX;  // as the shim bounds a group: the size last reported
  int opClass_ = 0;
};

}  // namespace

void ReplayedDump::keepErrorTexts(wire::Bulk::Reader walk) {
  if (walk.getSize() == 0) return;
  try {
    RecordedWalk recorded(walk);
    for (auto t : recorded.errorTexts()) {
      errorTexts_[t.getCode()] =
          t.getText().isText() ? std::string(t.getText().getText()) : std::string(1, '\0');
    }
  } catch (const ProxyError&) {
    // a malformed walk shows where the dump reads it
  }
}

void ReplayedDump::dumpRefresh(const Refresh& refresh, ProcessView& out) const {
  std::unique_ptr<RecordedWalk> walk;
  if (refresh.update->failedCode == 0) {
    auto results =
        refresh.update->results().getAs<wire::Session::UpdateCommunicatorListResults>();
    auto w = refresh.ahead < 0
                 ? results.getWalk()
                 : results.getRefreshed()[static_cast<unsigned>(refresh.ahead)].getWalk();
    if (w.getSize() > 0) {
      try {
        walk = std::make_unique<RecordedWalk>(w);
      } catch (const ProxyError& e) {
        out.error = std::string("the replayed walk is unreadable: ") + e.what();
        return;
      }
    }
  }
  RefreshAnswers answers(std::move(walk), refresh.forwarded);
  RefreshDumpSteps steps(answers, errorTexts_, hasCommGroup_, out);
  iterateQueues(steps);
}

}  // namespace mqd::replay
