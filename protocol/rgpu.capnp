# rgpu wire protocol: the messages between the client library and rgpud.
@0xef938a6a7fca9c40;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("rgpu::wire");

# ---------------------------------------------------------------------------
# Wire model
#
# A session is one transport connection between one client process and one
# rgpud. Every transport message carries a header, which is exactly one
# Cap'n Proto message (unpacked, flat-array framing) whose root is `Envelope`,
# and optionally a bulk payload next to it. Bulk data (the bytes of a large
# host<->device copy) never goes through the message builder: it travels as
# the transport payload, which UCX moves by rendezvous straight between the
# sender's buffer and the receiver's, and `Call.payloadBytes` /
# `Reply.payloadBytes` say how many payload bytes belong to the message.
# Small data rides inline in `Data` fields.
#
# 1. The client sends `Hello`; the server answers `Welcome`: either accepted
#    (devices with all their attributes, so device queries are answered on
#    the client) or refused with a reason. A client of another protocol
#    version gets a refusal naming both versions; the server never guesses.
#    A server that requires authentication answers the hello with a
#    `Challenge` (a fresh random nonce) first; the client answers with
#    `Authenticate`, an HMAC-SHA256 under its tenant's shared key over both
#    nonces, and the server welcomes it only when the proof is right. The
#    welcome carries the server's own proof over the nonces, so the client
#    knows that the server holds the key too (see docs/security.md). Until it
#    is welcomed, a connection may send nothing but these, small, within a
#    time limit: the server keeps no session, thread or buffer for it.
# 2. The client sends `Batch`es of calls. Calls run on the server strictly
#    in the order the client issued them. Calls are of two kinds:
#      - async calls (launches, async copies, memsets, event record, stream
#        wait, handle creation) get no reply. If one fails, its error is kept
#        and reported by the next sync call (as a GPU reports asynchronous
#        errors at the next synchronizing call);
#      - a sync call is always the last call of its batch and gets exactly one
#        `Reply` with the same `id`.
#    Handles (contexts, streams, events) are minted by the client and mapped
#    by the server per session, so creating one needs no round trip. Device
#    pointers are the server's real addresses, passed verbatim; the server
#    checks each one against the session's own allocations before use.
# 3. An async device-to-host copy is answered later by a `CopyDone` message when
#    the copy has completed on its stream; the client receives its payload
#    straight into the destination buffer.
# 4. A host function (cuLaunchHostFunc) runs on the client: when its stream
#    reaches it the server sends `HostFuncCall`, holds the stream, and goes on
#    when the client answers `HostFuncDone`, which bypasses the call order.
# 5. Modules are named by content hash and cached by the server, so an image
#    crosses the wire once per server, not once per process.
#
# Evolution: field ordinals are append-only. A call the server does not know
# (a newer client) or cannot decode is answered "not supported" at once when
# it wants a reply (`Call.wantsReply`), so a client never waits for a reply
# that will not come. The two sides negotiate: each sends the range of
# protocol versions it speaks and its feature bits; the session runs at the
# highest version both speak (see docs/protocol.md).
#
# 6. `Call.invoke` is the generic call record that carries every call
#    generated from an API description (api/*.api): which API,
#    which function (its ordinal, held stable by a lock file), and the
#    arguments packed as that function's description lays them out. The
#    server's generated dispatch row decodes, validates and runs it
#    (docs/api-description.md).
#
# Handles are typed: the top byte of every handle names its kind
# (protocol/include/rgpu/protocol/handles.h), so a stream can never be taken
# for an event, and the special values (the NULL stream, the legacy and
# per-thread streams, a device's primary context) are spelled, not guessed.
# ---------------------------------------------------------------------------

# The newest protocol this build speaks, and the oldest it still accepts.
# 4: events and streams' creation, queries and destruction are generated
# calls (Call.invoke); their typed members retired.
const protocolVersion :UInt32 = 4;
const minProtocolVersion :UInt32 = 4;

# Which API a call or a result code belongs to.
enum Api {
  none @0;
  driver @1;     # CUresult
  runtime @2;    # cudaError_t
  cublas @3;     # cublasStatus_t
  cublasLt @4;   # cublasStatus_t
  cudnn @5;      # cudnnStatus_t
  cusparse @6;   # cusparseStatus_t
  cufft @7;      # cufftResult
  curand @8;     # curandStatus_t
  cusolver @9;   # cusolverStatus_t
  nvml @10;      # nvmlReturn_t
  rgpu @11;      # rgpu's own (session-level) codes
}

# What a client asks of its session, and what the session got. Zero means
# "no preference" in a request and "no limit" in a grant.
struct Resources {
  devices @0 :UInt32;       # how many devices
  memoryBytes @1 :UInt64;   # device memory, all devices together
  leaseSeconds @2 :UInt32;  # how long the grant holds before it must be renewed
  lease @3 :Text;           # an opaque lease the pool issued (empty: none)
  # The compute share of each device, 0 to 1: the least a request takes (0:
  # no preference), the share of the device's compute the session's slices
  # were cut with in a grant (0: a whole device, shared; docs/sharing.md).
  computeShare @4 :Float32;
}

struct Envelope {
  union {
    hello @0 :Hello;
    welcome @1 :Welcome;
    batch @2 :Batch;
    reply @3 :Reply;
    copyDone @4 :CopyDone;
    hostFuncCall @5 :HostFuncCall;
    hostFuncDone @6 :HostFuncDone;
    deviceOutput @7 :Data;  # device printf text (server to client), for the client's stdout
    challenge @8 :Challenge;        # server to client, before the welcome
    authenticate @9 :Authenticate;  # client to server, the answer to the challenge
    deviceError @10 :Data;  # failed device asserts' messages (server to client), for the client's stderr
    # Server to client, the last message of a session rgpud ends itself (an
    # operator's rgpu session end, a limit, a protocol violation): why, at
    # most 512 bytes, for the client's stderr. The connection closes next.
    sessionEnded @11 :Text;
  }
}

struct Hello {
  protocolVersion @0 :UInt32;
  clientBuild @1 :Text;     # rgpu version of the client library
  authToken @2 :Text;       # unused since protocol 2: a token never travels
  pid @3 :UInt32;
  hostname @4 :Text;
  program @5 :Text;         # argv[0] of the client, for logs
  tenant @6 :Text;          # who the client is; names the key it proves (empty: "default")
  clientNonce @7 :Data;     # 32 random bytes, bound into both proofs
  # Since protocol 3: the range of versions the client speaks (protocolVersion
  # is then its newest), its feature bits, and what it asks for.
  minProtocolVersion @8 :UInt32;
  features @9 :UInt64;
  request @10 :Resources;
  # The client insists on per-message integrity (RGPU_INTEGRITY=on): it
  # refuses a challenge that does not turn it on.
  integrity @11 :Bool;
  # An operator's request instead of a session (none: a session). The
  # proofs are then made with the server's admin key (rgpud
  # --admin-key-file) for the identity auth::kAdminIdentity, and the welcome
  # carries the answer (`Welcome.admin`); the connection holds no session
  # and ends there (docs/operations.md, "Sessions").
  admin @12 :AdminRequest;
}

struct AdminRequest {
  union {
    none @0 :Void;
    listSessions @1 :Void;
    endSession @2 :UInt64;  # the session's id: ended, its device resources freed
  }
}

# One session as an operator sees it.
struct SessionSummary {
  id @0 :UInt64;
  tenant @1 :Text;
  hostname @2 :Text;        # as the client's hello stated it
  program @3 :Text;
  pid @4 :UInt32;
  devices @5 :List(UInt32); # the server's ordinals of the session's devices
  memoryBytes @6 :UInt64;   # device memory it holds, all devices together
  ageMs @7 :UInt64;         # since it was welcomed
  calls @8 :UInt64;         # calls it has made
  lease @9 :UInt64;         # the pool lease it runs on (0: none)
}

struct AdminReply {
  # listSessions: every session, by id; endSession: the one ended.
  sessions @0 :List(SessionSummary);
}

struct Challenge {
  serverNonce @0 :Data;     # 32 random bytes, fresh for each connection
  # Every message after the client's proof, the welcome first, is sealed
  # (transport/sealed.h) under keys derived from the key and both nonces.
  integrity @1 :Bool;
}

struct Authenticate {
  proof @0 :Data;           # HMAC-SHA256(key, "rgpu-client-v1", tenant, clientNonce, serverNonce)
}

struct Welcome {
  accepted @0 :Bool;
  refusal @1 :Text;         # why, when not accepted
  protocolVersion @2 :UInt32;
  serverBuild @3 :Text;
  sessionId @4 :UInt64;
  driverVersion @5 :Int32;  # cuDriverGetVersion on the server
  devices @6 :List(DeviceInfo);
  # The server's advice: split synchronous copies of at least twice this many
  # bytes into pieces of this size, so that the network and the device copy
  # overlap; 0 when that does not pay (the server moves the bytes directly).
  copyPipelineChunk @7 :UInt64;
  # HMAC-SHA256(key, "rgpu-server-v1", tenant, clientNonce, serverNonce) when
  # the session was authenticated; empty otherwise.
  serverProof @8 :Data;
  tenant @9 :Text;          # the identity the session runs as
  # Since protocol 3: protocolVersion is the version the session runs at; the
  # server's own range and features, and what the session was granted.
  minProtocolVersion @10 :UInt32;
  maxProtocolVersion @11 :UInt32;
  features @12 :UInt64;     # the features both sides have
  granted @13 :Resources;
  # The answer to an operator's request (Hello.admin); unset otherwise.
  admin @14 :AdminReply;
}

struct DeviceInfo {
  name @0 :Text;
  uuid @1 :Data;            # 16 bytes
  totalMem @2 :UInt64;
  # attributes[i] is cuDeviceGetAttribute(i); attributeMissing marks those the
  # device does not answer (the client returns CUDA_ERROR_INVALID_VALUE).
  attributes @3 :List(Int32);
  attributeMissing @4 :List(Bool);
  # The device runs PTX only (rgpu's CPU device): a client sends it the PTX
  # of a fatbin, never a cubin. False for a GPU, which takes its cubin.
  ptxOnly @5 :Bool;
}

struct Batch {
  calls @0 :List(CallBox);
}

# One indirection so that calls built as orphans can be adopted without a copy.
struct CallBox {
  call @0 :Call;
}

struct Call {
  id @0 :UInt64;            # client-wide sequence number
  ctx @1 :UInt64;           # the client context current on the calling thread (0: none)
  payloadBytes @2 :UInt64;  # bytes of the transport payload that belong to this call
  union {
    ctxCreate @3 :CtxCreate;             # async
    ctxDestroy @4 :Handle;               # sync
    ctxSynchronize @5 :Void;             # sync
    primaryCtxRetain @6 :PrimaryCtx;     # async
    primaryCtxRelease @7 :PrimaryCtx;    # async
    primaryCtxReset @8 :PrimaryCtx;      # sync
    memAlloc @9 :UInt64;                 # sync: bytes
    memFree @10 :UInt64;                 # sync: device pointer
    memGetInfo @11 :Void;                # retired: now the generated cuMemGetInfo_v2
    memcpyHtoD @12 :CopyIn;              # sync (stream 0) or async
    memcpyDtoH @13 :CopyOut;             # sync (stream 0) or async
    memcpyDtoD @14 :CopyDevice;          # sync or async
    memset @15 :Memset;                  # sync or async
    streamCreate @16 :StreamCreate;      # retired: the generated cuStreamCreateWithPriority
    streamDestroy @17 :Handle;           # retired: the generated cuStreamDestroy_v2
    streamSynchronize @18 :Handle;       # sync
    streamQuery @19 :Handle;             # retired: the generated cuStreamQuery
    streamWaitEvent @20 :StreamWaitEvent;  # async
    eventCreate @21 :EventCreate;        # retired: the generated cuEventCreate
    eventRecord @22 :EventRecord;        # retired: the generated cuEventRecord
    eventSynchronize @23 :Handle;        # sync
    eventQuery @24 :Handle;              # retired: the generated cuEventQuery
    eventElapsedTime @25 :EventPair;     # retired: the generated cuEventElapsedTime_v2
    eventDestroy @26 :Handle;            # retired: the generated cuEventDestroy_v2
    memGetAddressRange @27 :UInt64;      # retired: now the generated cuMemGetAddressRange_v2
    moduleLoad @28 :ModuleLoad;          # sync
    moduleUnload @29 :Handle;            # async
    moduleGetFunction @30 :GetFunction;  # async: the client already checked the name
    moduleGetGlobal @31 :GetGlobal;      # sync
    launchKernel @32 :Launch;            # async
    funcGetAttributes @33 :Handle;       # sync: every attribute at once, then the launch refusal; cached by the client
    funcSetAttribute @34 :FuncAttribute; # async
    launchHostFunc @35 :HostFunc;        # async: the function runs on the client
    invoke @36 :Invoke;                  # a generated call: sync or async as wantsReply says
    graph @38 :GraphCall;                # sync: stream capture, graphs, virtual memory
  }
  # Whether the client waits for a Reply with this id. A call the server
  # cannot run that wants one is answered "not supported" at once.
  wantsReply @37 :Bool;

  struct Handle { handle @0 :UInt64; }
  struct CtxCreate { handle @0 :UInt64; flags @1 :UInt32; device @2 :Int32; }
  struct PrimaryCtx { handle @0 :UInt64; device @1 :Int32; flags @2 :UInt32; }
  struct CopyIn {
    dst @0 :UInt64;
    size @1 :UInt64;
    stream @2 :UInt64;
    async @3 :Bool;
    bytes @4 :Data;        # the bytes, when small; else they are the payload
  }
  struct CopyOut {
    src @0 :UInt64;
    size @1 :UInt64;
    stream @2 :UInt64;
    async @3 :Bool;         # async: answered by a CopyDone message with this call's id
  }
  struct CopyDevice { dst @0 :UInt64; src @1 :UInt64; size @2 :UInt64; stream @3 :UInt64; async @4 :Bool; }
  struct Memset {
    dst @0 :UInt64;
    value @1 :UInt32;
    elementSize @2 :UInt8;  # 1, 2 or 4
    count @3 :UInt64;       # elements
    stream @4 :UInt64;
    async @5 :Bool;
  }
  struct StreamCreate { handle @0 :UInt64; flags @1 :UInt32; priority @2 :Int32; }
  struct StreamWaitEvent { stream @0 :UInt64; event @1 :UInt64; flags @2 :UInt32; }
  struct EventCreate { handle @0 :UInt64; flags @1 :UInt32; }
  struct EventRecord { event @0 :UInt64; stream @1 :UInt64; }
  struct EventPair { start @0 :UInt64; end @1 :UInt64; }
  # A module is named by the SHA-256 of its image. The client first sends
  # only the hash; a server that has no image for it answers needImage and
  # the client sends the image (inline when small, else as the payload).
  struct ModuleLoad {
    handle @0 :UInt64;
    hash @1 :Data;
    image @2 :Data;
    imageBytes @3 :UInt64;  # 0: load from the server's cache by hash
  }
  struct GetFunction { module @0 :UInt64; handle @1 :UInt64; name @2 :Text; }
  struct GetGlobal { module @0 :UInt64; name @1 :Text; }
  struct Launch {
    function @0 :UInt64;
    gridX @1 :UInt32;
    gridY @2 :UInt32;
    gridZ @3 :UInt32;
    blockX @4 :UInt32;
    blockY @5 :UInt32;
    blockZ @6 :UInt32;
    sharedMem @7 :UInt32;
    stream @8 :UInt64;
    params @9 :Data;        # the parameter buffer, laid out as the kernel declares
  }
  struct FuncAttribute { function @0 :UInt64; attribute @1 :Int32; value @2 :Int32; }
  struct HostFunc { stream @0 :UInt64; id @1 :UInt64; }
  # The generic call record of a generated call.
  # Stream capture, graphs and virtual memory management (docs/protocol.md):
  # `op` is a GraphOp's value, `args` its arguments in the order the client
  # and rgpud's session_graphs.cpp agree on; results come back in values.
  # Graph, executable graph and memory handles are the server's own values,
  # checked against the session's tables before use, like device pointers.
  struct GraphCall {
    op @0 :UInt16;
    args @1 :List(UInt64);
  }

  struct Invoke {
    api @0 :Api;
    function @1 :UInt32;    # the function's ordinal in its API's lock file
    args @2 :Data;          # the arguments, packed as the description lays them out
  }
}

struct Reply {
  id @0 :UInt64;            # the sync call answered
  result @1 :UInt32;        # CUresult of that call
  # The first error of an earlier async call since the last reply, if any
  # (CUDA_SUCCESS otherwise), with the id of the call that caused it.
  asyncError @2 :UInt32;
  asyncErrorCall @3 :UInt64;
  values @4 :List(UInt64);  # call-specific results (pointer, free/total, ...)
  elapsedMs @5 :Float32;  # retired: cuEventElapsedTime is generated
  bytes @6 :Data;          # small device-to-host data
  payloadBytes @7 :UInt64;  # bytes of the transport payload (large data)
  message @8 :Text;         # a detail of a refused argument, for the client's debug log
  needImage @9 :Bool;       # moduleLoad: send the image, the server lacks it
  # The API whose status code `result` is (driver: CUresult, which is also
  # what session-level refusals use). A generated call's out-arguments, packed
  # as its description lays them out, ride in `bytes`.
  api @10 :Api;
  asyncErrorApi @11 :Api;   # the API whose code asyncError is
  # Why `result` and `asyncError` failed, when the server knows (a kernel the
  # device cannot run or that faulted, a quota, a limit, a call it does not
  # implement): "call: detail", the server's own text, at most 512 bytes of
  # printable ASCII (anything it quotes from the client's module, such as a
  # kernel's name, is cut and filtered to that). The client prints each
  # distinct reason once on its stderr (docs/protocol.md, "Reasons"). A
  # successful funcGetAttributes carries the reason its function's launches
  # are refused, if they are.
  reason @12 :Text;
  asyncErrorReason @13 :Text;
}

# A host function's turn in its stream (server to client): the client runs it
# and answers HostFuncDone; the stream waits until then. A host step of a
# captured graph (GraphOp kCaptureHostStep) uses the same pair at each replay:
# a copy to the client's memory brings its bytes in HostFuncCall, a copy from
# it takes them back in HostFuncDone.
struct HostFuncCall { id @0 :UInt64; bytes @1 :Data; }
struct HostFuncDone { id @0 :UInt64; bytes @1 :Data; }

# The completion of an async device-to-host copy.
struct CopyDone {
  id @0 :UInt64;            # the CopyOut call
  result @1 :UInt32;
  bytes @2 :Data;
  payloadBytes @3 :UInt64;
}
