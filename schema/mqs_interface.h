/*
 * mqs_interface.h: the MPI Message Queue Dumping (MQD) C ABI, as mqd-proxy speaks it.
 *
 * This is the contract between a debugger and an MQD "DLL" (a shared object that knows one
 * MPI implementation's internals). The debugger dlopen()s the DLL and calls its mqs_* entry
 * points; the DLL calls back into the debugger only through the function-pointer tables the
 * debugger hands it, to look up symbols and types and to read the target's memory.
 *
 * Written for mqd-proxy from the MQD specification drafts and the historical interface
 * description. Both libmqdproxy.so (the shim a debugger loads) and mqd-proxy-server (which
 * loads the vendor DLL) are compiled against this header, each for its own platform.
 *
 * Compatibility levels:
 *   2  the MPI-1 set every MQD DLL implements (Open MPI 4.1 reports 2);
 *   3  adds the MPI-2 job / process-identity / new-process calls and the job callbacks.
 * This header always declares the level-3 set. Structures that grew at level 3 are marked; a
 * level-2 peer uses only their level-2 prefix.
 *
 * Widths: mqs_taddr_t / mqs_tword_t follow the platform's `long` (32 bits on ILP32, 64 on LP64).
 * Define MQS_FORCE_64BIT_TADDR to 1 before including this header (CMake: -DMQD_TADDR64=ON) to
 * make them 64-bit on a 32-bit host, so that a 32-bit debugger can name 64-bit target addresses.
 * Both sides of a dlopen() must agree: mqs_dll_taddr_width() tells the debugger which it got.
 */
#ifndef MQD_MQS_INTERFACE_H
#define MQD_MQS_INTERFACE_H

#include <stddef.h> /* size_t */
#include <stdio.h>  /* FILENAME_MAX, used by mqs_process_location */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Interface version
 */
enum {
  MQS_INTERFACE_COMPATIBILITY_MPI1 = 2, /* compatibility-2 entry points only */
  MQS_INTERFACE_COMPATIBILITY_MPI2 = 3, /* plus jobs, process identity, new processes */
  MQS_INTERFACE_COMPATIBILITY = MQS_INTERFACE_COMPATIBILITY_MPI2
};

/* ---------------------------------------------------------------------------------------------
 * Target-independent scalar types
 *
 * mqs_taddr_t holds a target address (a target `void *`), mqs_tword_t a target word (a target
 * `long`), whatever the target's own widths are. They are host types: the DLL converts target
 * bytes into them with mqs_target_to_host_ft.
 */
#if defined(MQS_FORCE_64BIT_TADDR) && MQS_FORCE_64BIT_TADDR
typedef unsigned long long mqs_taddr_t;
typedef long long mqs_tword_t;
#else
typedef unsigned long mqs_taddr_t;
typedef long mqs_tword_t;
#endif

/* ---------------------------------------------------------------------------------------------
 * Opaque handles
 *
 * Owned by the debugger and only ever passed by pointer; the DLL uses them as keys and hands
 * them back through callbacks. The debugger may use real pointers or any other non-NULL key.
 */
typedef struct mqs_image_ mqs_image;     /* an executable image (program or library set) */
typedef struct mqs_process_ mqs_process; /* one MPI process */
typedef struct mqs_job_ mqs_job;         /* level 3: the universe of processes of a job */
typedef struct mqs_type_ mqs_type;       /* a named type in the target's debug information */

/* Owned by the DLL: whatever it wants to hang on an image, process or job. The debugger only
 * stores these (put_*_info) and returns them (get_*_info, destroy_*_info). */
typedef struct mqs_image_info_ mqs_image_info;
typedef struct mqs_process_info_ mqs_process_info;
typedef struct mqs_job_info_ mqs_job_info; /* level 3 */

/* ---------------------------------------------------------------------------------------------
 * Result codes
 *
 * Every int-returning call returns mqs_ok on success; anything else is a failure. Both the
 * debugger and the DLL allocate their own codes from mqs_first_user_code up; since a caller
 * always knows which side it called, the ranges may overlap. Turn a DLL code into text with
 * mqs_dll_error_string(), a debugger code with the errorstring callback.
 */
enum {
  mqs_ok = 0,
  mqs_no_information = 1, /* the query is valid but there is nothing to tell */
  mqs_end_of_list = 2,    /* an iterator has no further element */
  mqs_first_user_code = 100
};

/* Iterator results: "next" calls return mqs_true (0, i.e. mqs_ok) while they produced an
 * element and anything else (typically mqs_end_of_list) when they are exhausted. */
enum { mqs_true = mqs_ok, mqs_false = mqs_end_of_list };

/* Returned by mqs_get_global_rank_ft when the process's rank is unknown. */
enum { MQS_INVALID_PROCESS = -1 };

/* Source language of a symbol or type lookup. */
typedef enum {
  mqs_lang_c = 'c',
  mqs_lang_cplus = 'C',
  mqs_lang_f77 = 'f',
  mqs_lang_f90 = 'F'
} mqs_lang_code;

/* The three conceptual queues of each communicator. Passed as int to
 * mqs_setup_operation_iterator. */
typedef enum {
  mqs_pending_sends = 0,
  mqs_pending_receives = 1,
  mqs_unexpected_messages = 2
} mqs_op_class;

/* mqs_pending_operation.status */
enum mqs_status { mqs_st_pending = 0, mqs_st_matched = 1, mqs_st_complete = 2 };

/* ---------------------------------------------------------------------------------------------
 * Structures that cross the interface
 */

/* Sizes, in bytes, of basic types on the target. Filled by the debugger's get_type_sizes
 * callback.
 *
 * Two layouts exist in the wild: MPICH's header has the first five members, Open MPI's has all
 * seven. A debugger built against the five-member header writes only five; a DLL built against
 * the seven-member one reads seven. Whoever provides the buffer should make it at least seven
 * ints and zero (or otherwise initialise) it first. */
typedef struct {
  int short_size;     /* sizeof(short) */
  int int_size;       /* sizeof(int) */
  int long_size;      /* sizeof(long) */
  int long_long_size; /* sizeof(long long) */
  int pointer_size;   /* sizeof(void *) */
  int bool_size;      /* sizeof(bool): Open MPI layout only */
  int size_t_size;    /* sizeof(size_t): Open MPI layout only */
} mqs_target_type_sizes;

enum {
  MQS_TARGET_TYPE_SIZES_MPICH_INTS = 5,  /* members in MPICH's layout */
  MQS_TARGET_TYPE_SIZES_OPENMPI_INTS = 7 /* members in Open MPI's layout (this header) */
};

/* One communicator, as reported by mqs_get_communicator. */
typedef struct {
  mqs_taddr_t unique_id;  /* anything that identifies the communicator uniquely */
  mqs_tword_t local_rank; /* this process's rank in it */
  mqs_tword_t size;       /* number of processes in it */
  char name[64];          /* its name, if it has one (MPI_Comm_set_name) */
} mqs_communicator;

/* One element of a queue, as reported by mqs_next_operation. Message data is assumed to be a
 * contiguous buffer. The actual_* fields are meaningful for sends, and for receives whose
 * status is matched or complete. */
typedef struct {
  int status;                      /* enum mqs_status */
  mqs_tword_t desired_local_rank;  /* peer rank in the communicator, -1 for any source */
  mqs_tword_t desired_global_rank; /* the same peer as a rank in MPI_COMM_WORLD */
  int tag_wild;                    /* non-zero for a receive with MPI_ANY_TAG */
  mqs_tword_t desired_tag;         /* meaningful only when tag_wild is zero */
  mqs_tword_t desired_length;      /* buffer length in bytes */
  int system_buffer;               /* non-zero when the buffer belongs to the MPI library */
  mqs_taddr_t buffer;              /* target address of the data */

  mqs_tword_t actual_local_rank;
  mqs_tword_t actual_global_rank;
  mqs_tword_t actual_tag;
  mqs_tword_t actual_length;

  /* Free text for the user, uninterpreted by the debugger: up to five NUL-terminated lines. */
  char extra_text[5][64];
} mqs_pending_operation;

/* Level 3: where a newly created or connected process lives (mqs_next_new_process). */
typedef struct mqs_process_location {
  long pid;
  char image_name[FILENAME_MAX];
  char host_name[64];
} mqs_process_location;

/* ---------------------------------------------------------------------------------------------
 * Callbacks provided by the debugger
 *
 * The DLL reaches the debugger only through these. The tables stay owned by the debugger,
 * which keeps them valid for as long as the DLL is in use; the DLL keeps the pointer and must
 * neither modify nor free the table.
 */

/* Memory. The DLL must allocate through these rather than its own allocator. malloc returns
 * NULL on failure; memory from mqs_malloc_ft is released with mqs_free_ft. */
typedef void *(*mqs_malloc_ft)(size_t size);
typedef void (*mqs_free_ft)(void *ptr);

/* Print a diagnostic message (for debugging the DLL only). */
typedef void (*mqs_dprints_ft)(const char *text);

/* Text for an error code the debugger returned. The string stays owned by the debugger; the
 * DLL must not free it. */
typedef char *(*mqs_errorstring_ft)(int code);

/* Associate DLL-owned information with a debugger object, and get it back. */
typedef void (*mqs_put_image_info_ft)(mqs_image *image, mqs_image_info *info);
typedef mqs_image_info *(*mqs_get_image_info_ft)(mqs_image *image);
typedef void (*mqs_put_process_info_ft)(mqs_process *process, mqs_process_info *info);
typedef mqs_process_info *(*mqs_get_process_info_ft)(mqs_process *process);
typedef void (*mqs_put_job_info_ft)(mqs_job *job, mqs_job_info *info);  /* level 3 */
typedef mqs_job_info *(*mqs_get_job_info_ft)(mqs_job *job);           /* level 3 */

/* Level 3: the process with the given index in a job, or NULL. */
typedef mqs_process *(*mqs_get_process_ft)(mqs_job *job, int index);

/* Fill in the target's basic type sizes (see mqs_target_type_sizes for the 5/7 caveat). */
typedef void (*mqs_get_type_sizes_ft)(mqs_process *process, mqs_target_type_sizes *sizes);

/* Look up a function or a data symbol in an image. Return mqs_ok and store the address in
 * *addr, or mqs_no_information (or another debugger code) when it is not found. The DLL may
 * pass addr == NULL to test for existence only; the debugger must then not store anything. */
typedef int (*mqs_find_function_ft)(mqs_image *image, char *name, mqs_lang_code lang,
                                    mqs_taddr_t *addr);
typedef int (*mqs_find_symbol_ft)(mqs_image *image, char *name, mqs_taddr_t *addr);

/* Look up a named type: a handle, or NULL when unknown. Debug information may be loaded lazily,
 * so MPI libraries keep the types the DLL needs in a file whose debug information is loaded
 * early. */
typedef mqs_type *(*mqs_find_type_ft)(mqs_image *image, char *name, mqs_lang_code lang);

/* Byte offset of a named field of a structure type, or -1 if there is no such field. */
typedef int (*mqs_field_offset_ft)(mqs_type *type, char *field);

/* Size in bytes of a type, like sizeof. */
typedef int (*mqs_sizeof_ft)(mqs_type *type);

/* The rank of a process in MPI_COMM_WORLD, or MQS_INVALID_PROCESS. */
typedef int (*mqs_get_global_rank_ft)(mqs_process *process);

/* The image a process is an instance of. */
typedef mqs_image *(*mqs_get_image_ft)(mqs_process *process);

/* Copy size bytes of target memory at addr into buf, byte for byte as the target stores them.
 * Return mqs_ok, or a debugger error code if the memory cannot be read. */
typedef int (*mqs_fetch_data_ft)(mqs_process *process, mqs_taddr_t addr, int size, void *buf);

/* Convert size bytes of target representation (a target integer or pointer of that size) into
 * the representation of the machine the DLL runs on. */
typedef void (*mqs_target_to_host_ft)(mqs_process *process, const void *in, void *out, int size);

/* Level 3: the job a process belongs to, and the process's identity (its index in the job's
 * universe). The historical declaration typed the identity callback's argument as a job
 * pointer although it answers for a process; the argument is a process here. Both are
 * pointers, so the ABI is the same. */
typedef mqs_job *(*mqs_get_process_job_ft)(mqs_process *process);
typedef int (*mqs_get_process_identity_ft)(mqs_process *process);

/* The basic table, given once to mqs_setup_basic_callbacks. A level-2 debugger provides the
 * first eight members only; the job members exist at level 3. */
typedef struct mqs_basic_callbacks {
  mqs_malloc_ft mqs_malloc_fp;
  mqs_free_ft mqs_free_fp;
  mqs_dprints_ft mqs_dprints_fp;
  mqs_errorstring_ft mqs_errorstring_fp;
  mqs_put_image_info_ft mqs_put_image_info_fp;
  mqs_get_image_info_ft mqs_get_image_info_fp;
  mqs_put_process_info_ft mqs_put_process_info_fp;
  mqs_get_process_info_ft mqs_get_process_info_fp;
  /* level 3 */
  mqs_put_job_info_ft mqs_put_job_info_fp;
  mqs_get_job_info_ft mqs_get_job_info_fp;
} mqs_basic_callbacks;

/* Level 3: given to mqs_setup_job. */
typedef struct mqs_job_callbacks {
  mqs_get_process_ft mqs_get_process_fp;
} mqs_job_callbacks;

/* Given to mqs_setup_image, once per image. */
typedef struct mqs_image_callbacks {
  mqs_get_type_sizes_ft mqs_get_type_sizes_fp;
  mqs_find_function_ft mqs_find_function_fp;
  mqs_find_symbol_ft mqs_find_symbol_fp;
  mqs_find_type_ft mqs_find_type_fp;
  mqs_field_offset_ft mqs_field_offset_fp;
  mqs_sizeof_ft mqs_sizeof_fp;
} mqs_image_callbacks;

/* Given to mqs_setup_process, once per process. A level-2 debugger provides the first four
 * members only. */
typedef struct mqs_process_callbacks {
  mqs_get_global_rank_ft mqs_get_global_rank_fp;
  mqs_get_image_ft mqs_get_image_fp;
  mqs_fetch_data_ft mqs_fetch_data_fp;
  mqs_target_to_host_ft mqs_target_to_host_fp;
  /* level 3 */
  mqs_get_process_job_ft mqs_get_process_job_fp;
  mqs_get_process_identity_ft mqs_get_process_identity_fp;
} mqs_process_callbacks;

/* ---------------------------------------------------------------------------------------------
 * Entry points provided by the DLL, called by the debugger
 *
 * Typical order (spec, interaction model): version_string, version_compatibility,
 * dll_taddr_width; setup_basic_callbacks; per image setup_image then image_has_queues; per
 * process of an image with queues setup_process then process_has_queues; then, for each
 * refresh, update_communicator_list and the two iterators.
 */

/* Keep the basic callback table (the debugger keeps it valid). */
extern void mqs_setup_basic_callbacks(const mqs_basic_callbacks *callbacks);

/* A version string, owned by the DLL (the debugger must not free it). */
extern char *mqs_version_string(void);

/* The MQS_INTERFACE_COMPATIBILITY the DLL was built with (2 or 3). */
extern int mqs_version_compatibility(void);

/* sizeof(mqs_taddr_t) as compiled into the DLL; not a property of any target process. Optional:
 * a DLL without it is assumed to use the platform's long. */
extern int mqs_dll_taddr_width(void);

/* Text for an error code the DLL returned, owned by the DLL. */
extern char *mqs_dll_error_string(int code);

/* Set up an image: keep the callbacks (typically in an mqs_image_info attached with
 * put_image_info). Called once per executable image. */
extern int mqs_setup_image(mqs_image *image, const mqs_image_callbacks *callbacks);

/* Does this image carry what message-queue access needs? Returns mqs_ok if so. The DLL may set
 * *message (success or not) to a string it owns: a printf format with at most one "%s", where
 * the debugger substitutes the image name, and no other conversion. It may also leave *message
 * untouched. Called once per image; the debugger caches the answer. */
extern int mqs_image_has_queues(mqs_image *image, char **message);

/* The debugger no longer needs this image's information. */
extern void mqs_destroy_image_info(mqs_image_info *info);

/* Set up a process of an image that has queues. Per-process state (e.g. addresses inside
 * shared libraries that may be mapped differently) belongs here. */
extern int mqs_setup_process(mqs_process *process, const mqs_process_callbacks *callbacks);

/* The debugger no longer needs this process's information. */
extern void mqs_destroy_process_info(mqs_process_info *info);

/* Like mqs_image_has_queues, for a live process ("%s" stands for the process name). */
extern int mqs_process_has_queues(mqs_process *process, char **message);

/* Bring the DLL's model of the process's communicators up to date. The debugger calls this
 * before every refresh of the queues. */
extern int mqs_update_communicator_list(mqs_process *process);

/* Communicator iteration: setup, then get/next until next stops returning mqs_ok. At most one
 * communicator iteration and one operation iteration run per process at a time. */
extern int mqs_setup_communicator_iterator(mqs_process *process);
extern int mqs_get_communicator(mqs_process *process, mqs_communicator *communicator);
extern int mqs_next_communicator(mqs_process *process);

/* Optional: the group of the current communicator. ranks has room for the communicator's size
 * (from mqs_get_communicator); element i receives the MPI_COMM_WORLD rank of local rank i. */
extern int mqs_get_comm_group(mqs_process *process, int *ranks);

/* Operation iteration over one queue (an mqs_op_class) of the current communicator. next returns
 * mqs_ok while it filled *operation. */
extern int mqs_setup_operation_iterator(mqs_process *process, int op_class);
extern int mqs_next_operation(mqs_process *process, mqs_pending_operation *operation);

/* Level 3: jobs. */
extern int mqs_setup_job(mqs_job *job, const mqs_job_callbacks *callbacks);
extern int mqs_destroy_job_info(mqs_job_info *info);

/* Level 3: processes created (MPI_Comm_spawn) or connected (MPI_Comm_connect, MPI_Comm_join)
 * since the debugger last looked. */
extern int mqs_setup_new_process_iterator(mqs_process *process);
extern int mqs_next_new_process(mqs_process *process, mqs_process_location *location);

/* Level 3: after setting up a newly attached process, the debugger tells the DLL its identity. */
extern int mqs_set_process_identity(mqs_process *process, int identity);

/* Non-standard extension used by padb: the call count and activity of collective number
 * `collective` (0..13: Barrier, Bcast, Allgather, Allgatherv, Allreduce, Alltoall, Alltoallv,
 * Reduce_scatter, Reduce, Gather, Gatherv, Scan, Scatter, Scatterv) on the current
 * communicator. Returns mqs_no_information when the DLL cannot tell. */
extern int mqs_get_comm_coll_state(mqs_process *process, int collective, int *sequence,
                                   int *active);

#ifdef __cplusplus
}
#endif

#endif /* MQD_MQS_INTERFACE_H */
