/* Stand-in for Open MPI 5's opal/mca/threads/pthreads/threads_pthreads_tsd.h, which Debian's
 * libopenmpi-dev (5.0) does not ship although the installed opal/mca/threads/tsd.h includes it:
 * thread-specific data keys are pthread keys. Declarations only (see
 * threads_pthreads_mutex.h beside it). */
#ifndef MQD_STUB_THREADS_PTHREADS_TSD_H
#define MQD_STUB_THREADS_PTHREADS_TSD_H

#include <pthread.h>

typedef pthread_key_t opal_tsd_key_t;

int opal_tsd_key_delete(opal_tsd_key_t key);
int opal_tsd_set(opal_tsd_key_t key, void *value);
int opal_tsd_get(opal_tsd_key_t key, void **value);

#endif
