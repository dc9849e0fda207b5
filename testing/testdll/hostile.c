/*
 * hostile.c: an MQD DLL that hands the proxy bad input, the way a buggy vendor DLL might.
 *
 *   mqs_version_string       a 100 KiB string with no NUL inside the first 64 KiB
 *   mqs_dll_error_string     the same for code 7777
 *   mqs_image_has_queues     find_symbol with an 8 KiB name without a NUL in its first 4 KiB;
 *                            returns find_symbol's answer
 *   mqs_process_has_queues   fetch_data of -1 bytes, then of 1 GiB; returns the worse answer
 *   mqs_setup_operation_iterator  an out-of-range op class -> its own error, honestly
 *   mqs_next_communicator    loops forever (as a DLL may on a corrupt, circular list)
 * Everything else is a well-behaved empty library (no communicators). The server must refuse
 * what it cannot trust with a clear error, never read past what it may, and stay up.
 */
#include <stdlib.h>
#include <string.h>

#include "mqs_interface.h"

#define EXPORT __attribute__((visibility("default")))

static const mqs_basic_callbacks *basic;
static char long_text[100 << 10];
static char long_name[8 << 10];

static void fill(char *buffer, size_t size, char c) {
  memset(buffer, c, size);
  buffer[size - 1] = '\0'; /* far beyond any bound the server may read to */
}

EXPORT void mqs_setup_basic_callbacks(const mqs_basic_callbacks *cb) {
  basic = cb;
  fill(long_text, sizeof long_text, 'v');
  fill(long_name, sizeof long_name, 'n');
}
EXPORT char *mqs_version_string(void) {
  fill(long_text, sizeof long_text, 'v');
  return long_text;
}
EXPORT int mqs_version_compatibility(void) { return MQS_INTERFACE_COMPATIBILITY_MPI1; }
EXPORT char *mqs_dll_error_string(int code) {
  if (code == 7777) return long_text;
  return "hostile DLL error";
}

EXPORT int mqs_setup_image(mqs_image *image, const mqs_image_callbacks *cb) {
  basic->mqs_put_image_info_fp(image, (mqs_image_info *)cb);
  return mqs_ok;
}
EXPORT int mqs_image_has_queues(mqs_image *image, char **message) {
  const mqs_image_callbacks *cb = (const mqs_image_callbacks *)basic->mqs_get_image_info_fp(image);
  mqs_taddr_t addr = 0;
  *message = NULL;
  return cb->mqs_find_symbol_fp(image, long_name, &addr);
}
EXPORT void mqs_destroy_image_info(mqs_image_info *info) { (void)info; }

EXPORT int mqs_setup_process(mqs_process *process, const mqs_process_callbacks *cb) {
  basic->mqs_put_process_info_fp(process, (mqs_process_info *)cb);
  return mqs_ok;
}
EXPORT int mqs_process_has_queues(mqs_process *process, char **message) {
  const mqs_process_callbacks *cb =
      (const mqs_process_callbacks *)basic->mqs_get_process_info_fp(process);
  char small[16];
  int negative = cb->mqs_fetch_data_fp(process, 0x1000, -1, small);
  int huge = cb->mqs_fetch_data_fp(process, 0x1000, 1 << 30, small);
  *message = NULL;
  return negative != mqs_ok ? negative : huge;
}
EXPORT void mqs_destroy_process_info(mqs_process_info *info) { (void)info; }

EXPORT int mqs_update_communicator_list(mqs_process *p) { (void)p; return mqs_ok; }
EXPORT int mqs_setup_communicator_iterator(mqs_process *p) { (void)p; return mqs_end_of_list; }
EXPORT int mqs_get_communicator(mqs_process *p, mqs_communicator *c) {
  (void)p;
  (void)c;
  return mqs_end_of_list;
}
EXPORT int mqs_next_communicator(mqs_process *p) {
  volatile unsigned long spins = 0;
  (void)p;
  for (;;) ++spins;
  return mqs_end_of_list;
}
EXPORT int mqs_setup_operation_iterator(mqs_process *p, int op) {
  (void)p;
  return op < 0 || op > 2 ? mqs_first_user_code : mqs_end_of_list;
}
EXPORT int mqs_next_operation(mqs_process *p, mqs_pending_operation *op) {
  (void)p;
  (void)op;
  return mqs_end_of_list;
}
