// LookupDiscovery: the look-ups a vendor DLL's image set-up will make, found before it makes
// them, when nothing is known of them (docs/round-trips.md, "Look-ups discovered").
//
// In a first session ever with a DLL (nothing learned by the server or the shim), the first
// image's set-up asks its look-ups one at a time, each a round trip: about 110 for Open MPI's,
// 11 s at 100 ms. Yet the names are the DLL's own, and an image set-up asks nothing but
// look-ups. discover() forks the worker; the child runs the image's set-up and has-queues call
// on its own copy of everything, every look-up answered by a stand-in (found: an address, a
// type, offset 0, size 8; RemoteDebugger::discoverInto) and its name written to a pipe. Nothing
// of the child reaches the debugger or the parent's state: no request or notification leaves
// it, every descriptor but the pipe is closed, its output goes to /dev/null, and it ends with
// _exit. The parent reads the names until the child ends or kDeadline passes (then kills it),
// and the caller asks the debugger for them all in one round trip before the real set-up
// runs with real answers.
//
// A stand-in may lead the DLL along another path than the real answers: the child then names
// fewer look-ups (the rest are asked as before) or some the DLL never asks (a look-up asked
// ahead, which the transparency rule allows: docs/transparency.md). A child that crashes or
// loops names what it named before.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "LookupKey.h"

namespace mqd::server {

class LookupDiscovery {
 public:
  // How long the parent waits for the child's names, at most.
  static constexpr std::chrono::milliseconds kDeadline{5000};
  // The most names taken from a child (wire::MAX_LOOKUPS_AHEAD: what one batch may carry).
  static constexpr size_t kMaxNames = 4096;

  // Runs `setUp(fd)` in a child process, which must have every look-up it meets written to
  // `fd` (writeKey); the child _exits after it. Returns the distinct look-ups named, in the
  // order first named, once the child ended or `deadline` passed; none if fork fails.
  static std::vector<LookupKey> discover(const std::function<void(int fd)>& setUp,
                                         std::chrono::milliseconds deadline = kDeadline);

  // One look-up named in the child, as discover() reads it. Never throws; a failed write ends
  // nothing (the parent takes what it got).
  static void writeKey(int fd, const LookupKey& key);
  // The look-ups in `bytes` (writeKey's records), at most kMaxNames; a record cut short ends
  // them.
  static std::vector<LookupKey> parse(const std::vector<unsigned char>& bytes);
};

}  // namespace mqd::server
