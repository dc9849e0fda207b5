// iterateQueues with scripted steps: the calls come in the order of the contract
// (common/QueueIteration.h), and the iteration stops where it says.
#include <doctest/doctest.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "QueueIteration.h"
#include "mqs_interface.h"

using mqd::IterationEnd;
using mqd::QueueIterationLimits;

namespace {

// Answers each call from its script, in order; once a script is used up, a call answers what
// a DLL with one communicator and empty queues would (end of list for the "next" calls).
class ScriptedSteps final : public mqd::QueueIterationSteps {
 public:
  std::map<std::string, std::deque<std::optional<int>>> script;
  bool group = true;
  bool collStates = false;
  std::string calls;  // one word per call made, each followed by a space

  std::optional<int> setupCommunicatorIterator() override { return answer("setup", mqs_ok); }
  std::optional<int> getCommunicator() override { return answer("get", mqs_ok); }
  bool asksCommGroup() override { return group; }
  std::optional<int> getCommGroup() override { return answer("group", mqs_ok); }
  bool asksCommCollStates() override { return collStates; }
  std::optional<int> getCommCollState(int collective) override {
    return answer("coll" + std::to_string(collective), mqs_ok);
  }
  std::optional<int> setupOperationIterator(int opClass) override {
    return answer("queue" + std::to_string(opClass), mqs_ok);
  }
  std::optional<int> nextOperation() override { return answer("op", mqs_end_of_list); }
  std::optional<int> nextCommunicator() override { return answer("nextComm", mqs_end_of_list); }

 private:
  std::optional<int> answer(const std::string& call, int otherwise) {
    calls += call + " ";
    auto& answers = script[call];
    if (answers.empty()) return otherwise;
    std::optional<int> rc = answers.front();
    answers.pop_front();
    return rc;
  }
};

}  // namespace

TEST_CASE("QueueIteration: the order of a whole iteration") {
  ScriptedSteps s;
  s.script["op"] = {mqs_ok, mqs_ok, mqs_end_of_list,    // first communicator: two sends,
                    mqs_end_of_list, mqs_end_of_list,   // no receive, nothing unexpected
                    mqs_end_of_list, mqs_ok, mqs_end_of_list,  // second: one receive
                    mqs_end_of_list};
  s.script["nextComm"] = {mqs_ok, mqs_end_of_list};
  CHECK(mqd::iterateQueues(s) == IterationEnd::Ended);
  CHECK(s.calls ==
        "setup "
        "get group queue0 op op op queue1 op queue2 op nextComm "
        "get group queue0 op queue1 op op queue2 op nextComm ");
}

TEST_CASE("QueueIteration: the group and the collective states only when asked") {
  ScriptedSteps s;
  s.group = false;
  CHECK(mqd::iterateQueues(s) == IterationEnd::Ended);
  CHECK(s.calls == "setup get queue0 op queue1 op queue2 op nextComm ");

  ScriptedSteps c;
  c.collStates = true;
  c.script["group"] = {mqs_first_user_code};  // a failed group changes nothing
  c.script["coll3"] = {mqs_no_information};   // nor does a failed collective state
  CHECK(mqd::iterateQueues(c) == IterationEnd::Ended);
  CHECK(c.calls ==
        "setup get group coll0 coll1 coll2 coll3 coll4 coll5 coll6 coll7 coll8 coll9 coll10 "
        "coll11 coll12 coll13 queue0 op queue1 op queue2 op nextComm ");
}

TEST_CASE("QueueIteration: which answers end the iteration, a queue, or nothing") {
  struct Case {
    const char* what;
    std::map<std::string, std::deque<std::optional<int>>> script;
    const char* calls;
  };
  const Case cases[] = {
      {"setup_communicator_iterator not mqs_ok: nothing more",
       {{"setup", {mqs_end_of_list}}},
       "setup "},
      {"get_communicator not mqs_ok: nothing more",
       {{"get", {mqs_ok, mqs_first_user_code}}, {"nextComm", {mqs_ok}}},
       "setup get group queue0 op queue1 op queue2 op nextComm get "},
      {"setup_operation_iterator not mqs_ok: no operation of that queue, the next queue",
       {{"queue1", {mqs_no_information}}},
       "setup get group queue0 op queue1 queue2 op nextComm "},
      {"next_operation's own error ends its queue like the end of the list",
       {{"op", {mqs_ok, mqs_first_user_code + 1}}},
       "setup get group queue0 op op queue1 op queue2 op nextComm "},
      {"next_communicator's own error ends the iteration",
       {{"nextComm", {mqs_first_user_code}}},
       "setup get group queue0 op queue1 op queue2 op nextComm "},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ScriptedSteps s;
    s.script = c.script;
    CHECK(mqd::iterateQueues(s) == IterationEnd::Ended);
    CHECK(s.calls == c.calls);
  }
}

TEST_CASE("QueueIteration: a step without an rc stops it right there") {
  const std::map<std::string, std::string> stops = {
      {"setup", "setup "},
      {"get", "setup get "},
      {"group", "setup get group "},
      {"coll5", "setup get group coll0 coll1 coll2 coll3 coll4 coll5 "},
      {"queue1", "setup get group coll0 coll1 coll2 coll3 coll4 coll5 coll6 coll7 coll8 coll9 "
                 "coll10 coll11 coll12 coll13 queue0 op queue1 "},
      {"op", "setup get group coll0 coll1 coll2 coll3 coll4 coll5 coll6 coll7 coll8 coll9 "
             "coll10 coll11 coll12 coll13 queue0 op "},
      {"nextComm", "setup get group coll0 coll1 coll2 coll3 coll4 coll5 coll6 coll7 coll8 "
                   "coll9 coll10 coll11 coll12 coll13 queue0 op queue1 op queue2 op nextComm "},
  };
  for (const auto& [call, expected] : stops) {
    CAPTURE(call);
    ScriptedSteps s;
    s.collStates = true;
    s.script[call] = {std::nullopt};
    CHECK(mqd::iterateQueues(s) == IterationEnd::Stopped);
    CHECK(s.calls == expected);
  }
}

TEST_CASE("QueueIteration: the limits end it before the call past them") {
  struct Case {
    const char* what;
    size_t communicators, operations;
    std::map<std::string, std::deque<std::optional<int>>> script;
    IterationEnd end;
    const char* calls;
  };
  const Case cases[] = {
      {"communicators", 2, SIZE_MAX,
       {{"nextComm", {mqs_ok, mqs_ok, mqs_ok}}},
       IterationEnd::OverLimit,
       "setup get queue0 op queue1 op queue2 op nextComm "
       "get queue0 op queue1 op queue2 op nextComm "},
      {"operations, counted over all queues and communicators, whatever they answered",
       SIZE_MAX, 5,
       {{"op", {mqs_ok, mqs_end_of_list, mqs_end_of_list, mqs_end_of_list, mqs_ok}},
        {"nextComm", {mqs_ok}}},
       IterationEnd::OverLimit,
       "setup get queue0 op op queue1 op queue2 op nextComm get queue0 op "},
      {"exactly at the limits: no call past them is needed", 1, 3, {}, IterationEnd::Ended,
       "setup get queue0 op queue1 op queue2 op nextComm "},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    ScriptedSteps s;
    s.group = false;
    s.script = c.script;
    QueueIterationLimits limits;
    limits.communicators = c.communicators;
    limits.operations = c.operations;
    CHECK(mqd::iterateQueues(s, limits) == c.end);
    CHECK(s.calls == c.calls);
  }
}
