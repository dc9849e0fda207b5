#include "SyntheticMpi.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace mqd::harness {
namespace {

// Natural-alignment struct layout for the target.
class Layout {
 public:
  explicit Layout(std::string name) { type_.name = std::move(name); }
  int add(const std::string& field, int size, int align) {
    offset_ = (offset_ + align - 1) / align * align;
    int at = offset_;
    type_.fields[field] = at;
    offset_ += size;
    maxAlign_ = std::max(maxAlign_, align);
    return at;
  }
  TargetModel::Type finish() {
    type_.size = (offset_ + maxAlign_ - 1) / maxAlign_ * maxAlign_;
    return type_;
  }

 private:
  TargetModel::Type type_;
  int offset_ = 0;
  int maxAlign_ = 1;
};

struct Types {
  TargetModel::Type request, group, comm, newproc;
};

Types defineTypes(TargetModel& t) {
  int p = t.pointerSize(), l = t.longSize();
  Layout r("tmpi_request");
  r.add("next", p, p);
  r.add("kind", 4, 4);
  r.add("status", 4, 4);
  r.add("peer", 4, 4);
  r.add("tag", 4, 4);
  r.add("length", l, l);
  r.add("buffer", p, p);
  r.add("actual_peer", 4, 4);
  r.add("actual_tag", 4, 4);
  r.add("actual_length", l, l);
  r.add("note", 32, 1);
  Layout g("tmpi_group");
  g.add("size", 4, 4);
  g.add("world_ranks", p, p);
  Layout c("tmpi_comm");
  c.add("next", p, p);
  c.add("id", l, l);
  c.add("rank", 4, 4);
  c.add("size", 4, 4);
  c.add("group", p, p);
  c.add("name", 64, 1);
  c.add("sends", p, p);
  c.add("recvs", p, p);
  c.add("unexpected", p, p);
  Layout n("tmpi_newproc");
  n.add("pid", l, l);
  n.add("host", 64, 1);
  n.add("image", 128, 1);
  Types types{r.finish(), g.finish(), c.finish(), n.finish()};
  t.defineType(types.request);
  t.defineType(types.group);
  t.defineType(types.comm);
  t.defineType(types.newproc);
  return types;
}

void writeString(TargetModel& t, uint64_t at, const std::string& s, size_t capacity) {
  std::vector<char> bytes(capacity, 0);
  std::copy_n(s.begin(), std::min(s.size(), capacity - 1), bytes.begin());
  t.writeBytes(at, bytes.data(), capacity);
}

uint64_t writeQueue(TargetModel& t, const Types& ty, const std::vector<Operation>& ops) {
  uint64_t head = 0;
  const auto& f = ty.request.fields;
  // Built back to front so each request can point at the next.
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    uint64_t at = t.allocate(static_cast<size_t>(ty.request.size));
    t.writePointer(at + f.at("next"), head);
    t.writeInt(at + f.at("kind"), 4, it->kind);
    t.writeInt(at + f.at("status"), 4, it->status);
    t.writeInt(at + f.at("peer"), 4, it->peer);
    t.writeInt(at + f.at("tag"), 4, it->tag);
    t.writeInt(at + f.at("length"), t.longSize(), it->length);
    t.writePointer(at + f.at("buffer"), it->buffer);
    t.writeInt(at + f.at("actual_peer"), 4, it->actualPeer);
    t.writeInt(at + f.at("actual_tag"), 4, it->actualTag);
    t.writeInt(at + f.at("actual_length"), t.longSize(), it->actualLength);
    writeString(t, at + f.at("note"), it->note, 32);
    head = at;
  }
  return head;
}

}  // namespace

Job standardJob(size_t opsPerQueue, int worldSize, int rank) {
  Job job;
  auto world = [&] {
    std::vector<int> r;
    for (int i = 0; i < worldSize; ++i) r.push_back(i);
    return r;
  }();
  std::vector<int> even, odd;
  for (int i = 0; i < worldSize; ++i) (i % 2 == 0 ? even : odd).push_back(i);
  std::vector<int> named(world.rbegin(), world.rend());  // reversed order: a real translation

  auto comm = [&](int64_t id, std::string name, std::vector<int> group) {
    Communicator c;
    c.id = id;
    c.name = std::move(name);
    c.worldRanks = std::move(group);
    auto it = std::find(c.worldRanks.begin(), c.worldRanks.end(), rank);
    c.rank = it == c.worldRanks.end() ? -1 : static_cast<int>(it - c.worldRanks.begin());
    return c;
  };
  job.communicators.push_back(comm(0, "MPI_COMM_WORLD", world));
  job.communicators.push_back(comm(1, "MPI_COMM_SELF", {rank}));
  job.communicators.push_back(comm(3, "", world));  // a dup without a name
  job.communicators.push_back(comm(4, "split", rank % 2 == 0 ? even : odd));
  job.communicators.push_back(comm(7, "solver \xc3\xa5 halo", named));  // UTF-8 name

  uint64_t bufferBase = 0x00007f5a80000000ull;
  uint32_t seed = 12345;
  auto rnd = [&seed] {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) & 0x7fff;
  };
  for (size_t ci = 0; ci < job.communicators.size(); ++ci) {
    Communicator& c = job.communicators[ci];
    int size = static_cast<int>(c.worldRanks.size());
    for (int q = 0; q < 3; ++q) {
      for (size_t i = 0; i < opsPerQueue; ++i) {
        Operation op;
        op.kind = q;
        op.peer = static_cast<int>(rnd() % static_cast<unsigned>(size));
        op.tag = static_cast<int>(rnd() % 1000);
        op.length = static_cast<int64_t>(rnd()) * 8;
        op.buffer = bufferBase + (ci * 3 + static_cast<size_t>(q)) * 0x100000 + i * 0x100;
        if (q == 1) {  // receives: some wildcards, some matched
          if (i % 5 == 1) op.peer = -1;
          if (i % 7 == 2) op.tag = -1;
          if (i % 4 == 3) {
            op.status = 1;
            op.actualPeer = op.peer < 0 ? 0 : op.peer;
            op.actualTag = op.tag < 0 ? 42 : op.tag;
            op.actualLength = op.length / 2;
          }
        } else if (q == 0) {  // sends: actual = desired, some complete
          op.status = i % 6 == 5 ? 2 : 0;
          op.actualPeer = op.peer;
          op.actualTag = op.tag;
          op.actualLength = op.length;
        } else {  // unexpected messages: arrived, so matched
          op.status = 1;
          op.actualPeer = op.peer;
          op.actualTag = op.tag;
          op.actualLength = op.length;
        }
        op.note = (q == 0 ? "isend #" : q == 1 ? "irecv #" : "arrived #") + std::to_string(i);
        c.queues[static_cast<size_t>(q)].push_back(op);
      }
    }
  }
  job.newProcesses.push_back({4242, "node17", "/opt/app/solver"});
  job.newProcesses.push_back({4243, "node18", "/opt/app/helper-with-a-much-longer-name"});
  return job;
}

namespace {

// Writes the job's communicators (with groups and queues) into fresh memory; returns the head.
uint64_t writeCommunicators(TargetModel& t, const Types& ty, const Job& job) {
  const auto& cf = ty.comm.fields;
  const auto& gf = ty.group.fields;

  uint64_t head = 0;
  for (auto it = job.communicators.rbegin(); it != job.communicators.rend(); ++it) {
    const Communicator& c = *it;
    uint64_t ranks = t.allocate(c.worldRanks.size() * 4 + 4);
    for (size_t i = 0; i < c.worldRanks.size(); ++i) t.writeInt(ranks + i * 4, 4, c.worldRanks[i]);
    uint64_t group = t.allocate(static_cast<size_t>(ty.group.size));
    t.writeInt(group + gf.at("size"), 4, static_cast<int64_t>(c.worldRanks.size()));
    t.writePointer(group + gf.at("world_ranks"), ranks);
    uint64_t at = t.allocate(static_cast<size_t>(ty.comm.size));
    t.writePointer(at + cf.at("next"), head);
    t.writeInt(at + cf.at("id"), t.longSize(), c.id);
    t.writeInt(at + cf.at("rank"), 4, c.rank);
    t.writeInt(at + cf.at("size"), 4, static_cast<int64_t>(c.worldRanks.size()));
    t.writePointer(at + cf.at("group"), group);
    writeString(t, at + cf.at("name"), c.name, 64);
    t.writePointer(at + cf.at("sends"), writeQueue(t, ty, c.queues[0]));
    t.writePointer(at + cf.at("recvs"), writeQueue(t, ty, c.queues[1]));
    t.writePointer(at + cf.at("unexpected"), writeQueue(t, ty, c.queues[2]));
    head = at;
  }
  return head;
}

// The types layOut published.
Types typesOf(const TargetModel& t) {
  const TargetModel::Type* r = t.type("tmpi_request");
  const TargetModel::Type* g = t.type("tmpi_group");
  const TargetModel::Type* c = t.type("tmpi_comm");
  const TargetModel::Type* n = t.type("tmpi_newproc");
  if (!r || !g || !c || !n) throw std::logic_error("the target has no laid-out job");
  return Types{*r, *g, *c, *n};
}

uint64_t symbolOf(const TargetModel& t, const char* name) {
  const uint64_t* at = t.symbol(name);
  if (!at) throw std::logic_error(std::string("the target has no symbol ") + name);
  return *at;
}

}  // namespace

void layOut(TargetModel& t, const Job& job) {
  Types ty = defineTypes(t);
  uint64_t head = writeCommunicators(t, ty, job);
  if (job.brokenCommunicatorList) head = 0x10;  // unmapped

  uint64_t list = t.allocateData(static_cast<size_t>(t.pointerSize()));
  t.writePointer(list, head);
  t.defineSymbol("tmpi_comm_list", list);
  uint64_t sequence = t.allocateData(4);
  t.writeInt(sequence, 4, job.sequence);
  t.defineSymbol("tmpi_comm_sequence", sequence);

  const auto& nf = ty.newproc.fields;
  uint64_t array = t.allocate(static_cast<size_t>(ty.newproc.size) * (job.newProcesses.size() + 1));
  for (size_t i = 0; i < job.newProcesses.size(); ++i) {
    uint64_t at = array + i * static_cast<uint64_t>(ty.newproc.size);
    t.writeInt(at + nf.at("pid"), t.longSize(), job.newProcesses[i].pid);
    writeString(t, at + nf.at("host"), job.newProcesses[i].host, 64);
    writeString(t, at + nf.at("image"), job.newProcesses[i].image, 128);
  }
  uint64_t arrayPtr = t.allocateData(static_cast<size_t>(t.pointerSize()));
  t.writePointer(arrayPtr, array);
  t.defineSymbol("tmpi_new_processes", arrayPtr);
  uint64_t count = t.allocateData(4);
  t.writeInt(count, 4, static_cast<int64_t>(job.newProcesses.size()));
  t.defineSymbol("tmpi_new_process_count", count);

  t.defineFunction("tmpi_debugger_hook", t.allocate(16));
  if (job.ignoreQueues) t.defineSymbol("tmpi_ignore_queues", t.allocateData(4));
  if (job.warnOnStderr) t.defineSymbol("tmpi_warn_stderr", t.allocateData(4));
  if (job.lateIdentity) t.defineSymbol("tmpi_late_identity", t.allocateData(4));
  if (job.noIdentity) t.defineSymbol("tmpi_no_identity", t.allocateData(4));
}

void replaceCommunicators(TargetModel& t, const Job& job) {
  Types ty = typesOf(t);
  uint64_t head = writeCommunicators(t, ty, job);
  t.writePointer(symbolOf(t, "tmpi_comm_list"), head);
  t.writeInt(symbolOf(t, "tmpi_comm_sequence"), 4, job.sequence);
}

namespace {

// The first request of every queue of every communicator now in the target.
std::vector<uint64_t> queueHeads(TargetModel& t, const Types& ty) {
  const auto& cf = ty.comm.fields;
  std::vector<uint64_t> heads;
  uint64_t comm = static_cast<uint64_t>(t.readInt(symbolOf(t, "tmpi_comm_list"), t.pointerSize()));
  for (; comm != 0; comm = static_cast<uint64_t>(t.readInt(comm + cf.at("next"), t.pointerSize()))) {
    for (const char* queue : {"sends", "recvs", "unexpected"}) {
      heads.push_back(static_cast<uint64_t>(t.readInt(comm + cf.at(queue), t.pointerSize())));
    }
  }
  return heads;
}

// Calls `visit` with the address of every request in every queue, in queue order; `visit` may
// rewrite a request but not unlink it.
void forEachRequest(TargetModel& t, const Types& ty, const std::function<void(uint64_t)>& visit) {
  const auto& rf = ty.request.fields;
  for (uint64_t at : queueHeads(t, ty)) {
    for (; at != 0; at = static_cast<uint64_t>(t.readInt(at + rf.at("next"), t.pointerSize()))) {
      visit(at);
    }
  }
}

}  // namespace

size_t progressRequests(TargetModel& t, int step) {
  Types ty = typesOf(t);
  const auto& rf = ty.request.fields;
  size_t changed = 0;
  for (uint64_t at : queueHeads(t, ty)) {
    for (size_t i = 0; at != 0; ++i) {
      uint64_t next = static_cast<uint64_t>(t.readInt(at + rf.at("next"), t.pointerSize()));
      if (t.readInt(at + rf.at("kind"), 4) == 99) break;  // leave poisoned requests alone
      t.writeInt(at + rf.at("tag"), 4, t.readInt(at + rf.at("tag"), 4) + 1000 * step);
      t.writeInt(at + rf.at("status"), 4, (t.readInt(at + rf.at("status"), 4) + step) % 3);
      t.writeInt(at + rf.at("actual_length"), t.longSize(), 17 * step + static_cast<int>(i));
      writeString(t, at + rf.at("note"), "progressed " + std::to_string(step), 32);
      ++changed;
      // Every third request completes and leaves its queue.
      if (i % 3 == 1 && next != 0) {
        uint64_t after = static_cast<uint64_t>(t.readInt(next + rf.at("next"), t.pointerSize()));
        t.writePointer(at + rf.at("next"), after);
        next = after;
        ++changed;
      }
      at = next;
    }
  }
  return changed;
}

uint64_t progressLastRequest(TargetModel& t, int step) {
  Types ty = typesOf(t);
  const auto& rf = ty.request.fields;
  uint64_t last = 0;
  forEachRequest(t, ty, [&](uint64_t at) { last = std::max(last, at); });
  if (last != 0) {
    t.writeInt(last + rf.at("tag"), 4, t.readInt(last + rf.at("tag"), 4) + 1000 * step);
  }
  return last;
}

size_t rewriteRequestKinds(TargetModel& t, int from, int to) {
  Types ty = typesOf(t);
  const auto& rf = ty.request.fields;
  size_t changed = 0;
  forEachRequest(t, ty, [&](uint64_t at) {
    if (t.readInt(at + rf.at("kind"), 4) != from) return;
    t.writeInt(at + rf.at("kind"), 4, to);
    ++changed;
  });
  return changed;
}

}  // namespace mqd::harness
