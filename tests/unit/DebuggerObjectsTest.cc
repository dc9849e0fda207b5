#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "DebuggerObjects.h"
#include "ProxyErrors.h"

using mqd::ProxyError;
using mqd::server::DebuggerObjects;
using mqd::server::RemoteImage;
using mqd::server::RemoteJob;
using mqd::server::RemoteProcess;
using mqd::wire::InfoKind;

namespace {

// The code and sentence of the ProxyError `f` throws; {0, ""} if it throws none.
std::pair<int, std::string> refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const ProxyError& e) {
    return {e.code(), e.what()};
  }
  return {0, ""};
}

}  // namespace

TEST_CASE("DebuggerObjects: one stand-in per debugger token, and the DLL's pointers lead back") {
  DebuggerObjects objects;
  RemoteProcess& p = objects.process(7);
  CHECK(p.token == 7);
  CHECK(&objects.process(7) == &p);  // the same token: the same stand-in
  RemoteProcess& q = objects.process(8);
  CHECK(&q != &p);
  RemoteImage& i = objects.image(7);  // tokens are per kind
  RemoteJob& j = objects.job(7);

  // The DLL is handed the stand-ins' addresses and passes them back.
  CHECK(objects.fromDll(reinterpret_cast<mqs_process*>(&p)) == &p);
  CHECK(objects.fromDll(reinterpret_cast<mqs_image*>(&i)) == &i);
  CHECK(objects.fromDll(reinterpret_cast<mqs_job*>(&j)) == &j);
  // A pointer that is not one of ours, or one of another kind, is refused.
  int stranger = 0;
  CHECK(objects.fromDll(reinterpret_cast<mqs_process*>(&stranger)) == nullptr);
  CHECK(objects.fromDll(reinterpret_cast<mqs_process*>(&i)) == nullptr);

  // NULL is never an object.
  CHECK(refusal([&] { objects.process(0); }).first == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(refusal([&] { objects.image(0); }).first == MQD_PROXY_ERR_BAD_HANDLE);
}

TEST_CASE("DebuggerObjects: calls that need a set-up refuse objects the set-up never saw") {
  DebuggerObjects objects;
  objects.process(3);  // known (a callback named it), but not set up
  auto unseen = refusal([&] { objects.setUpProcess(3, "mqs_update_communicator_list"); });
  CHECK(unseen.first == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(unseen.second.find("mqs_update_communicator_list") != std::string::npos);
  CHECK(refusal([&] { objects.setUpProcess(4, "mqs_next_operation"); }).first ==
        MQD_PROXY_ERR_BAD_HANDLE);
  objects.process(3).setUp = true;
  CHECK(&objects.setUpProcess(3, "mqs_next_operation") == &objects.process(3));

  CHECK(refusal([&] { objects.setUpImage(1, "mqs_image_has_queues"); }).first ==
        MQD_PROXY_ERR_BAD_HANDLE);
  objects.image(1).setUp = true;
  CHECK(objects.setUpImage(1, "mqs_image_has_queues").token == 1);
}

TEST_CASE("DebuggerObjects: info tokens name each info once, by kind, until destroyed") {
  DebuggerObjects objects;
  int a = 0, b = 0;
  CHECK(objects.infoToken(InfoKind::PROCESS, 7, nullptr) == 0);  // NULL stays NULL
  uint64_t ta = objects.infoToken(InfoKind::PROCESS, 7, &a);
  uint64_t tb = objects.infoToken(InfoKind::IMAGE, 1, &b);
  CHECK(ta != 0);
  CHECK(tb != 0);
  CHECK(ta != tb);
  CHECK(objects.infoToken(InfoKind::PROCESS, 7, &a) == ta);  // the same info: the same token

  CHECK(objects.infoFromToken(InfoKind::PROCESS, ta, "mqs_destroy_process_info") == &a);
  // A token of another kind, or one never issued, is refused with the entry point named.
  auto wrongKind = refusal([&] { objects.infoFromToken(InfoKind::IMAGE, ta, "mqs_x"); });
  CHECK(wrongKind.first == MQD_PROXY_ERR_BAD_HANDLE);
  CHECK(wrongKind.second.find("mqs_x") != std::string::npos);
  CHECK(refusal([&] { objects.infoFromToken(InfoKind::PROCESS, 999, "mqs_x"); }).first ==
        MQD_PROXY_ERR_BAD_HANDLE);

  // Destroyed: refused from then on (a second mqs_destroy_*_info of the same token).
  objects.forgetInfo(ta);
  CHECK(refusal([&] { objects.infoFromToken(InfoKind::PROCESS, ta, "mqs_x"); }).first ==
        MQD_PROXY_ERR_BAD_HANDLE);
  // The info's address may be reused by the DLL for a new info: it gets a fresh token.
  CHECK(objects.infoToken(InfoKind::PROCESS, 7, &a) != ta);
}

TEST_CASE("DebuggerObjects: a destroyed info is no stand-in's any more") {
  // Found by fuzz_server_connection: a client that destroyed a process's info and then called
  // on that process had the DLL read the info it had freed.
  DebuggerObjects objects;
  int processInfo = 0, imageInfo = 0;
  RemoteProcess& p = objects.process(7);
  RemoteProcess& q = objects.process(8);
  RemoteImage& i = objects.image(1);
  p.info = reinterpret_cast<mqs_process_info*>(&processInfo);
  q.info = reinterpret_cast<mqs_process_info*>(&processInfo);  // a DLL may share one
  i.info = reinterpret_cast<mqs_image_info*>(&imageInfo);
  uint64_t tp = objects.infoToken(InfoKind::PROCESS, 7, p.info);
  objects.infoToken(InfoKind::IMAGE, 1, i.info);
  objects.forgetInfo(tp);
  CHECK(p.info == nullptr);
  CHECK(q.info == nullptr);
  CHECK(i.info == reinterpret_cast<mqs_image_info*>(&imageInfo));  // another kind: untouched
}

TEST_CASE("DebuggerObjects: a re-established session keeps the tokens the debugger holds") {
  DebuggerObjects objects;
  objects.reserve({{InfoKind::PROCESS, 7, 5},
                   {InfoKind::IMAGE, 1, 2},
                   {InfoKind::JOB, 9, 0},      // token 0: ignored
                   {InfoKind::JOB, 3, 5}});    // reserved twice: the second is ignored
  int p = 0, i = 0, j = 0, other = 0;
  CHECK(objects.infoToken(InfoKind::PROCESS, 7, &p) == 5);
  CHECK(objects.infoToken(InfoKind::IMAGE, 1, &i) == 2);
  // Fresh tokens are issued above every reserved one, so none collides with a held token.
  uint64_t fresh = objects.infoToken(InfoKind::JOB, 3, &j);
  CHECK(fresh > 5);
  CHECK(objects.infoToken(InfoKind::PROCESS, 8, &other) == fresh + 1);
  // A reservation is used once: a second info on the same handle gets a fresh token.
  int again = 0;
  CHECK(objects.infoToken(InfoKind::PROCESS, 7, &again) == fresh + 2);
}

TEST_CASE("DebuggerObjects: the session's end gets every info nobody destroyed, once") {
  DebuggerObjects objects;
  int p1 = 0, p2 = 0, img = 0;
  uint64_t t1 = objects.infoToken(InfoKind::PROCESS, 1, &p1);
  objects.infoToken(InfoKind::PROCESS, 2, &p2);
  objects.infoToken(InfoKind::IMAGE, 1, &img);
  objects.forgetInfo(t1);  // the debugger destroyed this one

  std::vector<void*> left = objects.takeLiveInfos(InfoKind::PROCESS);
  CHECK(left == std::vector<void*>{&p2});
  CHECK(objects.takeLiveInfos(InfoKind::PROCESS).empty());  // forgotten as they are returned
  CHECK(objects.takeLiveInfos(InfoKind::IMAGE) == std::vector<void*>{&img});
}

TEST_CASE("DebuggerObjects: every process is visited once") {
  DebuggerObjects objects;
  objects.process(1);
  objects.process(2);
  objects.process(1);
  std::vector<uint64_t> seen;
  objects.forEachProcess([&](RemoteProcess& p) { seen.push_back(p.token); });
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<uint64_t>{1, 2});
}
