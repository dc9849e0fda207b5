# record.capnp: a recorded session (MQD_PROXY_RECORD), as `mqd-proxy replay` reads it.
#
# The shim records at the wire level: every Session request it sent with the results it got,
# and every Debugger request the server made with the answer the debugger gave, as the structs
# of mqd.capnp (copied whole into AnyPointer fields), in the order they happened. A replay can
# then run the same Session calls against a server and answer its callbacks from the record,
# without a debugger or a live job.
#
# The file (proxy-client/recording/RecordFile.h) is a small file header, then chunks, each a
# zstd-compressed run of Cap'n Proto messages: the first message of the file is a Header,
# every other one an Entry. Chunks are written whole, so a file cut short (the debugger died)
# loses at most its last chunk.

@0xd264c5ca4a5a0889;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("mqd::record");

using Wire = import "mqd.capnp";

const formatVersion :UInt32 = 1;
# The version of this layout, also in the file header; a reader refuses any other.

struct Header {
  formatVersion @0 :UInt32;
  protocolVersion @1 :UInt32;      # mqd.capnp's protocolVersion of the recording shim
  shimVersion @2 :Text;            # mqd-proxy version of the recording shim
  startedMs @3 :Int64;             # Unix time of the first session
  endpoint @4 :Text;               # MQD_PROXY_SERVER as the shim reached it
  server @5 :Wire.ServerDescription;  # Proxy.describe of that server (absent if it failed)
  options @6 :Wire.SessionOptions;    # of the first session: DLL asked for, cache policy,
                                      # compression, client architecture and taddr width
  dll @7 :Wire.DllDescription;        # what the server loaded for it
}

struct Entry {
  micros @0 :UInt64;  # since the recording started

  union {
    sessionOpened @1 :SessionOpened;
    sessionCall @2 :SessionCall;
    sessionReturn @3 :SessionReturn;
    debuggerCall @4 :DebuggerCall;
    apiCall @5 :ApiCall;
    processLabel @6 :ProcessLabel;
  }
}

struct SessionOpened {
  # A session opened on a new connection: the first one, or one that re-establishes a lost one
  # (options.resumeInfos then lists the info tokens the debugger held).
  endpoint @0 :Text;
  options @1 :Wire.SessionOptions;
  dll @2 :Wire.DllDescription;
}

struct SessionCall {
  # A Session request as sent: `method` is its ordinal in mqd.capnp's Session, `params` its
  # parameter struct. Calls may overlap (reposition is sent without waiting); `id` pairs a call
  # with its SessionReturn.
  id @0 :UInt64;
  method @1 :UInt16;
  params @2 :AnyPointer;
}

struct SessionReturn {
  id @0 :UInt64;
  method @1 :UInt16;
  results @2 :AnyPointer;  # the result struct, unless the call failed
  failure @3 :Failure;     # set when it failed
}

struct DebuggerCall {
  # A Debugger request from the server and the debugger's answer, recorded once answered.
  # Notifications (dprints, dllOutput, putInfo) have empty results.
  method @0 :UInt16;
  params @1 :AnyPointer;
  results @2 :AnyPointer;  # unless the answer failed
  failure @3 :Failure;
}

struct Failure {
  # An exception of the RPC system (the session broke, ...). A call the proxy failed returned
  # normally: its code is in the `failure` of its recorded results (mqd.capnp).
  type @0 :UInt8;          # kj::Exception::Type
  description @1 :Text;
}

struct ApiCall {
  # An mqs_* entry point the debugger called, and what it returned to the debugger; written
  # when the call returned. Calls the shim answered without the server (from a recorded
  # walk, from its caches) show here and nowhere else.
  entryPoint @0 :Text;
  rc @1 :Int32;
}

struct ProcessLabel {
  # What the debugger said about a process it set up (MQD_PROXY_RECORD_LABEL, e.g. the gdb
  # front end's "inferior=2 pid=1234 rank=1"): shown by the replay in place of facts a session
  # cannot know.
  process @0 :UInt64;
  label @1 :Text;
}
