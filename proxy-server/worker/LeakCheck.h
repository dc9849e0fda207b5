// LeakCheck: LeakSanitizer's check for a process that ends with _exit().
//
// LeakSanitizer checks for leaks when a process exits normally; a forked worker ends with
// _exit() (the supervisor's atexit handlers and static objects are not its own to run), which
// skips that check. A worker calls this as it ends instead.
#pragma once

namespace mqd::server {

// In a build with AddressSanitizer (MQD_SANITIZE): checks for leaks now, reporting any as
// LeakSanitizer does (its options and suppressions apply), and returns 23 if there were some,
// `status` otherwise. In other builds returns `status` and does nothing else.
int leakCheckedStatus(int status);

}  // namespace mqd::server
