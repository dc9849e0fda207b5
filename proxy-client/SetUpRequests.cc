#include "SetUpRequests.h"

#include "Log.h"

namespace mqd::client {

SetUpRecall::Answers LookupsAhead::answersByKey() const {
  SetUpRecall::Answers byKey;
  for (size_t i = 0; i < keys.size(); ++i) byKey.emplace(keys[i], answers[i]);
  return byKey;
}

std::shared_ptr<PendingCall> startSetupImage(SessionLink& link, uint64_t image,
                                             const LookupsAhead& ahead, uint64_t infoToken,
                                             bool recalled) {
  return link.start(EntryPoint::setup_image, [&](wire::Session::Client& s) {
    auto r = s.setupImageRequest();
    r.setImage(image);
    r.setInfoToken(infoToken);
    r.setRecalled(recalled);
    if (!ahead.keys.empty()) {
      auto lookups = r.initAhead(static_cast<unsigned>(ahead.keys.size()));
      auto out = r.initAnswers(static_cast<unsigned>(ahead.keys.size()));
      for (unsigned i = 0; i < ahead.keys.size(); ++i) {
        ahead.keys[i].writeTo(lookups[i]);
        ahead.answers[i].writeTo(out[i]);
      }
    }
    return r.send();
  });
}

std::shared_ptr<PendingCall> startSetupProcess(SessionLink& link, uint64_t process,
                                               bool bigEndian, const ProcessFacts* facts,
                                               const std::vector<ReadAhead>& ahead,
                                               uint64_t infoToken, bool recalled,
                                               const CostRule& rule,
                                               std::optional<ReadPrice> measuredReadCost,
                                               const LateProof& late) {
  return link.start(EntryPoint::setup_process, [&](wire::Session::Client& s) {
    auto r = s.setupProcessRequest();
    rule.describe(r.initTimings(), measuredReadCost);
    r.setProcess(process);
    r.setTargetBigEndian(bigEndian);
    r.setInfoToken(infoToken);
    r.setRecalled(recalled);
    if (facts != nullptr) {
      auto out = r.initFacts();
      out.setImage(facts->image);
      DebuggerSide::writeTypeSizes(facts->sizes,
                                   out.initTypeSizes(static_cast<unsigned>(facts->sizes.size())));
      if (facts->globalRank) out.initGlobalRank().setValue(*facts->globalRank);
    }
    writeAhead(ahead, link.compress(), r);
    writeWindows(late.windows, r.initProveLate(static_cast<unsigned>(late.windows.size())));
    r.setRedoesLate(late.redoes);
    return r.send();
  });
}

std::shared_ptr<PendingCall> startHasQueuesBehind(SessionLink& link, EntryPoint entryPoint,
                                                  uint64_t token) {
  if (entryPoint == EntryPoint::image_has_queues) {
    return link.start(entryPoint, [token](wire::Session::Client& s) {
      auto r = s.imageHasQueuesRequest();
      r.setImage(token);
      r.setAfterSetUp(true);
      return r.send();
    });
  }
  return link.start(entryPoint, [token](wire::Session::Client& s) {
    auto r = s.processHasQueuesRequest();
    r.setProcess(token);
    r.setAfterSetUp(true);
    return r.send();
  });
}

void warnOfByteOrder(DebuggerSide& side, const std::string& warning) {
  if (warning.empty()) return;
  // A native load of the DLL would read the queues wrong just as silently.
  std::string text = "mqd-proxy: " + warning;
  MQD_LOG(Warn, "%s", text.c_str());
  side.dprints(text.c_str());
}

}  // namespace mqd::client
