#include "PrivilegeDrop.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace mqd::server {
namespace {

[[noreturn]] void failDrop(const std::string& what) {
  throw std::runtime_error("--worker-user: " + what + ": " + std::strerror(errno));
}

}  // namespace

WorkerUser resolveWorkerUser(const std::string& name) {
  if (::geteuid() != 0) {
    throw std::runtime_error("--worker-user " + name +
                             ": the server must start as root to run workers as another user "
                             "(it runs as uid " + std::to_string(::geteuid()) +
                             "); leave the option out to run workers as yourself");
  }
  std::vector<char> buf(16384);
  passwd pw;
  passwd* found = nullptr;
  int err = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (err != 0 || found == nullptr) {
    throw std::runtime_error("--worker-user " + name + ": no such user");
  }
  if (pw.pw_uid == 0) {
    throw std::runtime_error("--worker-user " + name + ": is root; name an unprivileged user");
  }
  if (pw.pw_gid == 0) {
    throw std::runtime_error("--worker-user " + name +
                             ": its primary group is root; name an unprivileged user");
  }
  return WorkerUser{name, pw.pw_uid, pw.pw_gid};
}

void dropPrivileges(const WorkerUser& user) {
  gid_t groups[1] = {user.gid};
  if (::setgroups(1, groups) != 0) failDrop("setgroups");
  if (::setresgid(user.gid, user.gid, user.gid) != 0) failDrop("setresgid");
  if (::setresuid(user.uid, user.uid, user.uid) != 0) failDrop("setresuid");
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  if (::getresuid(&ruid, &euid, &suid) != 0 || ::getresgid(&rgid, &egid, &sgid) != 0) {
    failDrop("getresuid");
  }
  if (ruid != user.uid || euid != user.uid || suid != user.uid || rgid != user.gid ||
      egid != user.gid || sgid != user.gid) {
    errno = EPERM;
    failDrop("the ids did not change");
  }
  // The point of no return: with every id changed, root must be out of reach.
  if (::setuid(0) == 0 || ::seteuid(0) == 0 || ::setgid(0) == 0) {
    errno = EPERM;
    failDrop("root could be regained after dropping");
  }
}

}  // namespace mqd::server
