/* Stand-in for Open MPI 5's opal/mca/threads/pthreads/threads_pthreads_mutex.h, which Debian's
 * libopenmpi-dev (5.0) does not ship although the installed opal/mca/threads/mutex.h includes
 * it. The pthreads component Debian builds makes Open MPI's internal mutex and condition the
 * pthread ones; opal_mutex_t, in the free lists the DLL reads, embeds that mutex, and
 * build-ompi-types.sh's size checks catch any difference. The functions are only declared:
 * nothing here is ever run. */
#ifndef MQD_STUB_THREADS_PTHREADS_MUTEX_H
#define MQD_STUB_THREADS_PTHREADS_MUTEX_H

#include <pthread.h>
#include <stdbool.h>

typedef pthread_mutex_t opal_thread_internal_mutex_t;
typedef pthread_cond_t opal_thread_internal_cond_t;
#define OPAL_THREAD_INTERNAL_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define OPAL_THREAD_INTERNAL_COND_INITIALIZER PTHREAD_COND_INITIALIZER

int opal_thread_internal_mutex_init(opal_thread_internal_mutex_t *mutex, bool recursive);
void opal_thread_internal_mutex_lock(opal_thread_internal_mutex_t *mutex);
int opal_thread_internal_mutex_trylock(opal_thread_internal_mutex_t *mutex);
void opal_thread_internal_mutex_unlock(opal_thread_internal_mutex_t *mutex);
void opal_thread_internal_mutex_destroy(opal_thread_internal_mutex_t *mutex);
int opal_thread_internal_cond_init(opal_thread_internal_cond_t *cond);
void opal_thread_internal_cond_wait(opal_thread_internal_cond_t *cond,
                                    opal_thread_internal_mutex_t *mutex);
void opal_thread_internal_cond_broadcast(opal_thread_internal_cond_t *cond);
void opal_thread_internal_cond_signal(opal_thread_internal_cond_t *cond);
void opal_thread_internal_cond_destroy(opal_thread_internal_cond_t *cond);

#endif
