/* Stand-in for Open MPI 5's opal/mca/threads/pthreads/threads_pthreads_threads.h, which
 * Debian's libopenmpi-dev (5.0) does not ship although the installed opal/mca/threads/threads.h
 * includes it. threads.h itself defines opal_thread_t (the pthread handle and its function):
 * the component's header adds nothing any type the DLL reads contains. */
#ifndef MQD_STUB_THREADS_PTHREADS_THREADS_H
#define MQD_STUB_THREADS_PTHREADS_THREADS_H
#endif
