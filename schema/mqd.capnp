# mqd.capnp: the wire contract between libmqdproxy.so (the shim a debugger loads) and
# mqd-proxy-server (which runs the vendor MQD DLL on the target platform).
#
# Shape:
#   Proxy     the bootstrap capability of a connection: what the server offers, and a way in.
#   Session   one per debugger connection: the mqs_* entry points of one loaded vendor DLL.
#   Debugger  passed by the shim when it opens a session: the callbacks the DLL needs that only
#             the debugger can answer (symbols, types, target memory, ...).
#
# Handles never cross the wire as pointers. Objects owned by the debugger (mqs_image,
# mqs_process, mqs_job, mqs_type) are named by tokens the shim assigns; objects owned by the DLL
# (mqs_image_info, mqs_process_info, mqs_job_info) by tokens the server assigns. Token 0 always
# means NULL. A token the receiver did not issue is refused: by the server with a `failure`
# (MQD_PROXY_ERR_BAD_HANDLE), by the shim with an exception, which the server only logs.
#
# Integers travel at 64 bits whatever either side's mqs_taddr_t / mqs_tword_t width is; the
# receiving side narrows them under the rules of docs/transparency.md, "Transparency rules"
# (Widths: an address that does not fit is an error, never truncated).
#
# Output parameters: a DLL may leave parts of an output struct untouched, and a native debugger
# then keeps whatever it had there. To reproduce that exactly, every output struct carries a
# record of which fields (and for character arrays, which byte runs) the DLL actually wrote;
# the shim applies only those to the debugger's buffer.

@0xeaea5908420fcac6;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("mqd::wire");

annotation readAhead @0xc67a9b90f3ce441c (field, param) :Void;
const readAheadAnnotationId :UInt64 = 0xc67a9b90f3ce441c;  # the annotation's, for C++
# A result that tells the shim which target memory to read ahead, or how the server reads it
# (on its node, --node-memory). It depends on what the server learned in earlier sessions or
# where it runs, not on the DLL's answers: `mqd-proxy replay`, whose server has learned other
# things, does not compare it (replay/ResultDiff.h).

const protocolVersion :UInt32 = 3;
# Bumped on any incompatible change; Proxy.openSession refuses a mismatch with a clear message.

const maxFetchBytes :Int32 = 67108864;
# The largest single fetch_data (or fetchData request) either side performs: 64 MiB. Open MPI's
# largest read is a few KiB; a larger size is a DLL reading garbage (a byte order the debugger
# got wrong: hundreds of megabytes). The server refuses it to the DLL, the shim to the server.

const maxBlocksAheadBytes :UInt32 = 16777216;
# The most target memory the shim reads ahead for one Session.updateCommunicatorList: 16 MiB,
# one batch of the server's own prefetch.

const maxRefreshAheadBytes :UInt32 = 33554432;
# The most target memory the shim reads ahead for the other processes of one
# Session.updateCommunicatorList (its `others`) when the server does not offer more
# (openSession's refreshAheadBytes): 32 MiB. With the process's own maxBlocksAheadBytes, such a
# request stays below maxFetchBytes, which a server's --max-message-mib must exceed anyway.

const refreshAheadBytesCeiling :UInt32 = 100663296;
# The most a server offers in openSession's refreshAheadBytes: 96 MiB, the guesses of a job of
# about 64 never-seen ranks in one request (docs/round-trips.md, "The whole job"), when its
# --max-message-mib leaves room for them beside the process's own maxBlocksAheadBytes. The
# server refuses more than it offered; the shim never sends more, nor holds more than it may
# send for refreshes waiting to be proved.

const maxLookupsAhead :UInt32 = 16384;
# The most look-ups the shim answers ahead with one Session.setupImage (Open MPI's DLL makes
# about 110); the server refuses a longer list, the shim never sends one.

const firstChosenInfoToken :UInt64 = 0x80000000;
# The info tokens the shim chooses (Session.setupImage's and setupProcess' infoToken) are at or
# above it, the server's own below it: the two never meet. Below 2^32, for a 32-bit debugger's
# pointers.

const atRandomBytes :UInt32 = 16;
# The random bytes the kernel puts at a process's AT_RANDOM address (NodeProcess): what the
# shim reads there, and what a server compares with the process on its host.

const stackCheckBytes :UInt32 = 64;
# The bytes a shim reads at a process's stack pointer (NodeProcess.stack) as it sets the process
# up: the set-up epoch's check, the innermost frame of the stopped thread, which another state
# of the process (a replay at another point) shows otherwise.

# ---------------------------------------------------------------------------------------------
# Values

struct Failure {
  # Why a Session call failed, in the proxy's own terms. Every Session result carries one; when
  # it is set, the call failed and the result's other fields mean nothing. The code crosses the
  # wire as a number: nobody reads it back out of a sentence.
  code @0 :Int32;    # an MQD_PROXY_ERR_* code (schema/mqd_proxy.h), what the debugger sees
  detail @1 :Text;   # the specifics, for mqs_dll_error_string's sentence
}

struct ByteRun {
  # A run of bytes the DLL wrote inside a character array, at `offset` from its start.
  offset @0 :UInt32;
  bytes @1 :Data;
}

struct WrittenChars {
  # What the DLL wrote into one fixed-size character array: zero or more disjoint runs in
  # ascending order. No runs means the DLL left the whole array untouched.
  runs @0 :List(ByteRun);
}

struct Communicator {
  # mqs_communicator. `written` has one bit per scalar field the DLL stored:
  const writtenUniqueId :UInt8 = 0x1;
  const writtenLocalRank :UInt8 = 0x2;
  const writtenSize :UInt8 = 0x4;
  written @0 :UInt8;
  uniqueId @1 :UInt64;
  localRank @2 :Int64;
  size @3 :Int64;
  name @4 :WrittenChars;  # 64 bytes on both sides
}

struct PendingOperation {
  # mqs_pending_operation. `written` has one bit per scalar field the DLL stored:
  const writtenStatus :UInt16 = 0x1;
  const writtenDesiredLocalRank :UInt16 = 0x2;
  const writtenDesiredGlobalRank :UInt16 = 0x4;
  const writtenTagWild :UInt16 = 0x8;
  const writtenDesiredTag :UInt16 = 0x10;
  const writtenDesiredLength :UInt16 = 0x20;
  const writtenSystemBuffer :UInt16 = 0x40;
  const writtenBuffer :UInt16 = 0x80;
  const writtenActualLocalRank :UInt16 = 0x100;
  const writtenActualGlobalRank :UInt16 = 0x200;
  const writtenActualTag :UInt16 = 0x400;
  const writtenActualLength :UInt16 = 0x800;
  written @0 :UInt16;
  status @1 :Int32;
  desiredLocalRank @2 :Int64;
  desiredGlobalRank @3 :Int64;
  tagWild @4 :Int32;
  desiredTag @5 :Int64;
  desiredLength @6 :Int64;
  systemBuffer @7 :Int32;
  buffer @8 :UInt64;
  actualLocalRank @9 :Int64;
  actualGlobalRank @10 :Int64;
  actualTag @11 :Int64;
  actualLength @12 :Int64;
  extraText @13 :List(WrittenChars);  # exactly 5 entries of 64 bytes each
}

struct ProcessLocation {
  # mqs_process_location (level 3). `written` has one bit per scalar field the DLL stored:
  const writtenPid :UInt8 = 0x1;
  written @0 :UInt8;
  pid @1 :Int64;
  imageName @2 :WrittenChars;  # FILENAME_MAX bytes on the side that has the struct
  hostName @3 :WrittenChars;   # 64 bytes
}

struct OutString {
  # A `char **` output parameter as the DLL left it.
  union {
    untouched @0 :Void;  # the DLL did not store anything: the caller's pointer stays as it was
    null @1 :Void;       # the DLL stored NULL
    text @2 :Text;       # the DLL stored a pointer to this NUL-terminated string
  }
}

struct OutInt {
  # An `int *` output parameter as the DLL (or the debugger) left it.
  union {
    untouched @0 :Void;
    value @1 :Int32;
  }
}

struct OutAddress {
  # An `mqs_taddr_t *` output parameter as the debugger left it.
  union {
    untouched @0 :Void;
    value @1 :UInt64;
  }
}

enum InfoKind {
  image @0;
  process @1;
  job @2;
}

struct Bulk {
  # A payload that may travel compressed. `size` is its uncompressed length.
  size @0 :UInt32;
  union {
    raw @1 :Data;
    zstd @2 :Data;
  }
}

struct Counter {
  name @0 :Text;
  value @1 :UInt64;
}

struct SessionStats {
  # One session as the server's session board records it.
  connection @0 :UInt64;   # the server's connection number
  worker @1 :Int32;        # pid of the worker process
  state @2 :Text;          # "open" or "ended"
  dll @3 :Text;
  client @4 :Text;         # the client's architecture
  startedMs @5 :Int64;     # Unix time
  endedMs @6 :Int64;       # 0 while open
  lastCall @7 :Text;       # the mqs_* entry point running or last run
  exit @8 :Text;           # how the worker ended ("exit 0", "SIGSEGV", ...), empty while open
  counters @9 :List(Counter);
}

struct Effect {
  # A debugger-visible effect of a DLL call: sent by the server as it happens (Debugger.effect),
  # or kept in a recorded walk and delivered when the shim serves the call from it.
  union {
    dprints @0 :Text;
    # The DLL's mqs_dprints_fp(text).
    putInfo @1 :InfoUpdate;
    # The DLL called put_{image,process,job}_info(handle, info). The server keeps the info
    # itself (get_*_info never leaves the server); the debugger receives the server's token
    # (`info`, 0 for NULL) as the pointer value, which mqs_destroy_*_info later brings back.
    dllOutput @2 :Data;
    # Bytes the DLL wrote to its stdout or stderr on the server. The shim writes them to the
    # debugger process's stderr, where a natively loaded DLL's output would have gone.
  }
}

struct InfoUpdate {
  kind @0 :InfoKind;
  handle @1 :UInt64;
  info @2 :UInt64;
}

struct RecordedRc {
  rc @0 :Int32;
  effects @1 :List(Effect);
}

struct RecordedCommunicator {
  rc @0 :Int32;
  communicator @1 :Communicator;
  effects @2 :List(Effect);
}

struct RecordedGroup {
  rc @0 :Int32;
  ranks @1 :List(Int32);
  written @2 :Data;
  effects @3 :List(Effect);
}

struct RecordedCollState {
  rc @0 :Int32;
  sequence @1 :OutInt;
  active @2 :OutInt;
  effects @3 :List(Effect);
}

struct RecordedOperation {
  rc @0 :Int32;
  operation @1 :PendingOperation;
  effects @2 :List(Effect);
}

struct WalkedQueue {
  setup @0 :RecordedRc;                       # mqs_setup_operation_iterator
  operations @1 :List(RecordedOperation);     # mqs_next_operation until it stopped returning mqs_ok
}

struct WalkedCommunicator {
  get @0 :RecordedCommunicator;              # mqs_get_communicator
  group @1 :RecordedGroup;                   # mqs_get_comm_group (hasGroup)
  hasGroup @2 :Bool;
  collStates @3 :List(RecordedCollState);    # mqs_get_comm_coll_state(0..13), if the DLL has it
  queues @4 :List(WalkedQueue);              # by mqs_op_class; empty when get failed
  next @5 :RecordedRc;                       # mqs_next_communicator (hasNext)
  hasNext @6 :Bool;
}

struct CommunicatorWalk {
  # Everything a debugger's refresh asks for, run by the server right after a successful
  # mqs_update_communicator_list in the epoch cache policy: setup_communicator_iterator, then for
  # each communicator get, group, collective states, the three queues and next, as long as the
  # DLL answers mqs_ok. The shim serves the debugger's calls from it while they follow this path.
  setup @0 :RecordedRc;
  communicators @1 :List(WalkedCommunicator);
  errorTexts @2 :List(ErrorText);
  # mqs_dll_error_string for each code other than mqs_ok and mqs_end_of_list that a recorded
  # call returned, asked right after the walk (the text is taken to depend only on the code).
}

struct ErrorText {
  code @0 :Int32;
  text @1 :OutString;  # `text` or `null`, as mqs_dll_error_string returned
}

struct WalkCursor {
  # Where the debugger's iteration stood when the shim stopped serving it from a walk: the
  # server replays setup_communicator_iterator, `communicator` next_communicator calls, and (if
  # opClass >= 0) setup_operation_iterator(opClass) and `operations` next_operation calls, up to
  # the first call that does not answer mqs_ok.
  setUp @0 :Bool;
  communicator @1 :UInt32;
  opClass @2 :Int32;
  operations @3 :UInt32;
}

struct BlockRequest {
  # Read `block` if the debugger can, else the largest readable page-aligned window of it that
  # contains `needed`; `needed` itself decides the result code.
  address @0 :UInt64;
  size @1 :UInt32;
  neededAddress @2 :UInt64;
  neededSize @3 :UInt32;
}

struct MemoryBlock {
  rc @0 :Int32;        # the debugger's answer for the needed range (mqs_ok or its error code)
  address @1 :UInt64;  # start of what could be read (meaningful when rc = mqs_ok)
  data @2 :Bulk;
}

struct Lookup {
  union {
    symbol @0 :Text;
    function @1 :NamedLookup;
    type @2 :NamedLookup;
    field @3 :FieldLookup;
    sizeOf @4 :NamedLookup;   # sizeof of the type found by name
  }
}

struct NamedLookup {
  name @0 :Text;
  lang @1 :Int32;
}

struct FieldLookup {
  type @0 :NamedLookup;
  field @1 :Text;
}

struct ConsumedLookup {
  # A look-up the DLL made during a set-up (Session.imageHasQueues' and processHasQueues'
  # consumed): what a record of the set-up must find answered the same (proxy-client/SetUpRecall.h).
  lookup @0 :Lookup;
  address @1 :Bool;  # a symbol's or function's address was taken, not only its result
}

struct LookupAnswer {
  rc @0 :Int32;           # symbol / function
  address @1 :OutAddress; # symbol / function
  type @2 :UInt64;        # type: token (0 = NULL)
  value @3 :Int32;        # field: offset; sizeOf: size
}

struct ProcessFacts {
  # Facts of a process's executable that the debugger answers the same for as long as the
  # process stays set up, sent with Session.setupProcess so that the server keeps them as if
  # the DLL had asked (docs/transparency.md, "Answers the proxy asks for or keeps").
  image @0 :UInt64;            # get_image's answer (0: NULL)
  typeSizes @1 :List(OutInt);  # get_type_sizes': one per mqs_target_type_sizes member (7)
  globalRank @2 :OutInt;
  # get_global_rank's answer at this mqs_setup_process, sent only to a server that reads
  # targets on its host (openSession's readsOnNode), which needs the rank there to find the
  # process (RemoteDebugger::proveOnNode) and would otherwise ask for it in a round trip of its
  # own. Unlike the two above it holds for this call only: a debugger may learn the rank later.
}

struct LearnedLookups {
  # What sessions with one vendor DLL have looked up, kept by the server between sessions
  # (--state-dir) so that the next session can ask for it all in one round trip.
  dll @0 :Text;
  buildId @1 :Text;
  lookups @2 :List(Lookup);
}

struct LearnedBlocks {
  # The target memory a session's epochs of a process read, kept by the server between
  # sessions (--state-dir), keyed by the DLL build and a fingerprint of the process: the
  # addresses its look-ups resolved to, which address-space randomisation makes particular to
  # one process.
  buildId @0 :Text;
  fingerprint @1 :UInt64;
  windows @2 :List(MemoryWindow);
  whole @3 :Bool;
  setUp @4 :List(MemoryWindow);
  # Of the windows, what the process's set-up epoch read (mqs_setup_process and
  # mqs_process_has_queues): a set-up reply's setUpAhead.
  # The windows include what at least one whole update (and its walk) read, not only a set-up.
  # Only such records are written; one without the mark (an older server's) is ignored
  # (proxy-server/caches/LearnedMemory.h).
}

struct MemoryWindow {
  address @0 :UInt64;
  size @1 :UInt32;
}

struct NodeProcess {
  # A process of a server's host that names MPI rank `rank` in its environment
  # (openSession's nodeProcesses).
  rank @0 :Int32;
  random @1 :UInt64;  # the address of its atRandomBytes AT_RANDOM bytes
  stack @2 :UInt64;
  # Its main thread's stack pointer as the session opened, where the set-up epoch's check reads
  # stackCheckBytes; 0: not known (the thread ran, or an older server).
}

struct LinkTimings {
  # The shim's measures of the links (proxy-client/CostRule.h), sent with setupProcess and
  # updateCommunicatorList: the server's bound on the blocks a miss reads around
  # (RemoteDebugger::aroundBudget) takes them until its callbacks have measured their own, so
  # that a session's first miss (a job never seen: its first rank's) reads around too.
  roundTripSeconds @0 :Float64;    # the quickest round trip to the server so far; 0: none yet
  readSecondsPerByte @1 :Float64;  # what a byte more in a debugger's read of target memory
                                   # costs (the shim's ReadPrice, or its read_cost setting)
  readCostKnown @2 :Bool;          # false: nothing read yet (readSecondsPerByte means nothing)
}

struct SetUpRecords {
  # The outcomes of set-ups of one vendor DLL build in the shim's earlier sessions, each with
  # digests of what the DLL consumed, kept between sessions (MQD_PROXY_STATE_DIR,
  # proxy-client/SetUpRecall.h; docs/round-trips.md, "Set-ups answered from a record").
  buildId @0 :Text;
  lookups @1 :List(Lookup);   # the look-ups the records name, by index
  records @2 :List(SetUpRecord);
  consumedOnly @3 :Bool;
  # The records are keyed by the look-ups each set-up consumed; a file without the mark (an
  # older shim's, keyed by every look-up answered ahead) is ignored.
}

struct SetUpRecord {
  # One image's set-up and the set-up of the process set up with it, each call's outcome: its
  # result, message and effects in order.
  lookups @0 :List(UInt32);   # an older file's: what was answered ahead (no longer written)
  lookupDigest @1 :Data;      # SHA-256 of the answers to `consumed`
  image @2 :RecordedCall;     # mqs_setup_image (it answered mqs_ok: only such set-ups are kept)
  imageHasQueues @3 :RecordedCall;
  hasProcess @4 :Bool;        # the process part below is set
  processDigest @5 :Data;     # SHA-256 of its byte order, type sizes and reads (in order)
  reads @6 :List(BlockRequest);  # the reads the shim answered, in order
  process @7 :RecordedCall;   # mqs_setup_process (mqs_ok)
  warning @8 :Text;           # its reply's warning (ByteOrderCheck), empty if none
  processHasQueues @9 :RecordedCall;
  consumed @10 :List(RecordedLookup);  # what the image's two calls consumed
  processConsumed @11 :List(RecordedLookup);  # what the process's two calls consumed
  processLookupDigest @12 :Data;  # SHA-256 of the answers to processConsumed
  hasProcessAnchor @13 :Bool;     # processAnchor below is set (an older file's never is)
  processAnchor @14 :UInt64;      # where the process part lies in its process (its anchor)
}

struct RecordedLookup {
  index @0 :UInt32;   # in SetUpRecords.lookups
  address @1 :Bool;   # as ConsumedLookup's
}

struct RecordedCall {
  rc @0 :Int32;
  message @1 :OutString;      # has-queues calls
  effects @2 :List(RecordedEffect);
}

struct RecordedEffect {
  union {
    putInfo @0 :Void;         # the call put an info on its own object (its token is chosen anew)
    dprints @1 :Text;
    dllOutput @2 :Data;
  }
}

struct RefreshAhead {
  # Another set-up process, refreshed ahead of its own mqs_update_communicator_list: the
  # windows its last reply named (nextEpoch), each with the block the shim read for it now.
  process @0 :UInt64;
  ahead @1 :List(MemoryWindow);
  blocks @2 :List(MemoryBlock);
  checkLate @3 :List(MemoryWindow);
  # For a process the server reads on its node (its last reply said readOnNode), instead of
  # `ahead`: the windows that reply named, its epoch check, not read by the shim now. The
  # server reads them on the node as the process's epoch starts (as updateCommunicatorList's
  # checkLate) and returns them in RefreshedAhead.nodeBytes; the shim reads them from its
  # debugger at the process's own update, the check made late, and serves the refresh only if
  # they are the node's bytes.
}

struct PeerEpoch {
  # Another set-up process never updated, of which nothing was learned, with what its first
  # update is likely to read: guessed from the memory this update's process read
  # (proxy-server/caches/PeerLayout.h). The shim may read it ahead with that process's update, or
  # with another's as a refresh ahead, as if that process's own reply had named it.
  process @0 :UInt64;
  nextEpoch @1 :List(MemoryWindow);
  callbacks @2 :UInt32;  # the round trips this update waited for: about what the guess saves
}

struct RefreshedAhead {
  # A process of `others` whose refresh asked the debugger nothing (or, when the request says
  # othersProvedByFetches, nothing but blocks of its memory): the DLL answered mqs_ok, printed
  # nothing, and read only the blocks sent (or fetched). Its walk and next windows, as its own
  # update's reply would carry them.
  process @0 :UInt64;
  walk @1 :Bulk;
  nextEpoch @2 :List(MemoryWindow) $readAhead;
  read @3 :List(MemoryWindow) $readAhead;
  # Every window of the blocks sent (or fetched) for it that its update read (merged as
  # nextEpoch's, never bounded): the shim proves the refresh current by reading these again,
  # not all it sent (proxy-client/ReadAhead.h, readOf). Absent from a server that does not
  # say: all of it.
  nodeBytes @4 :List(MemoryBlock) $readAhead;
  # Of a process sent with checkLate: the node's bytes of those windows, one block each, in
  # order, which its refresh started from (it read nothing else but on the node). A server
  # that ignores checkLate refreshes no such process.
}

# ---------------------------------------------------------------------------------------------
# What a server offers

struct DllDescription {
  path @0 :Text;           # as listed on the server's command line
  versionString @1 :Text;  # mqs_version_string()
  compatibility @2 :Int32; # mqs_version_compatibility()
  taddrWidth @3 :Int32;    # mqs_dll_taddr_width(), 0 when the DLL lacks it
  entryPoints @4 :List(Text);  # the optional mqs_* entry points the DLL exports
  buildId @5 :Text;        # GNU build-id in hex, or a content hash when there is none
}

struct ServerDescription {
  version @0 :Text;        # mqd-proxy version of the server
  arch @1 :Text;           # machine the server (and so the DLL) runs on, e.g. "aarch64"
  bigEndian @2 :Bool;
  pointerSize @3 :UInt8;   # the server's sizeof(void *) and sizeof(mqs_taddr_t)
  dlls @4 :List(Text);     # the allow-list, default first
  protocolVersion @5 :UInt32;
  anyDll @6 :Bool;         # dlls is empty and the server loads any absolute path a client
                           # names (a --stdio server without --dll, reached over ssh)
}

enum CachePolicy {
  # What the server may answer without asking the debugger (MQD_PROXY_CACHE).
  off @0;    # nothing: every callback is a round trip (the naive baseline)
  call @1;   # symbols and types for the session, a process's image and type sizes while it
             # stays set up, its rank, job and identity for one mqs_* call; target memory
             # within one mqs_* call
  epoch @2;  # also target memory for an epoch (from mqs_update_communicator_list to the next,
             # or from mqs_setup_process to the first), learned look-ups, block prefetch and
             # the recorded communicator walk
}

struct SessionOptions {
  protocolVersion @0 :UInt32;
  dll @1 :Text;            # path or base name from the allow-list; empty = the server's default
  clientArch @2 :Text;     # for logs and diagnostics only
  clientTaddrWidth @3 :UInt8;
  cachePolicy @4 :CachePolicy = epoch;
  compress @5 :Bool;       # zstd for bulk payloads (memory blocks, walks), both directions
  resumeInfos @6 :List(InfoUpdate);
  # A session that re-establishes a lost one: the info tokens the debugger holds, by handle.
  # When the DLL hangs a new info on one of these handles (put_*_info while the shim replays
  # the set-up), the server names it with the same token, so the pointers the debugger keeps
  # stay valid.
  recorded @7 :Bool;
  # The shim records this session (MQD_PROXY_RECORD): a replay has only what the debugger
  # answered, so a server with --node-memory reads no target on its host for it (openSession's
  # readsOnNode then says false). A replay opens its session with the recorded options.
}

struct SessionTicket {
  # Names a session to its own client after the connection is gone (Proxy.postMortem).
  # `key` is random, so that nobody else can ask about it.
  connection @0 :UInt64;
  key @1 :UInt64;
}

struct PostMortem {
  # How the worker behind a session ended, as the supervisor recorded it.
  known @0 :Bool;      # false: no such session (or the key did not match)
  ended @1 :Bool;      # false: the worker was still running when the server stopped waiting
  worker @2 :Int32;    # pid of the worker
  how @3 :Text;        # "exit 0", "SIGSEGV", ... (empty while running)
  dll @4 :Text;        # the vendor DLL the worker had loaded
  lastCall @5 :Text;   # the vendor DLL entry point running or last run
}

# ---------------------------------------------------------------------------------------------
# Capabilities

interface Proxy {
  # Bootstrap capability of every connection.

  describe @0 () -> (server :ServerDescription);

  openSession @1 (options :SessionOptions, debugger :Debugger)
      -> (session :Session, dll :DllDescription, ticket :SessionTicket, failure :Failure,
          takesInfoTokens :Bool, readsOnNode :Bool, nodeRanks :List(Int32),
          refreshAheadBytes :UInt32, nodeProcesses :List(NodeProcess));
  # Loads the chosen DLL (only one from the allow-list) and returns a session bound to this
  # connection. One session per connection. `ticket` names the session for postMortem.
  # A refusal (another protocol version, a DLL not allowed or that cannot be loaded, a second
  # session) is a `failure` with code MQD_PROXY_ERR_SESSION_REFUSED and the reason.
  # takesInfoTokens: the session honours the infoToken of setupImage and setupProcess (an
  # older server ignores it, and the shim then never answers a set-up from a record).
  # readsOnNode: the server reads proved targets on its host (--node-memory): the shim then
  # answers no process's set-up from a record, whose proof it would read through the debugger.
  # nodeRanks: with readsOnNode, the MPI ranks of the processes on the server's host it could
  # prove (LocalProcess::ranksHere), ascending: a shim with a server on every node serves each
  # process from the one node that has its rank
  # (docs/round-trips.md, "A server on every node"). Listed as the session opens; a process
  # started later is not in it.
  # nodeProcesses: with readsOnNode, where each of those processes keeps its AT_RANDOM bytes
  # and its stack: the shim reads both through the debugger as it sets up a process of that
  # rank and sends them ahead (setupProcess' ahead and blocks), or, of a rank's one process
  # here, reads them while the set-up travels (setupProcess' proveLate): the proof of identity
  # and the set-up epoch's check without a callback
  # (docs/round-trips.md, "Reading the target on its node"). Absent from an older server.
  # refreshAheadBytes: the most target memory of other processes the session takes in one
  # updateCommunicatorList (its `others`), from maxRefreshAheadBytes to refreshAheadBytesCeiling
  # as --max-message-mib leaves room; 0 (an older server): maxRefreshAheadBytes.

  stats @2 () -> (sessions :List(SessionStats));
  # Every session open on this server, and the most recent ended ones, with their counters.

  postMortem @3 (ticket :SessionTicket, waitMs :UInt32) -> (report :PostMortem);
  # How the session named by `ticket` ended: asked by a client whose connection broke, to tell
  # a crash of the vendor DLL (the worker died of a signal) from a network failure. Waits up to
  # `waitMs` for the supervisor to reap a worker that is going away: the client's own bound on
  # the question, less what connecting and answering take (0, from a client that sends none:
  # 1500 ms).
}

interface Session {
  # One debugger's use of one vendor DLL. Calls are executed strictly one at a time, in the
  # order received. Every call that runs DLL code returns `rc`, the DLL's result (absent for the
  # void entry points). The DLL's callbacks reach the Debugger during the call, in order.
  # Every result ends with `failure`: set when the proxy could not make the call (a bad handle,
  # a call before its set-up, a fetch too large); an exception means the call never ran or the
  # session broke.

  setupBasicCallbacks @0 () -> (failure :Failure);
  # mqs_setup_basic_callbacks. The server installs its own (level-3) table in the DLL: every
  # basic callback is answered on the server, and dprints is relayed through Debugger.

  dllErrorString @1 (code :Int32) -> (text :OutString, failure :Failure);
  # mqs_dll_error_string(code): `null` when the DLL returned NULL.

  setupImage @2 (image :UInt64, ahead :List(Lookup), answers :List(LookupAnswer),
                 infoToken :UInt64, recalled :Bool)
      -> (rc :Int32, failure :Failure);
  # ahead: look-ups this DLL build made in the shim's earlier sessions or for the images set up
  # before this one (MQD_PROXY_STATE_DIR), with the debugger's answers for this image, one per
  # look-up, in order; at most maxLookupsAhead, and only under the epoch policy (a server
  # ignores them otherwise). The server keeps them as it keeps the answers it asks for, and asks
  # in one round trip only for what else it learned.
  # infoToken: not 0 when the shim answered this set-up from a record before its reply
  # (docs/round-trips.md, "Set-ups answered from a record") and gave the debugger this token
  # for the image info: the info the DLL puts on the image in this call gets it (at or above
  # firstChosenInfoToken, never one the server issued). Likewise setupProcess' infoToken for
  # the process info. recalled (both set-ups): so answered; the shim does not wait for this
  # reply, so the server counts it as a call behind (rt.calls_behind), not a round trip.
  imageHasQueues @3 (image :UInt64, afterSetUp :Bool)
      -> (rc :Int32, message :OutString, failure :Failure,
          setUpAhead :List(MemoryWindow) $readAhead, skipped :Bool,
          consumed :List(ConsumedLookup), consumedKnown :Bool);
  # afterSetUp: the shim sent this call right behind the image's setupImage, before its reply
  # (docs/round-trips.md, "Set-up"): the server runs mqs_image_has_queues only if that set-up
  # answered mqs_ok, and otherwise answers `skipped`, with nothing else set.
  # consumed: in the epoch policy, the look-ups the image's mqs_setup_image and this call made,
  # each once; consumedKnown: they are all named (not when the DLL used a type handle that no
  # look-up by name found, nor in another policy).
  # setUpAhead: in the epoch policy, what an earlier session's set-up of a process of this
  # image read (the image's look-ups resolved as that process's did: the same fingerprint).
  # The shim reads it from a process it sets up with this image, inside mqs_setup_process,
  # and sends it with the request (setupProcess' ahead and blocks).
  destroyImageInfo @4 (info :UInt64) -> (failure :Failure);

  setupProcess @5 (process :UInt64, targetBigEndian :Bool, facts :ProcessFacts,
                   ahead :List(MemoryWindow), blocks :List(MemoryBlock), infoToken :UInt64,
                   recalled :Bool, timings :LinkTimings, proveLate :List(MemoryWindow),
                   redoesLate :Bool)
      -> (rc :Int32, warning :Text, failure :Failure, nextEpoch :List(MemoryWindow) $readAhead,
          learned :Bool $readAhead, setUpAhead :List(MemoryWindow) $readAhead,
          readOnNode :Bool $readAhead, nodeBytes :List(MemoryBlock) $readAhead,
          heldEffects :List(Effect) $readAhead);
  # targetBigEndian: the target's byte order, which the shim learned from the debugger's own
  # target_to_host. The server runs target_to_host itself (the DLL's "host" is the server).
  # timings (here and in updateCommunicatorList): see LinkTimings.
  # facts: under the epoch policy, the process's image and type sizes, asked of the debugger
  # by the shim once it holds the process's table (absent otherwise: the server asks when the
  # DLL asks). Its job and identity are asked when the DLL asks, since a debugger may learn
  # them only after the set-up; its rank likewise, except by a server that reads on its host
  # (ProcessFacts.globalRank).
  # warning: a sentence for the user when the reported byte order contradicts a value of the
  # target's memory that the set-up read (proxy-server/worker/ByteOrderCheck.h); empty otherwise.
  # proveLate: for a server that reads on its host, instead of `ahead`: the AT_RANDOM window and
  # the stack window (atRandomBytes, stackCheckBytes) its session listed for the one
  # process of the rank in `facts` there, which the shim reads from its debugger while this
  # request travels (docs/round-trips.md, "Reading the target on its node"). The server, when
  # that rank's one process here is that one and stopped, takes it as proved, reads the windows
  # there (returned in `nodeBytes`, one block each, in order), the stack's the set-up epoch's
  # check, and runs the set-up with the DLL's effects held back (`heldEffects`, in order, and
  # the processHasQueues behind it likewise). The shim serves the reply, giving the debugger
  # those effects, only if its debugger's bytes are the same; otherwise it sends the set-up
  # again with them as `ahead` and `redoesLate`, and the server first destroys the info the
  # DLL put in the set-up it held back (its effects held back too). No `nodeBytes`: the
  # server did not (no such one process, it runs, a window is unreadable here), the set-up ran
  # as without proveLate (its proof at its first read that misses) and its effects were
  # delivered as they happened. A server that ignores proveLate sends neither.
  # setUpAhead: in the epoch policy, what an earlier session's set-up of the process read and
  # this one has not yet (nor was sent with the request): the rest of the set-up (mqs_process_has_queues) is likely to read it.
  # The shim reads it at that call and sends it with it (processHasQueues' ahead and blocks),
  # instead of the server asking for it in a round trip of its own.

  processHasQueues @6 (process :UInt64, ahead :List(MemoryWindow), blocks :List(MemoryBlock),
                       afterSetUp :Bool)
      -> (rc :Int32, message :OutString, failure :Failure,
          nextEpoch :List(MemoryWindow) $readAhead, learned :Bool $readAhead, skipped :Bool,
          setUpRead :List(MemoryWindow) $readAhead, readOnNode :Bool $readAhead,
          consumed :List(ConsumedLookup), consumedKnown :Bool,
          heldEffects :List(Effect) $readAhead);
  # afterSetUp, skipped, consumed, consumedKnown: as for imageHasQueues, behind the process's
  # setupProcess, and the look-ups its mqs_setup_process and this call made. heldEffects:
  # behind a set-up whose effects were held back (setupProcess' proveLate), this call's,
  # which the shim gives the debugger as it serves the debugger's own call.
  # setUpRead: in the epoch policy, what the DLL read of the process in its set-up so far
  # (mqs_setup_process and this call), as windows: the bytes a record of the set-up proves
  # (proxy-client/SetUpRecall.h).
  # nextEpoch (here and in setupProcess): in the epoch policy, the windows the process's first
  # mqs_update_communicator_list will read again (as updateCommunicatorList's nextEpoch), so
  # that the shim reads them ahead, as for every later update, instead of the server asking
  # for them in a round trip of its own. learned: they hold what an earlier session of the
  # process read in every epoch, so its first update is likely to read nothing else: the shim
  # may refresh it ahead (`others`) with another process's first update. readOnNode (here,
  # in setupProcess and in updateCommunicatorList): the server reads the process on its node
  # (--node-memory): the shim makes its next update's epoch check late (`checkLate`), and
  # refreshes it ahead only with another such process's update, its check late too
  # (RefreshAhead.checkLate), never reading its windows for another's update.
  destroyProcessInfo @7 (info :UInt64) -> (failure :Failure);

  updateCommunicatorList @8 (process :UInt64, clientCounters :List(Counter),
                             ahead :List(MemoryWindow), blocks :List(MemoryBlock),
                             others :List(RefreshAhead), checkLate :List(MemoryWindow),
                             timings :LinkTimings, othersProvedByFetches :Bool)
      -> (rc :Int32, walk :Bulk, nextEpoch :List(MemoryWindow) $readAhead, failure :Failure,
          refreshed :List(RefreshedAhead), readOnNode :Bool $readAhead,
          nodeBytes :List(MemoryBlock) $readAhead, lateCheckDeclined :Bool $readAhead,
          peers :List(PeerEpoch) $readAhead, provable :Bool $readAhead,
          read :List(MemoryWindow) $readAhead);
  # Starts a new memory epoch for the process. In the epoch policy, and when the DLL answers
  # mqs_ok, `walk` carries the serialised CommunicatorWalk (empty otherwise). clientCounters:
  # the shim's own counters, for the session board.
  # nextEpoch: in the epoch policy, the windows of target memory this epoch has read (at most
  # maxBlocksAheadBytes in all; for a process read on its node, only the range its epoch
  # check compared), which the next epoch will read again. readOnNode: as for
  # processHasQueues. ahead/blocks: the windows the process's previous reply named, one block
  # each, in order, read by the shim from its debugger inside this call (what a fetchBlocks
  # at the epoch's start would have got); the server keeps them as this epoch's and asks in
  # one round trip only for what else the previous epoch read.
  # others: in the epoch policy, other set-up processes to refresh in the same request, after
  # `process` (at most maxRefreshAheadBytes of blocks in all). The server starts each one's
  # epoch with its blocks, calls mqs_update_communicator_list and walks it, exactly as for
  # `process`, but with the DLL's effects held back; `refreshed` names those that asked the
  # debugger nothing (see RefreshedAhead), and the others' work is dropped: their own update
  # runs again. The shim serves a refreshed process at its own update only once it has read
  # every window again and found the same bytes (docs/round-trips.md, "The whole job").
  # checkLate: for a process the last reply about it said readOnNode, instead of `ahead`: the
  # windows that reply named, which the shim reads from its debugger while this request travels. The
  # server (when it still reads the process on its node) reads them there as the epoch starts,
  # serves the DLL from them, and returns them in `nodeBytes`, one block each, in order; the
  # shim serves the reply only if the debugger's bytes are the same, and otherwise sends the
  # update again with them as `ahead` (which the server compares). lateCheckDeclined: the
  # server could not serve it so (the process runs, a window is unreadable on the node, or
  # the DLL had something to show the debugger, held back): the shim sends the update again,
  # with `ahead`. A server that ignores checkLate sends neither, and its reply stands.
  # peers: in the epoch policy, at the process's first update that walked, a guess for every
  # other process never updated (see PeerEpoch).
  # othersProvedByFetches: the shim keeps the blocks the server fetches for an other's misses
  # (fetchBlocks, not aside) during this request, and proves a refresh by them as by the blocks
  # it sent: the server may then name in `refreshed` one whose only callbacks were those
  # fetches (see RefreshedAhead). An older shim sends false: such a refresh is dropped.
  # provable: in the epoch policy, this process's own update asked the debugger nothing but
  # blocks of its memory (fetchBlocks, not aside: its misses', the previous epoch's the shim
  # did not send), printed nothing, answered mqs_ok and walked, and was not read on the node:
  # every byte it read came from `blocks` or those fetches, which the shim keeps, so
  # the shim may hold the walk as the process's last epoch, proved at its next update like a
  # refresh ahead (docs/round-trips.md, "An epoch like the last"). read: then, every window
  # of those blocks the update read (as RefreshedAhead.read). An older server says false.
  setupCommunicatorIterator @9 (process :UInt64) -> (rc :Int32, failure :Failure);
  getCommunicator @10 (process :UInt64)
      -> (rc :Int32, communicator :Communicator, failure :Failure);
  getCommGroup @11 (process :UInt64)
      -> (rc :Int32, ranks :List(Int32), written :Data, failure :Failure);
  # The server sizes the DLL's buffer from the communicator size the DLL last reported for this
  # process. `written` has one bit per element of `ranks` (LSB first); unwritten elements are
  # left untouched in the debugger's buffer.

  nextCommunicator @12 (process :UInt64) -> (rc :Int32, failure :Failure);
  setupOperationIterator @13 (process :UInt64, opClass :Int32)
      -> (rc :Int32, failure :Failure);
  nextOperation @14 (process :UInt64)
      -> (rc :Int32, operation :PendingOperation, failure :Failure);

  # Level 3 and extensions. Each fails with rc = MQD proxy "entry point missing" when the DLL
  # does not export it (see mqd_proxy.h), except getCommCollState, which answers
  # mqs_no_information like a DLL that cannot tell.
  setupJob @15 (job :UInt64) -> (rc :Int32, failure :Failure);
  destroyJobInfo @16 (info :UInt64) -> (rc :Int32, failure :Failure);
  setupNewProcessIterator @17 (process :UInt64) -> (rc :Int32, failure :Failure);
  nextNewProcess @18 (process :UInt64)
      -> (rc :Int32, location :ProcessLocation, failure :Failure);
  setProcessIdentity @19 (process :UInt64, identity :Int32)
      -> (rc :Int32, failure :Failure);
  getCommCollState @20 (process :UInt64, collective :Int32)
      -> (rc :Int32, sequence :OutInt, active :OutInt, failure :Failure);

  reposition @21 (process :UInt64, cursor :WalkCursor) -> (failure :Failure);
  # The shim stops serving from a walk: bring the DLL's iterators to where the debugger
  # believes they are. The DLL calls it replays have no debugger-visible effects (the debugger
  # already saw them). Sent without waiting, right before the call that needs it.
}

interface Debugger {
  # The debugger-side callbacks the server cannot answer itself. Implemented by the shim, which
  # runs each one on the debugger thread that made the pending mqs_* call. Only valid while a
  # Session call is in progress.

  findFunction @0 (image :UInt64, name :Text, lang :Int32, wantAddress :Bool)
      -> (rc :Int32, address :OutAddress);
  findSymbol @1 (image :UInt64, name :Text, wantAddress :Bool)
      -> (rc :Int32, address :OutAddress);
  # wantAddress = false reproduces a DLL that passed a NULL out-pointer: the debugger gets NULL
  # too.

  findType @2 (image :UInt64, name :Text, lang :Int32) -> (type :UInt64);
  fieldOffset @3 (type :UInt64, field :Text) -> (offset :Int32);
  sizeOf @4 (type :UInt64) -> (size :Int32);

  getTypeSizes @5 (process :UInt64) -> (sizes :List(OutInt));
  # One entry per mqs_target_type_sizes member (7), each `untouched` if the debugger did not
  # write it (a 5-member debugger leaves the last two untouched).

  fetchData @6 (process :UInt64, address :UInt64, size :Int32) -> (rc :Int32, data :Data);
  # data has exactly `size` bytes when rc = mqs_ok and is empty otherwise; on failure the DLL's
  # buffer is left untouched.

  getGlobalRank @7 (process :UInt64) -> (rank :Int32);
  getImage @8 (process :UInt64) -> (image :UInt64);
  getProcessJob @9 (process :UInt64) -> (job :UInt64);
  getProcessIdentity @10 (process :UInt64) -> (identity :Int32);
  getProcess @11 (job :UInt64, index :Int32) -> (process :UInt64);

  errorString @12 (code :Int32) -> (text :OutString);
  # The debugger's mqs_errorstring_fp(code); `null` if it returned NULL.

  effect @13 (effect :Effect) -> ();
  # Something the DLL did that the debugger sees (struct Effect), sent the moment it happens.
  # The same encoding a recorded walk keeps, and the shim delivers both the same way
  # (DebuggerSide::effect). Not waited for.

  fetchBlocks @14 (process :UInt64, blocks :List(BlockRequest), aside :Bool)
      -> (blocks :List(MemoryBlock));
  # Memory for the server's cache, one answer per request, in order. aside: memory no DLL read
  # is served from (what the server reads to guess a peer's reads, proxy-server/caches/PeerLayout.h):
  # a block the shim cannot read or refuses is answered with an error code, never fails the
  # call, so a guess never changes what the debugger's own call answers.

  lookUp @15 (image :UInt64, lookups :List(Lookup)) -> (answers :List(LookupAnswer));
  # Many symbol and type look-ups at once (the server's learned prefetch).
}
