// AsanFiber: tells AddressSanitizer which stack this thread runs on while kj fibers switch it,
// in builds with AddressSanitizer (MQD_SANITIZE); in other builds it does nothing and costs
// nothing.
//
// kj switches stacks without telling ASan (Debian's libkj is not built with it), so ASan goes
// on believing the thread runs on its own stack. An exception thrown on a fiber then cannot
// clear the frames it abandons ("ASan is ignoring requested __asan_handle_no_return"), their
// redzones stay poisoned, and the next call that reuses those bytes is reported as a
// stack-buffer-overflow that is not one. With these annotations ASan always knows the stack.
//
// Contract: one fiber at a time per thread (SessionService runs DLL calls strictly in turn).
//   * An AsanFiber is the first object of the fiber's function, constructed with the stack
//     size the kj::FiberPool was given; it lives until the function returns or throws.
//   * Every wait on that fiber's WaitScope is inside an AsanFiber::Wait.
//   * AsanFiber::backOnLoopStack() runs on the event loop's stack after the fiber has ended
//     (e.g. from an object attached to the fiber's promise).
#pragma once

#include <cstddef>

namespace mqd::server {

class AsanFiber {
 public:
#if defined(__SANITIZE_ADDRESS__)
  explicit AsanFiber(size_t stackBytes);
  ~AsanFiber();
#else
  explicit AsanFiber(size_t) {}
#endif
  AsanFiber(const AsanFiber&) = delete;
  AsanFiber& operator=(const AsanFiber&) = delete;

  // Around one wait on the fiber's WaitScope: the event loop's stack while it waits, the
  // fiber's again when it returns or throws.
  class Wait {
   public:
#if defined(__SANITIZE_ADDRESS__)
    Wait();
    ~Wait();
#else
    Wait() {}
#endif
    Wait(const Wait&) = delete;
    Wait& operator=(const Wait&) = delete;
  };

#if defined(__SANITIZE_ADDRESS__)
  static void backOnLoopStack();
#else
  static void backOnLoopStack() {}
#endif
};

}  // namespace mqd::server
