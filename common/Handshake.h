// Handshake: what a client and a server exchange on a new connection before any Cap'n Proto
// traffic (inside TLS when the endpoint is tls:...). It carries the client's token and lets the
// server refuse a connection with a reason the client can show, before any session exists.
//
//   client -> server  hello   "MQDP", version (1 byte, kHandshakeVersion), flags (1 byte, 0),
//                             token length (2 bytes, big-endian, 0..kMaxTokenBytes), token
//   server -> client  reply   one line of text of at most kMaxReplyBytes, '\n' included:
//                               "OK\n"                               RPC starts right after it
//                               "REFUSED MQD_PROXY_ERR_<NAME>: <reason>\n"   then the server
//                                                                    closes the connection
//
// The server reads exactly the hello and nothing past it before it answers, and a server that
// refuses reads and drops what the client still sends until it closes (so that its line is
// not lost to a TCP reset): a client may send its first RPC messages right behind the hello,
// without waiting for OK, and read the reply line before any RPC byte (the shim's session
// open does: one round trip, not two).
//
// A server may send a REFUSED line before reading the hello (too many sessions, TLS required):
// the line is then in plain text even on a TLS listener, and a client whose TLS handshake
// fails checks whether the server's first bytes were such a line (see isRefusalStart).
#pragma once

#include <kj/async-io.h>

#include <cstdint>
#include <string>

namespace mqd {

constexpr char kHandshakeMagic[4] = {'M', 'Q', 'D', 'P'};
constexpr uint8_t kHandshakeVersion = 1;
constexpr size_t kHelloHeaderBytes = 8;
constexpr size_t kMaxTokenBytes = 1024;
constexpr size_t kMaxReplyBytes = 512;
constexpr uint8_t kTlsHandshakeRecord = 0x16;  // the first byte of every TLS ClientHello
constexpr char kRefusalPrefix[] = "REFUSED ";

// The server's answer, parsed.
struct HandshakeReply {
  bool ok = false;
  int code = 0;        // a MQD_PROXY_ERR_* code when !ok
  std::string reason;  // the server's sentence when !ok
  bool closed = false;  // no reply at all: the connection ended first
};

// The client's hello, as bytes to write.
std::string encodeHello(const std::string& token);

// Reply lines. The reason is flattened to one line and cut to fit kMaxReplyBytes.
std::string acceptLine();
std::string refusalLine(int code, const std::string& reason);

// Parses a reply line (with or without its '\n'). Anything that is neither form yields
// !ok with MQD_PROXY_ERR_PROTOCOL and a reason quoting the start of the line.
HandshakeReply parseReply(const std::string& line);

// Whether `bytes` (a prefix of what a server sent first) can be the start of a REFUSED line.
bool isRefusalStart(const std::string& bytes);

// Client side: writes the hello, then reads and parses the reply (sendHello, readReply).
kj::Promise<HandshakeReply> clientHandshake(kj::AsyncIoStream& stream, const std::string& token);

// Client side, in two steps (a client may send RPC right behind the hello: the server reads
// the hello alone, answers, and only then reads on; see AdmissionFirst): writes the hello ...
kj::Promise<void> sendHello(kj::AsyncIoStream& stream, const std::string& token);
// ... and reads and parses the reply line. A connection closed before a full line yields !ok
// with MQD_PROXY_ERR_SESSION_REFUSED and `closed`.
kj::Promise<HandshakeReply> readReply(kj::AsyncInputStream& stream);

// Reads one reply line (up to '\n', EOF or kMaxReplyBytes) starting with `already` (bytes read
// before); resolves to the line without its '\n'.
kj::Promise<std::string> readReplyLine(kj::AsyncInputStream& stream, std::string already = "");

// Server side: the hello as read, or why it is not one.
struct Hello {
  bool valid = false;
  std::string token;
  std::string problem;  // when !valid: a sentence for the log and the refusal
  int code = 0;         // when !valid: the MQD_PROXY_ERR_* code to refuse with
};

// Reads exactly one hello from `stream` (never more bytes than it holds). Never throws for
// malformed input: `valid` is false and `problem` says what arrived instead; a stream that
// ends early rejects the promise (the peer is gone, there is nobody to answer).
kj::Promise<Hello> readHello(kj::AsyncInputStream& stream);

}  // namespace mqd
