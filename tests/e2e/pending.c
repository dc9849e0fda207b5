/*
 * pending: an MPI program that leaves a chosen number of operations pending in every rank's
 * message queues, records what it posted, and parks so that a debugger can attach.
 *
 *   mpirun -np 4 --mca pml ob1 --mca btl self,vader pending N MANIFEST_DIR
 *
 * Each rank posts N operations, cycling through four kinds and four communicators:
 *   kinds        a receive from a specific source and tag (never sent),
 *                a receive from MPI_ANY_SOURCE with a specific tag (never sent),
 *                a receive with MPI_ANY_TAG from a rank that never sends to this one,
 *                a large send (past the eager limit) that nobody receives;
 *   communicators MPI_COMM_WORLD, a dup of it, an even/odd split, and a dup named
 *                "mqd_named" with MPI_Comm_set_name.
 * Sends go only to rank+1, so no posted receive can ever match one of them.
 *
 * A singleton (size 1, e.g. run under qemu-user with OMPI_MCA_ess_singleton_isolated=1) sends
 * to itself: receives use tags no send uses, and its wildcard-tag receives are all on the split
 * communicator, where it never sends (its sends meant for that one go to the named one).
 *
 * Then every rank writes MANIFEST_DIR/rank-R.json (its pid and host name, what it posted, with
 * world and local peers) and MANIFEST_DIR/rank-R.ready, and sleeps without calling MPI until it is killed or
 * MANIFEST_DIR/stop appears (then it cancels everything and finalizes).
 *
 * With MQD_E2E_SCHED_IDLE=1 in its environment, a rank runs under Linux's idle scheduling policy
 * from its first instruction, as do the threads MPI starts: a simulated cluster of hundreds of
 * ranks on a machine of a few cores, whose ranks spin while they wait in MPI_Init and the
 * barriers, then leaves the CPU to Slurm's daemons (slurmstepd's PMIx server among them), which
 * the ranks wait for.
 */
#define _GNU_SOURCE /* SCHED_IDLE */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LARGE_BYTES (256 * 1024)

enum { RECV_SPECIFIC, RECV_ANY_SOURCE, RECV_ANY_TAG, SEND_LARGE, KINDS };

static const char *kind_name[KINDS] = {"recv", "recv_any_source", "recv_any_tag", "send"};

/* Called once, when everything is posted and the ready file written: a debugger that started
 * the program itself (gdb-multiarch through qemu-user's gdb stub) stops here. */
void mqd_e2e_parked(void);
__attribute__((noinline)) void mqd_e2e_parked(void) { __asm__ volatile(""); }

int main(int argc, char **argv) {
  int rank, size, split_size, n, i;
  char path[4096];
  char host[256] = {0};
  MPI_Comm comms[4];
  const char *comm_label[4] = {"world", "dup", "split", "named"};
  MPI_Request *requests;
  char **buffers;
  FILE *manifest;
  const char *idle = getenv("MQD_E2E_SCHED_IDLE");

  if (idle && strcmp(idle, "1") == 0) {
    struct sched_param none = {0};
    if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) perror("pending: SCHED_IDLE");
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || size == 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np K (K = 1 or >= 3) pending N DIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  n = atoi(argv[1]);

  comms[0] = MPI_COMM_WORLD;
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &comms[2]);
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[3]);
  MPI_Comm_set_name(comms[3], "mqd_named");
  MPI_Comm_size(comms[2], &split_size);

  requests = calloc((size_t)(n > 0 ? n : 1), sizeof *requests);
  buffers = calloc((size_t)(n > 0 ? n : 1), sizeof *buffers);
  snprintf(path, sizeof path, "%s/rank-%d.json", argv[2], rank);
  manifest = fopen(path, "w");
  if (!manifest) MPI_Abort(MPI_COMM_WORLD, 3);
  if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "?");
  fprintf(manifest, "{\"rank\": %d, \"size\": %d, \"pid\": %d, \"host\": \"%s\", "
          "\"operations\": [", rank, size, (int)getpid(), host);

  for (i = 0; i < n; ++i) {
    int kind = i % KINDS;
    int c = (i / KINDS) % 4;
    MPI_Comm comm;
    if (size == 1 && kind == RECV_ANY_TAG) c = 2;
    /* Alone in its split (size 1, and rank 1 of 3), a rank's large send would go to itself,
       where its any-tag receive from itself would match it: the send goes elsewhere. */
    if (kind == SEND_LARGE && c == 2 && split_size == 1) c = 3;
    comm = comms[c];
    int local_rank, local_size, peer_world, peer_local = -1, tag = -1, count;
    MPI_Group world_group, comm_group;
    MPI_Comm_rank(comm, &local_rank);
    MPI_Comm_size(comm, &local_size);
    switch (kind) {
      case RECV_SPECIFIC: /* from the next rank in the communicator, a tag nobody uses */
        peer_local = (local_rank + 1) % local_size;
        tag = 10000 + i;
        count = 16 + i % 7;
        buffers[i] = malloc((size_t)count * sizeof(int));
        MPI_Irecv(buffers[i], count, MPI_INT, peer_local, tag, comm, &requests[i]);
        break;
      case RECV_ANY_SOURCE:
        tag = 20000 + i;
        count = 32;
        buffers[i] = malloc((size_t)count * sizeof(int));
        MPI_Irecv(buffers[i], count, MPI_INT, MPI_ANY_SOURCE, tag, comm, &requests[i]);
        break;
      case RECV_ANY_TAG: /* from a rank that never sends to this one */
        peer_local = (local_rank + local_size - 2 + local_size) % local_size;
        if (local_size < 3) peer_local = local_rank; /* nobody sends to themselves */
        count = 8;
        buffers[i] = malloc((size_t)count * sizeof(double));
        MPI_Irecv(buffers[i], count, MPI_DOUBLE, peer_local, MPI_ANY_TAG, comm, &requests[i]);
        break;
      default: /* SEND_LARGE: to the next rank, never received */
        peer_local = (local_rank + 1) % local_size;
        if (local_size == 1) peer_local = 0;
        tag = 30000 + i;
        count = LARGE_BYTES;
        buffers[i] = calloc((size_t)count, 1);
        MPI_Isend(buffers[i], count, MPI_BYTE, peer_local, tag, comm, &requests[i]);
        break;
    }
    if (peer_local >= 0) {
      MPI_Comm_group(MPI_COMM_WORLD, &world_group);
      MPI_Comm_group(comm, &comm_group);
      MPI_Group_translate_ranks(comm_group, 1, &peer_local, world_group, &peer_world);
      MPI_Group_free(&world_group);
      MPI_Group_free(&comm_group);
    } else {
      peer_world = -1;
    }
    fprintf(manifest,
            "%s{\"kind\": \"%s\", \"comm\": \"%s\", \"peer_local\": %d, \"peer_world\": %d, "
            "\"tag\": %d, \"count\": %d, \"bytes\": %d, \"buffer\": \"%p\"}",
            i ? ", " : "", kind_name[kind], comm_label[c], peer_local, peer_world, tag, count,
            kind == SEND_LARGE ? count
                               : count * (kind == RECV_ANY_TAG ? (int)sizeof(double)
                                                               : (int)sizeof(int)),
            (void *)buffers[i]);
  }
  /* Communicator facts for the checks. */
  fprintf(manifest, "], \"communicators\": {");
  for (i = 0; i < 4; ++i) {
    int local_rank, local_size, j;
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Group world_group, comm_group;
    int *locals, *worlds;
    MPI_Comm_rank(comms[i], &local_rank);
    MPI_Comm_size(comms[i], &local_size);
    MPI_Comm_get_name(comms[i], name, &len);
    locals = malloc((size_t)local_size * sizeof(int));
    worlds = malloc((size_t)local_size * sizeof(int));
    for (j = 0; j < local_size; ++j) locals[j] = j;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(comms[i], &comm_group);
    MPI_Group_translate_ranks(comm_group, local_size, locals, world_group, worlds);
    fprintf(manifest, "%s\"%s\": {\"name\": \"%s\", \"rank\": %d, \"size\": %d, \"group\": [",
            i ? ", " : "", comm_label[i], name, local_rank, local_size);
    for (j = 0; j < local_size; ++j) fprintf(manifest, "%s%d", j ? ", " : "", worlds[j]);
    fprintf(manifest, "]}");
    MPI_Group_free(&world_group);
    MPI_Group_free(&comm_group);
    free(locals);
    free(worlds);
  }
  fprintf(manifest, "}}\n");
  fclose(manifest);

  /* Every send has been started everywhere before anyone parks. */
  MPI_Barrier(MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/rank-%d.ready", argv[2], rank);
  fclose(fopen(path, "w"));

  mqd_e2e_parked();
  snprintf(path, sizeof path, "%s/stop", argv[2]);
  while (access(path, F_OK) != 0) usleep(100000); /* parked: no MPI calls, no progress */

  for (i = 0; i < n; ++i) {
    MPI_Cancel(&requests[i]);
    MPI_Request_free(&requests[i]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  for (i = 0; i < n; ++i) free(buffers[i]); /* calloc'd: NULL where nothing was allocated */
  free(buffers);
  free(requests);
  return 0;
}
