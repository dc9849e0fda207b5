/*
 * testdll.c: an MQD DLL for tests, over the synthetic MPI of testing/harness/SyntheticMpi.
 *
 * Written the way a vendor DLL is: it knows nothing of the debugger but the callback tables,
 * keeps its state in infos hung on images and processes, reads the target only through
 * fetch_data + target_to_host, and learns every layout from find_type / field_offset / sizeof
 * and get_type_sizes. Between them, the entry points use every callback of the interface,
 * including find_symbol / find_function with a NULL out-pointer, errorstring, dprints and the
 * level-3 ones, and they deliberately leave parts of their outputs unwritten (the proxy must
 * reproduce that byte for byte).
 *
 * Built twice: TESTDLL_LEVEL 3 exports everything (level-3 calls, mqs_get_comm_group,
 * mqs_dll_taddr_width, mqs_get_comm_coll_state); TESTDLL_LEVEL 2 exports only the MPICH-like
 * required set, like a DLL lacking every optional entry point.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mqs_interface.h"

#ifndef TESTDLL_LEVEL
#define TESTDLL_LEVEL 3
#endif
/* Request kinds 97 and 98 crash the DLL (tests/reliability); 0 turns that off (tests/fuzz). */
#ifndef TESTDLL_CRASH_ON_DEMAND
#define TESTDLL_CRASH_ON_DEMAND 1
#endif

#define EXPORT __attribute__((visibility("default")))

enum {
  err_silent = mqs_first_user_code, /* 100 */
  err_no_current,
  err_bad_request,
  err_no_store,
  err_missing_type,
  err_missing_field,
  err_missing_symbol,
  err_fetch,
  err_no_info,
  err_poisoned, /* 109 */
  err_implausible /* 110 */
};

/* What this DLL believes of a target: more is taken for corrupt data (and refused with
   err_implausible), as a careful vendor DLL does; the synthetic targets stay far below. */
enum { max_communicators = 4096, max_group_size = 1 << 16, max_walk_operations = 1 << 16 };

static const mqs_basic_callbacks *basic;
#if TESTDLL_CRASH_ON_DEMAND
static volatile int *volatile crash_at; /* stays NULL */
#endif

/* ---- image state: type layout learned from the debugger ---- */

typedef struct {
  const mqs_image_callbacks *cb;
  int req_size, req_next, req_kind, req_status, req_peer, req_tag, req_length, req_buffer,
      req_actual_peer, req_actual_tag, req_actual_length, req_note;
  int grp_size, grp_ranks;
  int comm_next, comm_id, comm_rank, comm_size, comm_group, comm_name, comm_queue[3];
  int np_size, np_pid, np_host, np_image;
  int hook_found;
} image_info;

/* ---- process state ---- */

typedef struct comm_node {
  struct comm_node *next;
  mqs_communicator comm;
  int *world; /* local rank -> world rank */
  int world_size; /* entries in world (the group's size, which a corrupt target may make
                     differ from comm.size) */
  mqs_taddr_t queue[3];
} comm_node;

typedef struct {
  const mqs_process_callbacks *cb;
  mqs_target_type_sizes sizes;
  int sizes_seen; /* bit i: member i was written by get_type_sizes */
  int global_rank;
  mqs_taddr_t list_symbol, sequence_symbol;
  int sequence;
  comm_node *comms, *current;
  mqs_taddr_t cursor;
  int op_class;
  int walked; /* operations served since mqs_setup_communicator_iterator */
  int identity;
  int late; /* tmpi_late_identity: rank, job and identity asked at every update, not set-up */
  int anonymous; /* tmpi_no_identity: never asked */
  mqs_taddr_t new_procs;
  int new_count, new_index;
  mqs_job *job;
} process_info;

typedef struct {
  mqs_process *first;
} job_info;

/* ---- helpers ---- */

/* NULL when the debugger names no image, or one this DLL never set up. */
static image_info *image_of(mqs_process *p) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(p);
  mqs_image *image = pi ? pi->cb->mqs_get_image_fp(p) : NULL;
  return image ? (image_info *)basic->mqs_get_image_info_fp(image) : NULL;
}

static void note(const char *text) { basic->mqs_dprints_fp(text); }

/* Report a debugger error code with the debugger's own text (uses errorstring + dprints). */
static void report(const char *what, int code) {
  char line[200];
  const char *text = basic->mqs_errorstring_fp(code);
  snprintf(line, sizeof line, "testdll: %s failed: %s", what, text ? text : "(no text)");
  note(line);
}

static int fetch_int(mqs_process *p, mqs_taddr_t addr, int size, long long *out) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(p);
  unsigned char raw[8];
  unsigned char host[8];
  int rc;
  if (size <= 0 || size > 8) return err_fetch;
  rc = pi->cb->mqs_fetch_data_fp(p, addr, size, raw);
  if (rc != mqs_ok) {
    report("fetch_data", rc);
    return err_fetch;
  }
  pi->cb->mqs_target_to_host_fp(p, raw, host, size);
  switch (size) {
    case 1: *out = *(signed char *)host; break;
    case 2: { short v; memcpy(&v, host, 2); *out = v; break; }
    case 4: { int v; memcpy(&v, host, 4); *out = v; break; }
    default: { long long v; memcpy(&v, host, 8); *out = v; break; }
  }
  return mqs_ok;
}

static int fetch_ptr(mqs_process *p, mqs_taddr_t addr, mqs_taddr_t *out) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(p);
  long long v;
  int rc = fetch_int(p, addr, pi->sizes.pointer_size, &v);
  if (rc == mqs_ok) {
    if (pi->sizes.pointer_size == 4) v &= 0xffffffffLL;
    *out = (mqs_taddr_t)v;
  }
  return rc;
}

static int fetch_bytes(mqs_process *p, mqs_taddr_t addr, int size, char *out) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(p);
  return pi->cb->mqs_fetch_data_fp(p, addr, size, out) == mqs_ok ? mqs_ok : err_fetch;
}

/* Copies a C string without padding: bytes after the NUL are left as they were. */
static void copy_string(char *dst, const char *src, size_t capacity) {
  size_t n = strlen(src); /* src is always NUL-terminated */
  if (n > capacity - 1) n = capacity - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static void free_comms(process_info *pi) {
  comm_node *c = pi->comms;
  while (c) {
    comm_node *next = c->next;
    basic->mqs_free_fp(c->world);
    basic->mqs_free_fp(c);
    c = next;
  }
  pi->comms = pi->current = NULL;
}

/* ---- version and errors ---- */

EXPORT void mqs_setup_basic_callbacks(const mqs_basic_callbacks *cb) { basic = cb; }

EXPORT char *mqs_version_string(void) {
  return TESTDLL_LEVEL == 3 ? "mqd-proxy test DLL 1.0 (level 3)" : "mqd-proxy test DLL 1.0 (level 2)";
}

EXPORT int mqs_version_compatibility(void) { return TESTDLL_LEVEL; }

#if TESTDLL_LEVEL == 3
EXPORT int mqs_dll_taddr_width(void) { return (int)sizeof(mqs_taddr_t); }
#endif

EXPORT char *mqs_dll_error_string(int code) {
  switch (code) {
    case mqs_ok: return "no error";
    case mqs_no_information: return "no information";
    case mqs_end_of_list: return "end of list";
    case err_silent: return "";
    case err_no_current: return "no current communicator";
    case err_bad_request: return "no such queue";
    case err_no_store: return "out of memory";
    case err_missing_type: return "a tmpi type is missing from the debug information";
    case err_missing_field: return "a tmpi field is missing from the debug information";
    case err_missing_symbol: return "a tmpi symbol is missing";
    case err_fetch: return "could not read target memory";
    case err_no_info: return "no info hung on the object";
    case err_poisoned: return "found a request of unknown kind";
    case err_implausible: return "implausible target data";
    default: return NULL; /* unknown codes: NULL, which the proxy must reproduce */
  }
}

/* ---- images ---- */

EXPORT int mqs_setup_image(mqs_image *image, const mqs_image_callbacks *cb) {
  image_info *ii = (image_info *)basic->mqs_malloc_fp(sizeof *ii);
  if (!ii) return err_no_store;
  memset(ii, 0, sizeof *ii);
  ii->cb = cb;
  basic->mqs_put_image_info_fp(image, (mqs_image_info *)ii);
  note("testdll: image set up");
  return mqs_ok;
}

#define FIELD(cb, type, name, dst)                                  \
  do {                                                              \
    (dst) = (cb)->mqs_field_offset_fp((type), (char *)(name));      \
    if ((dst) < 0) {                                                \
      *message = "field " name " missing in %s";                    \
      return err_missing_field;                                     \
    }                                                               \
  } while (0)

EXPORT int mqs_image_has_queues(mqs_image *image, char **message) {
  image_info *ii = (image_info *)basic->mqs_get_image_info_fp(image);
  const mqs_image_callbacks *cb;
  mqs_type *req, *grp, *comm, *np;
  mqs_taddr_t scratch = 0;
  if (!ii) return err_no_info;
  cb = ii->cb;
  /* Existence checks with NULL out-pointers, like Open MPI's. */
  ii->hook_found = cb->mqs_find_function_fp(image, "tmpi_debugger_hook", mqs_lang_c, NULL) == mqs_ok;
  if (cb->mqs_find_symbol_fp(image, "tmpi_ignore_queues", NULL) == mqs_ok) {
    *message = "message queues are disabled in %s (tmpi_ignore_queues)";
    return err_silent;
  }
  if (cb->mqs_find_symbol_fp(image, "tmpi_warn_stderr", &scratch) == mqs_ok) {
    fprintf(stderr, "testdll: warning: %s asked for a warning on stderr (0x%llx)\n", "image",
            (unsigned long long)(scratch != 0));
  }
  req = cb->mqs_find_type_fp(image, "tmpi_request", mqs_lang_c);
  grp = cb->mqs_find_type_fp(image, "tmpi_group", mqs_lang_c);
  comm = cb->mqs_find_type_fp(image, "tmpi_comm", mqs_lang_c);
  np = cb->mqs_find_type_fp(image, "tmpi_newproc", mqs_lang_c);
  if (!req || !grp || !comm || !np) {
    *message = "image %s lacks the tmpi debug types";
    return err_missing_type;
  }
  ii->req_size = cb->mqs_sizeof_fp(req);
  FIELD(cb, req, "next", ii->req_next);
  FIELD(cb, req, "kind", ii->req_kind);
  FIELD(cb, req, "status", ii->req_status);
  FIELD(cb, req, "peer", ii->req_peer);
  FIELD(cb, req, "tag", ii->req_tag);
  FIELD(cb, req, "length", ii->req_length);
  FIELD(cb, req, "buffer", ii->req_buffer);
  FIELD(cb, req, "actual_peer", ii->req_actual_peer);
  FIELD(cb, req, "actual_tag", ii->req_actual_tag);
  FIELD(cb, req, "actual_length", ii->req_actual_length);
  FIELD(cb, req, "note", ii->req_note);
  FIELD(cb, grp, "size", ii->grp_size);
  FIELD(cb, grp, "world_ranks", ii->grp_ranks);
  FIELD(cb, comm, "next", ii->comm_next);
  FIELD(cb, comm, "id", ii->comm_id);
  FIELD(cb, comm, "rank", ii->comm_rank);
  FIELD(cb, comm, "size", ii->comm_size);
  FIELD(cb, comm, "group", ii->comm_group);
  FIELD(cb, comm, "name", ii->comm_name);
  FIELD(cb, comm, "sends", ii->comm_queue[0]);
  FIELD(cb, comm, "recvs", ii->comm_queue[1]);
  FIELD(cb, comm, "unexpected", ii->comm_queue[2]);
  ii->np_size = cb->mqs_sizeof_fp(np);
  FIELD(cb, np, "pid", ii->np_pid);
  FIELD(cb, np, "host", ii->np_host);
  FIELD(cb, np, "image", ii->np_image);
  /* A field that does not exist must answer -1. */
  if (cb->mqs_field_offset_fp(req, "no_such_field") != -1) {
    *message = "debugger invented a field in %s";
    return err_missing_field;
  }
  /* Success leaves *message untouched. */
  return mqs_ok;
}

EXPORT void mqs_destroy_image_info(mqs_image_info *info) { basic->mqs_free_fp(info); }

/* ---- processes ---- */

/* Who the process is: its job and identity (level 3), and, in late mode, its rank. */
static void ask_identity(mqs_process *process, process_info *pi) {
  if (pi->late) pi->global_rank = pi->cb->mqs_get_global_rank_fp(process);
#if TESTDLL_LEVEL == 3
  pi->job = pi->cb->mqs_get_process_job_fp(process);
  pi->identity = pi->cb->mqs_get_process_identity_fp(process);
#endif
}

EXPORT int mqs_setup_process(mqs_process *process, const mqs_process_callbacks *cb) {
  process_info *pi = (process_info *)basic->mqs_malloc_fp(sizeof *pi);
  mqs_image *image;
  image_info *ii;
  int *sizes, i, rc;
  if (!pi) return err_no_store;
  memset(pi, 0, sizeof *pi);
  pi->cb = cb;
  pi->op_class = -1;
  image = cb->mqs_get_image_fp(process);
  ii = (image_info *)basic->mqs_get_image_info_fp(image);
  if (!ii) {
    basic->mqs_free_fp(pi);
    return err_no_info;
  }
  /* Mark all seven members, then see which the debugger filled (5 or 7). */
  sizes = &pi->sizes.short_size;
  for (i = 0; i < 7; ++i) sizes[i] = -77;
  ii->cb->mqs_get_type_sizes_fp(process, &pi->sizes);
  for (i = 0; i < 7; ++i)
    if (sizes[i] != -77) pi->sizes_seen |= 1 << i;
  if (pi->sizes.pointer_size != 4 && pi->sizes.pointer_size != 8) {
    basic->mqs_free_fp(pi);
    return err_missing_type;
  }
  /* Like Open MPI's DLL, a target with tmpi_late_identity is asked who the process is only
     when the queues are read (mqs_update_communicator_list), never during the set-up. */
  pi->late = ii->cb->mqs_find_symbol_fp(image, "tmpi_late_identity", NULL) == mqs_ok;
  /* A target with tmpi_no_identity is never asked (its rank and identity show as 0). */
  pi->anonymous = ii->cb->mqs_find_symbol_fp(image, "tmpi_no_identity", NULL) == mqs_ok;
  if (!pi->late && !pi->anonymous) pi->global_rank = cb->mqs_get_global_rank_fp(process);
  rc = ii->cb->mqs_find_symbol_fp(image, "tmpi_comm_list", &pi->list_symbol);
  if (rc != mqs_ok) {
    report("find_symbol(tmpi_comm_list)", rc);
    basic->mqs_free_fp(pi);
    return err_missing_symbol;
  }
  if (ii->cb->mqs_find_symbol_fp(image, "tmpi_comm_sequence", &pi->sequence_symbol) != mqs_ok) {
    basic->mqs_free_fp(pi);
    return err_missing_symbol;
  }
  pi->sequence = -1;
  if (!pi->late && !pi->anonymous) ask_identity(process, pi);
  basic->mqs_put_process_info_fp(process, (mqs_process_info *)pi);
  return mqs_ok;
}

EXPORT void mqs_destroy_process_info(mqs_process_info *info) {
  process_info *pi = (process_info *)info;
  if (pi) free_comms(pi);
  basic->mqs_free_fp(info);
}

EXPORT int mqs_process_has_queues(mqs_process *process, char **message) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  long long seq;
  if (!pi) return err_no_info;
  if (fetch_int(process, pi->sequence_symbol, pi->sizes.int_size, &seq) != mqs_ok) {
    *message = "cannot read the communicator sequence of %s";
    return err_fetch;
  }
  *message = NULL;
  return mqs_ok;
}

/* ---- communicators ---- */

static int rebuild(mqs_process *p, process_info *pi, image_info *ii) {
  mqs_taddr_t at;
  comm_node **tail;
  int count = 0;
  int rc;
  if (!ii) return err_no_info;
  rc = fetch_ptr(p, pi->list_symbol, &at);
  if (rc != mqs_ok) return rc;
  free_comms(pi);
  tail = &pi->comms;
  while (at != 0) {
    comm_node *c = (comm_node *)basic->mqs_malloc_fp(sizeof *c);
    long long v;
    mqs_taddr_t group, ranks;
    int i, n;
    if (++count > max_communicators) {
      basic->mqs_free_fp(c);
      return err_implausible;
    }
    if (!c) return err_no_store;
    memset(c, 0, sizeof *c);
    *tail = c;
    tail = &c->next;
    if ((rc = fetch_int(p, at + ii->comm_id, pi->sizes.long_size, &v)) != mqs_ok) return rc;
    c->comm.unique_id = (mqs_taddr_t)v;
    if ((rc = fetch_int(p, at + ii->comm_rank, pi->sizes.int_size, &v)) != mqs_ok) return rc;
    c->comm.local_rank = (mqs_tword_t)v;
    if ((rc = fetch_int(p, at + ii->comm_size, pi->sizes.int_size, &v)) != mqs_ok) return rc;
    if (v < 0 || v > max_group_size) return err_implausible;
    c->comm.size = (mqs_tword_t)v;
    if ((rc = fetch_bytes(p, at + ii->comm_name, 64, c->comm.name)) != mqs_ok) return rc;
    c->comm.name[63] = '\0';
    for (i = 0; i < 3; ++i)
      if ((rc = fetch_ptr(p, at + ii->comm_queue[i], &c->queue[i])) != mqs_ok) return rc;
    if ((rc = fetch_ptr(p, at + ii->comm_group, &group)) != mqs_ok) return rc;
    if ((rc = fetch_int(p, group + ii->grp_size, pi->sizes.int_size, &v)) != mqs_ok) return rc;
    if (v < 0 || v > max_group_size) return err_implausible;
    n = (int)v;
    if ((rc = fetch_ptr(p, group + ii->grp_ranks, &ranks)) != mqs_ok) return rc;
    c->world = (int *)basic->mqs_malloc_fp((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (!c->world) return err_no_store;
    c->world_size = n;
    for (i = 0; i < n; ++i) {
      if ((rc = fetch_int(p, ranks + (mqs_taddr_t)i * 4, 4, &v)) != mqs_ok) return rc;
      c->world[i] = (int)v;
    }
    if ((rc = fetch_ptr(p, at + ii->comm_next, &at)) != mqs_ok) return rc;
  }
  return mqs_ok;
}

EXPORT int mqs_update_communicator_list(mqs_process *process) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  long long seq;
  int rc;
  if (!pi) return err_no_info;
  if (pi->late) ask_identity(process, pi);
  rc = fetch_int(process, pi->sequence_symbol, pi->sizes.int_size, &seq);
  if (rc != mqs_ok) return rc;
  if (seq == pi->sequence && pi->comms) return mqs_ok;
  rc = rebuild(process, pi, image_of(process));
  if (rc == mqs_ok) pi->sequence = (int)seq;
  return rc;
}

EXPORT int mqs_setup_communicator_iterator(mqs_process *process) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  if (!pi) return err_no_info;
  pi->current = pi->comms;
  pi->cursor = 0;
  pi->op_class = -1;
  pi->walked = 0;
  return pi->current ? mqs_ok : mqs_end_of_list;
}

EXPORT int mqs_get_communicator(mqs_process *process, mqs_communicator *comm) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  if (!pi) return err_no_info;
  if (!pi->current) return err_no_current;
  comm->unique_id = pi->current->comm.unique_id;
  comm->local_rank = pi->current->comm.local_rank;
  comm->size = pi->current->comm.size;
  copy_string(comm->name, pi->current->comm.name, sizeof comm->name);
  return mqs_ok;
}

#if TESTDLL_LEVEL == 3
EXPORT int mqs_get_comm_group(mqs_process *process, int *ranks) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  int i;
  if (!pi) return err_no_info;
  if (!pi->current) return err_no_current;
  for (i = 0; i < pi->current->comm.size; ++i)
    ranks[i] = i < pi->current->world_size ? pi->current->world[i] : -1;
  return mqs_ok;
}
#endif

EXPORT int mqs_next_communicator(mqs_process *process) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  if (!pi) return err_no_info;
#if TESTDLL_CRASH_ON_DEMAND
  /* MQD_TESTDLL_MPICH_ITERATOR set (tests/reliability): step on past the end of the list the
     way MPICH's DLL does, without looking, which dereferences NULL. */
  if (!pi->current && getenv("MQD_TESTDLL_MPICH_ITERATOR") != NULL) *crash_at = 1;
#endif
  if (!pi->current) return err_no_current;
  pi->current = pi->current->next;
  pi->cursor = 0;
  pi->op_class = -1;
  return pi->current ? mqs_ok : mqs_end_of_list;
}

/* ---- operations ---- */

EXPORT int mqs_setup_operation_iterator(mqs_process *process, int op_class) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  if (!pi) return err_no_info;
  if (!pi->current) return err_no_current;
  if (op_class < 0 || op_class > 2) return err_bad_request;
  pi->op_class = op_class;
  pi->cursor = pi->current->queue[op_class];
  return mqs_ok;
}

static int world_of(comm_node *c, long long local) {
  if (local < 0 || local >= c->comm.size || local >= c->world_size) return -1;
  return c->world[local];
}

EXPORT int mqs_next_operation(mqs_process *process, mqs_pending_operation *op) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  image_info *ii;
  mqs_taddr_t at, buffer;
  long long kind, status, peer, tag, length, apeer, atag, alength;
  char text[33];
  int rc;
  if (!pi) return err_no_info;
  if (!pi->current) return err_no_current;
  if (pi->op_class < 0) return err_bad_request;
  if (pi->cursor == 0) return mqs_end_of_list;
  if (++pi->walked > max_walk_operations) return err_implausible; /* a cycle in the queues */
  ii = image_of(process);
  if (!ii) return err_no_info;
  at = pi->cursor;
  if ((rc = fetch_int(process, at + ii->req_kind, 4, &kind)) != mqs_ok) return rc;
  if (kind == 99) return err_poisoned;
#if TESTDLL_CRASH_ON_DEMAND
  /* Crashes on demand, as a vendor DLL may on corrupt target data. */
  if (kind == 98) *crash_at = 1; /* a NULL store: SIGSEGV */
  if (kind == 97) abort();
#endif
  if ((rc = fetch_int(process, at + ii->req_status, 4, &status)) != mqs_ok) return rc;
  if ((rc = fetch_int(process, at + ii->req_peer, 4, &peer)) != mqs_ok) return rc;
  if ((rc = fetch_int(process, at + ii->req_tag, 4, &tag)) != mqs_ok) return rc;
  if ((rc = fetch_int(process, at + ii->req_length, pi->sizes.long_size, &length)) != mqs_ok) return rc;
  if ((rc = fetch_ptr(process, at + ii->req_buffer, &buffer)) != mqs_ok) return rc;
  if ((rc = fetch_int(process, at + ii->req_actual_peer, 4, &apeer)) != mqs_ok) return rc;
  if ((rc = fetch_int(process, at + ii->req_actual_tag, 4, &atag)) != mqs_ok) return rc;
  if ((rc = fetch_int(process, at + ii->req_actual_length, pi->sizes.long_size, &alength)) != mqs_ok) return rc;
  if ((rc = fetch_bytes(process, at + ii->req_note, 32, text)) != mqs_ok) return rc;
  text[32] = '\0';

  op->status = (int)status;
  op->desired_local_rank = (mqs_tword_t)peer;
  op->desired_global_rank = peer < 0 ? -1 : world_of(pi->current, peer);
  op->tag_wild = tag == -1;
  if (tag != -1) op->desired_tag = (mqs_tword_t)tag; /* left untouched for wildcards */
  op->desired_length = (mqs_tword_t)length;
  op->system_buffer = kind == 2;
  op->buffer = buffer;
  if (kind == 0 || status >= mqs_st_matched) {
    op->actual_local_rank = (mqs_tword_t)apeer;
    op->actual_global_rank = world_of(pi->current, apeer);
    op->actual_tag = (mqs_tword_t)atag;
    op->actual_length = (mqs_tword_t)alength;
  }
  copy_string(op->extra_text[0], text, 64);
  snprintf(op->extra_text[1], 64, "kind=%lld sizes=0x%x rank=%d id=%d", kind, pi->sizes_seen,
           pi->global_rank, pi->identity);
  op->extra_text[2][0] = '\0'; /* lines 3 and 4 are never touched */

  if ((rc = fetch_ptr(process, at + ii->req_next, &pi->cursor)) != mqs_ok) return rc;
  return mqs_ok;
}

/* ---- level 3 ---- */

#if TESTDLL_LEVEL == 3
EXPORT int mqs_setup_job(mqs_job *job, const mqs_job_callbacks *cb) {
  job_info *ji = (job_info *)basic->mqs_malloc_fp(sizeof *ji);
  if (!ji) return err_no_store;
  ji->first = cb->mqs_get_process_fp(job, 0);
  basic->mqs_put_job_info_fp(job, (mqs_job_info *)ji);
  return ji->first ? mqs_ok : mqs_no_information;
}

EXPORT int mqs_destroy_job_info(mqs_job_info *info) {
  basic->mqs_free_fp(info);
  return mqs_ok;
}

EXPORT int mqs_setup_new_process_iterator(mqs_process *process) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  image_info *ii;
  mqs_image *image;
  mqs_taddr_t array_symbol, count_symbol;
  long long count;
  int rc;
  if (!pi) return err_no_info;
  image = pi->cb->mqs_get_image_fp(process);
  ii = (image_info *)basic->mqs_get_image_info_fp(image);
  if (ii->cb->mqs_find_symbol_fp(image, "tmpi_new_processes", &array_symbol) != mqs_ok ||
      ii->cb->mqs_find_symbol_fp(image, "tmpi_new_process_count", &count_symbol) != mqs_ok)
    return err_missing_symbol;
  if ((rc = fetch_ptr(process, array_symbol, &pi->new_procs)) != mqs_ok) return rc;
  if ((rc = fetch_int(process, count_symbol, pi->sizes.int_size, &count)) != mqs_ok) return rc;
  pi->new_count = (int)count;
  pi->new_index = 0;
  /* The job the debugger said this process belongs to must know it. */
  if (pi->job && !basic->mqs_get_job_info_fp(pi->job)) return err_no_info;
  return mqs_ok;
}

EXPORT int mqs_next_new_process(mqs_process *process, mqs_process_location *loc) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  image_info *ii = image_of(process);
  mqs_taddr_t at;
  long long pid;
  char host[65], image[129];
  int rc;
  if (!pi) return err_no_info;
  if (pi->new_index >= pi->new_count) return mqs_end_of_list;
  at = pi->new_procs + (mqs_taddr_t)(pi->new_index * ii->np_size);
  if ((rc = fetch_int(process, at + ii->np_pid, pi->sizes.long_size, &pid)) != mqs_ok) return rc;
  if ((rc = fetch_bytes(process, at + ii->np_host, 64, host)) != mqs_ok) return rc;
  if ((rc = fetch_bytes(process, at + ii->np_image, 128, image)) != mqs_ok) return rc;
  host[64] = image[128] = '\0';
  loc->pid = (long)pid;
  copy_string(loc->image_name, image, sizeof loc->image_name);
  copy_string(loc->host_name, host, sizeof loc->host_name);
  pi->new_index++;
  return mqs_ok;
}

EXPORT int mqs_set_process_identity(mqs_process *process, int identity) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  if (!pi) return err_no_info;
  pi->identity = identity;
  return pi->cb->mqs_get_process_identity_fp(process) == identity ? mqs_ok : mqs_no_information;
}

EXPORT int mqs_get_comm_coll_state(mqs_process *process, int collective, int *sequence,
                                   int *active) {
  process_info *pi = (process_info *)basic->mqs_get_process_info_fp(process);
  if (!pi) return err_no_info;
  if (!pi->current) return err_no_current;
  if (collective < 0 || collective > 13) return mqs_no_information;
  /* In mqs_taddr_t, where it wraps: the id is whatever the target's memory holds. */
  *sequence = (int)(pi->current->comm.unique_id * 100 + (mqs_taddr_t)collective);
  if (collective % 3 != 2) *active = collective % 2; /* sometimes untouched */
  return mqs_ok;
}
#endif
