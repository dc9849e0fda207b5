/*
 * sessions: an MPI-4 Sessions program that leaves operations pending on communicators made
 * from process sets, records what it posted, and parks so that a debugger can attach. It
 * answers what MQD shows of such communicators (docs/mpich.md, "MPI-4 sessions").
 *
 *   mpiexec -n 4 sessions MODE DIR
 *
 * MODE is "sessions" (the Sessions model alone: MPI_Init is never called, so the program has
 * no MPI_COMM_WORLD) or "world" (MPI_Init first, then a session beside it).
 *
 * The program starts a session with MPI_Session_init, lists its process sets
 * (MPI_Session_get_num_psets, MPI_Session_get_nth_pset, and MPI_Session_get_pset_info's
 * "mpi_size", read with MPI_Info_get_string), and builds communicators through
 * MPI_Group_from_session_pset and MPI_Comm_create_from_group, each with its own string tag:
 *   pset_world  from "mpi://WORLD", unnamed;
 *   pset_self   from "mpi://SELF", unnamed;
 *   pset_named  from "mpi://WORLD" again, named "mqd_session_named" with MPI_Comm_set_name.
 * On them (and, in MODE "world", on MPI_COMM_WORLD) it leaves pending:
 *   pset_world  a receive from the next rank with a tag nobody sends, a receive from
 *               MPI_ANY_SOURCE, a large send (past the eager limit) to the next rank and a
 *               small one (eager) to the next rank, neither ever received: the next rank
 *               holds them as unexpected messages;
 *   pset_self   a receive with a tag nobody sends, and a small send to itself with another
 *               tag: an unexpected message in its own queue;
 *   pset_named  a receive with MPI_ANY_TAG from the previous rank, which never sends on it;
 *   world       (MODE "world") a receive from the next rank with a tag nobody sends.
 * "Next" and "previous" are ranks in pset_world; a size-1 job uses itself.
 *
 * Then every rank writes DIR/rank-R.json: its mode, process sets, communicators (label, name,
 * string tag, process set, rank, size, and the group as ranks of "mpi://WORLD"), and
 * operations (label, kind, peer as a rank of the communicator and of "mpi://WORLD", tag, count
 * in elements, bytes, buffer), and DIR/rank-R.ready; then sleeps without calling MPI until it
 * is killed or DIR/stop appears (then it cancels everything, frees its communicators and
 * finalizes).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LARGE_BYTES (256 * 1024)
#define SMALL_INTS 4
#define MAX_OPS 16

void mqd_sessions_parked(void);
__attribute__((noinline)) void mqd_sessions_parked(void) { __asm__ volatile(""); }

/* One communicator the program made, as the manifest describes it. */
struct comm_fact {
  const char *label;
  const char *pset;      /* the process set it came from, or NULL (MPI_COMM_WORLD) */
  const char *stringtag; /* the tag given to MPI_Comm_create_from_group, or NULL */
  MPI_Comm comm;
};

/* One pending operation, as the manifest describes it. */
struct op_fact {
  const char *comm_label;
  const char *kind;
  int peer_local, peer_world, tag, count, bytes; /* count: in elements of the datatype */
  void *buffer;
  MPI_Request request;
};

static void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fprintf(stderr, "sessions: %s failed: %s\n", what, text);
    exit(3);
  }
}

/* A communicator from process set PSET with string tag STRINGTAG. */
static MPI_Comm comm_from_pset(MPI_Session session, const char *pset, const char *stringtag) {
  MPI_Group group;
  MPI_Comm comm;
  check(MPI_Group_from_session_pset(session, pset, &group), "MPI_Group_from_session_pset");
  check(MPI_Comm_create_from_group(group, stringtag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm),
        "MPI_Comm_create_from_group");
  MPI_Group_free(&group);
  return comm;
}

/* Rank LOCAL of COMM as a rank of WORLD_GROUP (the "mpi://WORLD" group). */
static int world_rank_of(MPI_Comm comm, int local, MPI_Group world_group) {
  MPI_Group group;
  int world;
  if (local < 0) return -1;
  MPI_Comm_group(comm, &group);
  MPI_Group_translate_ranks(group, 1, &local, world_group, &world);
  MPI_Group_free(&group);
  return world;
}

int main(int argc, char **argv) {
  MPI_Session session;
  MPI_Group world_group;
  struct comm_fact comms[4];
  struct op_fact ops[MAX_OPS];
  int ncomms = 0, nops = 0, npsets = 0, with_world, rank, size, i, j;
  char path[4096];
  FILE *manifest;

  if (argc != 3 || (strcmp(argv[1], "sessions") != 0 && strcmp(argv[1], "world") != 0)) {
    fprintf(stderr, "usage: mpiexec -n K sessions sessions|world DIR\n");
    return 2;
  }
  with_world = strcmp(argv[1], "world") == 0;
  if (with_world) MPI_Init(&argc, &argv);
  check(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session), "MPI_Session_init");

  check(MPI_Session_get_num_psets(session, MPI_INFO_NULL, &npsets),
        "MPI_Session_get_num_psets");
  char(*pset_names)[256] = calloc((size_t)(npsets > 0 ? npsets : 1), sizeof *pset_names);
  char(*pset_sizes)[32] = calloc((size_t)(npsets > 0 ? npsets : 1), sizeof *pset_sizes);
  for (i = 0; i < npsets; ++i) {
    int len = 0, flag = 0, vlen = (int)sizeof pset_sizes[i];
    MPI_Info info;
    /* A length of 0 asks for the length (terminating zero included). */
    check(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, &len, pset_names[i]),
          "MPI_Session_get_nth_pset (length)");
    if (len > (int)sizeof pset_names[i]) len = (int)sizeof pset_names[i];
    check(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, &len, pset_names[i]),
          "MPI_Session_get_nth_pset");
    check(MPI_Session_get_pset_info(session, pset_names[i], &info), "MPI_Session_get_pset_info");
    MPI_Info_get_string(info, "mpi_size", &vlen, pset_sizes[i], &flag);
    if (!flag) strcpy(pset_sizes[i], "?");
    MPI_Info_free(&info);
  }

  comms[ncomms++] = (struct comm_fact){"pset_world", "mpi://WORLD", "org.mqd-proxy.sessions.world",
                                       MPI_COMM_NULL};
  comms[ncomms++] = (struct comm_fact){"pset_self", "mpi://SELF", "org.mqd-proxy.sessions.self",
                                       MPI_COMM_NULL};
  comms[ncomms++] = (struct comm_fact){"pset_named", "mpi://WORLD", "org.mqd-proxy.sessions.named",
                                       MPI_COMM_NULL};
  for (i = 0; i < ncomms; ++i)
    comms[i].comm = comm_from_pset(session, comms[i].pset, comms[i].stringtag);
  MPI_Comm_set_name(comms[2].comm, "mqd_session_named");
  if (with_world) comms[ncomms++] = (struct comm_fact){"world", NULL, NULL, MPI_COMM_WORLD};

  MPI_Comm pworld = comms[0].comm, pself = comms[1].comm, pnamed = comms[2].comm;
  check(MPI_Group_from_session_pset(session, "mpi://WORLD", &world_group),
        "MPI_Group_from_session_pset");
  MPI_Comm_rank(pworld, &rank);
  MPI_Comm_size(pworld, &size);
  int next = (rank + 1) % size, previous = (rank + size - 1) % size;

#define POST(label_, comm_, kind_, peer_, tag_, count_, bytes_, call_)                  \
  do {                                                                                  \
    struct op_fact *o_ = &ops[nops++];                                                  \
    o_->comm_label = (label_);                                                          \
    o_->kind = (kind_);                                                                 \
    o_->peer_local = (peer_);                                                           \
    o_->peer_world = world_rank_of((comm_), (peer_), world_group);                      \
    o_->tag = (tag_);                                                                   \
    o_->count = (count_);                                                               \
    o_->bytes = (bytes_);                                                               \
    o_->buffer = calloc((size_t)(bytes_), 1);                                           \
    check(call_, kind_);                                                                \
  } while (0)
#define LAST (&ops[nops - 1])

  /* Receives first, then sends: no send posted here can match a receive posted anywhere. */
  POST("pset_world", pworld, "recv", next, 40001, 16, 16 * (int)sizeof(int),
       MPI_Irecv(LAST->buffer, 16, MPI_INT, next, 40001, pworld, &LAST->request));
  POST("pset_world", pworld, "recv_any_source", -1, 40002, 8, 8 * (int)sizeof(int),
       MPI_Irecv(LAST->buffer, 8, MPI_INT, MPI_ANY_SOURCE, 40002, pworld, &LAST->request));
  POST("pset_self", pself, "recv", 0, 40011, 4, 4 * (int)sizeof(int),
       MPI_Irecv(LAST->buffer, 4, MPI_INT, 0, 40011, pself, &LAST->request));
  POST("pset_named", pnamed, "recv_any_tag", previous, -1, 2, 2 * (int)sizeof(double),
       MPI_Irecv(LAST->buffer, 2, MPI_DOUBLE, previous, MPI_ANY_TAG, pnamed, &LAST->request));
  if (with_world)
    POST("world", MPI_COMM_WORLD, "recv", next, 40031, 4, 4 * (int)sizeof(int),
         MPI_Irecv(LAST->buffer, 4, MPI_INT, next, 40031, MPI_COMM_WORLD, &LAST->request));
  /* pnamed carries no send: its wildcard-tag receive must stay pending. */
  POST("pset_world", pworld, "send", next, 40003, LARGE_BYTES, LARGE_BYTES,
       MPI_Isend(LAST->buffer, LARGE_BYTES, MPI_BYTE, next, 40003, pworld, &LAST->request));
  POST("pset_world", pworld, "send_small", next, 40004, SMALL_INTS,
       SMALL_INTS * (int)sizeof(int),
       MPI_Isend(LAST->buffer, SMALL_INTS, MPI_INT, next, 40004, pworld, &LAST->request));
  POST("pset_self", pself, "send_small", 0, 40012, SMALL_INTS, SMALL_INTS * (int)sizeof(int),
       MPI_Isend(LAST->buffer, SMALL_INTS, MPI_INT, 0, 40012, pself, &LAST->request));

  snprintf(path, sizeof path, "%s/rank-%d.json", argv[2], rank);
  manifest = fopen(path, "w");
  if (!manifest) return 3;
  fprintf(manifest, "{\"rank\": %d, \"size\": %d, \"pid\": %d, \"mode\": \"%s\", \"psets\": [",
          rank, size, (int)getpid(), argv[1]);
  for (i = 0; i < npsets; ++i)
    fprintf(manifest, "%s{\"name\": \"%s\", \"mpi_size\": \"%s\"}", i ? ", " : "", pset_names[i],
            pset_sizes[i]);
  fprintf(manifest, "], \"communicators\": {");
  for (i = 0; i < ncomms; ++i) {
    int local_rank, local_size, len;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Comm_rank(comms[i].comm, &local_rank);
    MPI_Comm_size(comms[i].comm, &local_size);
    MPI_Comm_get_name(comms[i].comm, name, &len);
    fprintf(manifest,
            "%s\"%s\": {\"name\": \"%s\", \"pset\": %s%s%s, \"stringtag\": %s%s%s, "
            "\"rank\": %d, \"size\": %d, \"group\": [",
            i ? ", " : "", comms[i].label, name, comms[i].pset ? "\"" : "",
            comms[i].pset ? comms[i].pset : "null", comms[i].pset ? "\"" : "",
            comms[i].stringtag ? "\"" : "", comms[i].stringtag ? comms[i].stringtag : "null",
            comms[i].stringtag ? "\"" : "", local_rank, local_size);
    for (j = 0; j < local_size; ++j)
      fprintf(manifest, "%s%d", j ? ", " : "", world_rank_of(comms[i].comm, j, world_group));
    fprintf(manifest, "]}");
  }
  fprintf(manifest, "}, \"operations\": [");
  for (i = 0; i < nops; ++i)
    fprintf(manifest,
            "%s{\"kind\": \"%s\", \"comm\": \"%s\", \"peer_local\": %d, \"peer_world\": %d, "
            "\"tag\": %d, \"count\": %d, \"bytes\": %d, \"buffer\": \"%p\"}",
            i ? ", " : "", ops[i].kind, ops[i].comm_label, ops[i].peer_local, ops[i].peer_world,
            ops[i].tag, ops[i].count, ops[i].bytes, ops[i].buffer);
  fprintf(manifest, "]}\n");
  fclose(manifest);

  /* Every send has been started everywhere (and the messages have arrived as unexpected)
   * before anyone parks. */
  MPI_Barrier(pworld);
  snprintf(path, sizeof path, "%s/rank-%d.ready", argv[2], rank);
  fclose(fopen(path, "w"));

  mqd_sessions_parked();
  snprintf(path, sizeof path, "%s/stop", argv[2]);
  while (access(path, F_OK) != 0) usleep(100000); /* parked: no MPI calls, no progress */

  for (i = 0; i < nops; ++i) {
    MPI_Cancel(&ops[i].request);
    MPI_Request_free(&ops[i].request);
  }
  MPI_Barrier(pworld);
  for (i = 0; i < ncomms; ++i)
    if (comms[i].comm != MPI_COMM_WORLD) MPI_Comm_free(&comms[i].comm);
  MPI_Group_free(&world_group);
  check(MPI_Session_finalize(&session), "MPI_Session_finalize");
  if (with_world) MPI_Finalize();
  for (i = 0; i < nops; ++i) free(ops[i].buffer);
  free(pset_names);
  free(pset_sizes);
  return 0;
}
