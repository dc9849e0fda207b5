/*
 * consumer: calls libmqdproxy.so through its installed headers, linked at build time (no
 * dlopen), the way a tool built with find_package(MqdProxy) does.
 *
 *   consumer EXPECTED_VERSION_PREFIX
 *
 * Prints mqs_version_string() (the vendor DLL's, through the server named by
 * MQD_PROXY_SERVER, or the shim's own sentence when there is none) and the shim's text for
 * MQD_PROXY_ERR_UNREACHABLE. Exits 0 when the version string starts with the expected prefix
 * and the shim's mqs_taddr_t is the one these headers give (the package passes the shim's
 * MQS_FORCE_64BIT_TADDR on); 1 otherwise.
 */
#include <mqd_proxy.h>
#include <mqs_interface.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *version, *unreachable;
  if (argc != 2) {
    fprintf(stderr, "usage: consumer EXPECTED_VERSION_PREFIX\n");
    return 2;
  }
  version = mqs_version_string();
  unreachable = mqs_dll_error_string(MQD_PROXY_ERR_UNREACHABLE);
  printf("mqs_version_string: %s\n", version ? version : "(null)");
  printf("mqs_dll_error_string(MQD_PROXY_ERR_UNREACHABLE): %s\n",
         unreachable ? unreachable : "(null)");
  if (version == NULL || strncmp(version, argv[1], strlen(argv[1])) != 0) {
    fprintf(stderr, "consumer: FAIL: the version string does not start with \"%s\"\n", argv[1]);
    return 1;
  }
  if (mqs_dll_taddr_width() != (int)sizeof(mqs_taddr_t)) {
    fprintf(stderr, "consumer: FAIL: the shim's mqs_taddr_t has %d bytes, these headers say %d\n",
            mqs_dll_taddr_width(), (int)sizeof(mqs_taddr_t));
    return 1;
  }
  return 0;
}
