#include "LeakCheck.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace mqd::server {

int leakCheckedStatus(int status) {
#if defined(__SANITIZE_ADDRESS__)
  if (__lsan_do_recoverable_leak_check() != 0) return 23;  // LeakSanitizer's own exit code
#endif
  return status;
}

}  // namespace mqd::server
