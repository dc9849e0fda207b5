/*
 * hang: an MPI program that hangs (or only looks hung) in a known way, chosen by MODE.
 *
 *   mpirun -np K --mca pml ob1 --mca btl self,vader hang MODE DIR
 *
 * Modes (K = 4 unless said otherwise; "L" is a message past ob1's eager limit, so that its
 * send stays pending until a matching receive is posted: rendezvous):
 *   send-cycle           every rank sends L to rank+1 before receiving: a cycle of sends
 *   recv-cycle           every rank receives from rank+1 before sending: a cycle of receives
 *   tag-mismatch         rank 0 sends L to rank 1 with tag 5, rank 1 receives tag 6 from rank 0;
 *                        ranks 2 and 3 compute
 *   comm-mismatch        rank 0 sends L to rank 1 on a dup of MPI_COMM_WORLD, rank 1 receives
 *                        from rank 0 on MPI_COMM_WORLD; ranks 2 and 3 compute
 *   any-source-deadlock  every rank receives from MPI_ANY_SOURCE: nobody is left to send
 *   any-source-ok        rank 0 receives from MPI_ANY_SOURCE, rank 1 from rank 0, rank 2 from
 *                        rank 1, rank 3 computes and will send to rank 0 (when DIR/stop
 *                        appears), which unblocks everyone: not a deadlock
 *   waitall-stuck        rank 0 waits (MPI_Waitall) for receives from ranks 1 and 3; rank 1
 *                        receives from rank 0; rank 3 computes: rank 0 also needs rank 1
 *   waitany-ok           the same with MPI_Waitany: rank 3 can release rank 0
 *   collective-missing   ranks 1..K-1 enter MPI_Barrier; rank 0 never does: it receives from
 *                        rank 1 a message rank 1 sends after the barrier (any K >= 2)
 *   recv-from-finalized  rank 1 receives from rank 0; every other rank calls MPI_Finalize
 *   slow                 a token goes round the ring; each holder computes 0.3 s before passing
 *                        it on, with the round as tag: slow, never stuck. Each rank rewrites
 *                        DIR/rank-R.passed (how many times it has passed the token on) after
 *                        every send, so that the driver can see every rank move
 *
 * Each rank writes DIR/rank-R.ready ({"rank": R, "pid": P, "role": "blocked"|"computing"})
 * once it is in place: a rank about to block writes it from a helper thread a second after the
 * main thread went on to its blocking call (on a loaded machine the main thread may not have
 * reached it yet: the driver sees that in its snapshot and looks again), then stops its whole
 * process with SIGSTOP (a debugger attaching sees exactly what it would see in a spinning
 * process, without the spinning: Open MPI polls in blocking calls, and 64 polling ranks would
 * starve a small machine). A computing rank sleeps outside MPI until DIR/stop appears. The
 * slow mode never stops itself. The driver (run_suite.py) kills the job when it is done.
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LARGE_BYTES (1 << 20)

static int rank, size;
static const char *dir;

struct park {
  int stop_self;
  double delay_s;
};

static void sleep_s(double seconds) {
  struct timespec ts;
  ts.tv_sec = (time_t)seconds;
  ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
  nanosleep(&ts, NULL);
}

static int stop_requested(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/stop", dir);
  return access(path, F_OK) == 0;
}

/* Writes TEXT to DIR/rank-R.SUFFIX atomically (a temporary file renamed). */
static void write_rank_file(const char *suffix, const char *text) {
  char tmp[4096], path[4096];
  FILE *f;
  snprintf(tmp, sizeof tmp, "%s/rank-%d.%s.tmp", dir, rank, suffix);
  snprintf(path, sizeof path, "%s/rank-%d.%s", dir, rank, suffix);
  f = fopen(tmp, "w");
  if (!f) {
    perror(tmp);
    abort();
  }
  fputs(text, f);
  fclose(f);
  rename(tmp, path);
}

/* Writes DIR/rank-R.ready. */
static void write_ready(const char *role) {
  char text[256];
  snprintf(text, sizeof text, "{\"rank\": %d, \"pid\": %d, \"role\": \"%s\"}\n", rank,
           (int)getpid(), role);
  write_rank_file("ready", text);
}

/* Writes DIR/rank-R.passed: how many times this rank has passed the token on (slow mode). */
static void write_passed(int times) {
  char text[32];
  snprintf(text, sizeof text, "%d\n", times);
  write_rank_file("passed", text);
}

static void *park_thread(void *arg) {
  struct park *p = arg;
  sleep_s(p->delay_s);
  write_ready("blocked");
  if (p->stop_self) kill(getpid(), SIGSTOP);
  return NULL;
}

/* Called just before the main thread blocks: the ready file follows from a helper thread, and
 * the process then stops itself (see the header). */
static void about_to_block(void) {
  static struct park p;
  pthread_t t;
  p.stop_self = 1;
  p.delay_s = 1.0; /* a guess: run_suite.py checks the snapshot, and looks again if it was early */
  if (pthread_create(&t, NULL, park_thread, &p) != 0) abort();
  pthread_detach(t);
}

/* A rank with nothing to do in MPI: it computes (sleeps, outside MPI) until DIR/stop. */
static void compute_until_stop(void) {
  write_ready("computing");
  while (!stop_requested()) sleep_s(0.1);
}

static char *large(void) { return calloc(LARGE_BYTES, 1); }

int main(int argc, char **argv) {
  const char *mode;
  int next, prev, token = 0;
  char *buf;
  MPI_Comm dup;
  MPI_Request reqs[2];
  int idx;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3 || size < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np K (K >= 2) hang MODE DIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  mode = argv[1];
  dir = argv[2];
  next = (rank + 1) % size;
  prev = (rank + size - 1) % size;
  buf = large();
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Barrier(MPI_COMM_WORLD); /* everyone set up before anyone hangs */

  if (!strcmp(mode, "send-cycle")) {
    about_to_block();
    MPI_Send(buf, LARGE_BYTES, MPI_BYTE, next, 1, MPI_COMM_WORLD);
    MPI_Recv(buf, LARGE_BYTES, MPI_BYTE, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (!strcmp(mode, "recv-cycle")) {
    about_to_block();
    MPI_Recv(buf, 1, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf, 1, MPI_INT, prev, 1, MPI_COMM_WORLD);
  } else if (!strcmp(mode, "tag-mismatch")) {
    if (rank == 0) {
      about_to_block();
      MPI_Send(buf, LARGE_BYTES, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
    } else if (rank == 1) {
      about_to_block();
      MPI_Recv(buf, LARGE_BYTES, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      compute_until_stop();
    }
  } else if (!strcmp(mode, "comm-mismatch")) {
    if (rank == 0) {
      about_to_block();
      MPI_Send(buf, LARGE_BYTES, MPI_BYTE, 1, 5, dup);
    } else if (rank == 1) {
      about_to_block();
      MPI_Recv(buf, LARGE_BYTES, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      compute_until_stop();
    }
  } else if (!strcmp(mode, "any-source-deadlock")) {
    about_to_block();
    MPI_Recv(buf, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (!strcmp(mode, "any-source-ok")) {
    if (rank == 3) {
      compute_until_stop();
      MPI_Send(buf, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    } else {
      about_to_block();
      if (rank == 0)
        MPI_Recv(buf, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      else
        MPI_Recv(buf, 1, MPI_INT, rank - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (rank < 2) MPI_Send(buf, 1, MPI_INT, rank + 1, 1, MPI_COMM_WORLD);
    }
  } else if (!strcmp(mode, "waitall-stuck") || !strcmp(mode, "waitany-ok")) {
    if (rank == 0) {
      MPI_Irecv(buf, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &reqs[0]);
      MPI_Irecv(buf + 64, 1, MPI_INT, 3, 1, MPI_COMM_WORLD, &reqs[1]);
      about_to_block();
      if (!strcmp(mode, "waitall-stuck"))
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
      else
        MPI_Waitany(2, reqs, &idx, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      about_to_block();
      MPI_Recv(buf, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      compute_until_stop();
    }
  } else if (!strcmp(mode, "collective-missing")) {
    about_to_block();
    if (rank == 0) {
      MPI_Recv(buf, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Barrier(MPI_COMM_WORLD);
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 1) MPI_Send(buf, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
  } else if (!strcmp(mode, "recv-from-finalized")) {
    about_to_block();
    if (rank == 1) MPI_Recv(buf, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (!strcmp(mode, "slow")) {
    /* Rank 0 starts; whoever holds the token computes, then passes it on with the round as
     * tag. Every rank reports ready after its first round, and how often it passed the token
     * on after each send. */
    int round = 0, ready = 0;
    for (;;) {
      if (rank != 0 || round > 0)
        MPI_Recv(&token, 1, MPI_INT, prev, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (token < 0) break; /* the stop token, going round once */
      sleep_s(0.3);         /* computing with the token */
      if (!ready) {
        write_ready("slow");
        ready = 1;
      }
      token = (rank == 0 && stop_requested()) ? -1 : token + 1;
      MPI_Send(&token, 1, MPI_INT, next, rank == size - 1 ? round + 1 : round, MPI_COMM_WORLD);
      ++round;
      write_passed(round);
    }
    if (rank != 0) MPI_Send(&token, 1, MPI_INT, next, rank == size - 1 ? round + 1 : round,
                            MPI_COMM_WORLD);
  } else {
    if (rank == 0) fprintf(stderr, "hang: unknown mode %s\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm_free(&dup);
  free(buf);
  MPI_Finalize();
  return 0;
}
