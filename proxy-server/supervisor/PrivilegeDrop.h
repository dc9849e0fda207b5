// PrivilegeDrop: running workers as a less privileged user (--worker-user).
//
// The supervisor resolves the user once at start-up (resolveWorkerUser); each forked worker
// calls dropPrivileges() first thing, before it reads a byte from its client or loads a DLL.
// Afterwards the worker has the user's uid and primary gid, no supplementary groups, and
// cannot regain root (verified, not assumed).
#pragma once

#include <sys/types.h>

#include <string>

namespace mqd::server {

struct WorkerUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Looks up `name`. Throws std::runtime_error when this process is not root (dropping needs
// root: say so rather than silently run workers with our own rights), when the user does not
// exist, or when it is root or its primary group is root.
WorkerUser resolveWorkerUser(const std::string& name);

// setgroups({gid}), setgid(gid), setuid(uid), then checks that real, effective and saved ids
// all changed and that setuid(0)/setgid(0) now fail. Throws std::runtime_error on any failure;
// the caller (a freshly forked worker) must then exit without serving.
void dropPrivileges(const WorkerUser& user);

}  // namespace mqd::server
