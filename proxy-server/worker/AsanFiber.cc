#include "AsanFiber.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <cstdint>

namespace mqd::server {
namespace {

// Per thread: the stacks involved and whether a switch to the loop's stack was announced
// (__sanitizer_start_switch_fiber) and not yet completed (__sanitizer_finish_switch_fiber).
// While one is pending ASan picks the stack by the stack pointer, which is right on both.
struct Stacks {
  bool pending = false;
  void* fakeStack = nullptr;
  const void* loopBottom = nullptr;
  size_t loopSize = 0;
  const void* fiberBottom = nullptr;
  size_t fiberSize = 0;
};
thread_local Stacks t;

void completePending() {
  if (!t.pending) return;
  const void* oldBottom;
  size_t oldSize;
  __sanitizer_finish_switch_fiber(t.fakeStack, &oldBottom, &oldSize);
  t.pending = false;
}

// Makes the fiber's stack the thread's current stack (we are running on it).
void nowOnFiber(bool learnLoopStack) {
  completePending();
  const void* oldBottom;
  size_t oldSize;
  __sanitizer_start_switch_fiber(&t.fakeStack, t.fiberBottom, t.fiberSize);
  __sanitizer_finish_switch_fiber(t.fakeStack, &oldBottom, &oldSize);
  if (learnLoopStack) {
    t.loopBottom = oldBottom;
    t.loopSize = oldSize;
  }
}

void leavingForLoop() {
  __sanitizer_start_switch_fiber(&t.fakeStack, t.loopBottom, t.loopSize);
  t.pending = true;
}

}  // namespace

AsanFiber::AsanFiber(size_t stackBytes) {
  // kj's fiber stacks are page-aligned mappings, and the frames above this one (kj's start
  // routine) take less than a page: the top of the stack is the next page boundary.
  auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uintptr_t top = (here + page - 1) & ~(page - 1);
  t.fiberBottom = reinterpret_cast<const void*>(top - stackBytes);
  t.fiberSize = stackBytes;
  nowOnFiber(true);
}

AsanFiber::~AsanFiber() { leavingForLoop(); }

AsanFiber::Wait::Wait() { leavingForLoop(); }

AsanFiber::Wait::~Wait() { nowOnFiber(false); }

void AsanFiber::backOnLoopStack() { completePending(); }

}  // namespace mqd::server
#endif
