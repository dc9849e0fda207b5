#include "Handshake.h"

#include <algorithm>
#include <cstring>

#include "ProxyErrors.h"

namespace mqd {

std::string encodeHello(const std::string& token) {
  size_t n = token.size() < kMaxTokenBytes ? token.size() : kMaxTokenBytes;
  std::string out(kHandshakeMagic, sizeof kHandshakeMagic);
  out.push_back(static_cast<char>(kHandshakeVersion));
  out.push_back(0);
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(token, 0, n);
  return out;
}

std::string acceptLine() { return "OK\n"; }

std::string refusalLine(int code, const std::string& reason) {
  const char* name = proxyErrorName(code);
  std::string line = std::string(kRefusalPrefix) + (name ? name : "MQD_PROXY_ERR_SESSION_REFUSED") +
                     ": ";
  for (char c : reason) line.push_back(c == '\n' || c == '\r' ? ' ' : c);
  if (line.size() > kMaxReplyBytes - 1) line.resize(kMaxReplyBytes - 1);
  return line + "\n";
}

HandshakeReply parseReply(const std::string& raw) {
  std::string line = raw;
  if (!line.empty() && line.back() == '\n') line.pop_back();
  HandshakeReply r;
  if (line == "OK") {
    r.ok = true;
    return r;
  }
  if (line.rfind(kRefusalPrefix, 0) == 0) {
    std::string rest = line.substr(std::strlen(kRefusalPrefix));
    size_t colon = rest.find(": ");
    std::string name = colon == std::string::npos ? rest : rest.substr(0, colon);
    r.code = MQD_PROXY_ERR_SESSION_REFUSED;
    for (int code = MQD_PROXY_ERR_FIRST + 1; code <= MQD_PROXY_ERR_LAST; ++code) {
      if (name == proxyErrorName(code)) r.code = code;
    }
    r.reason = colon == std::string::npos ? rest : rest.substr(colon + 2);
    return r;
  }
  r.code = MQD_PROXY_ERR_PROTOCOL;
  std::string shown;
  for (char c : line.substr(0, 40)) shown.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  r.reason = "the server answered the handshake with \"" + shown +
             "\" (is it an mqd-proxy-server of this version?)";
  return r;
}

bool isRefusalStart(const std::string& bytes) {
  size_t n = bytes.size() < std::strlen(kRefusalPrefix) ? bytes.size() : std::strlen(kRefusalPrefix);
  return n > 0 && bytes.compare(0, n, kRefusalPrefix, n) == 0;
}

kj::Promise<std::string> readReplyLine(kj::AsyncInputStream& stream, std::string already) {
  if ((!already.empty() && already.back() == '\n') || already.size() >= kMaxReplyBytes) {
    if (!already.empty() && already.back() == '\n') already.pop_back();
    return kj::mv(already);
  }
  auto byte = kj::heapArray<kj::byte>(1);
  auto read = stream.tryRead(byte.begin(), 1, 1);
  return read.then([&stream, already = kj::mv(already), byte = kj::mv(byte)](
                       size_t n) mutable -> kj::Promise<std::string> {
    if (n == 0) return kj::mv(already);
    already.push_back(static_cast<char>(byte[0]));
    return readReplyLine(stream, kj::mv(already));
  });
}

kj::Promise<void> sendHello(kj::AsyncIoStream& stream, const std::string& token) {
  // The hello may contain NUL bytes (its flags, a short length): write it as bytes.
  std::string bytes = encodeHello(token);
  auto buffer = kj::heapArray<kj::byte>(bytes.size());
  std::memcpy(buffer.begin(), bytes.data(), bytes.size());
  std::fill(bytes.begin(), bytes.end(), '\0');
  auto write = stream.write(buffer.begin(), buffer.size());
  return write.attach(kj::mv(buffer));
}

kj::Promise<HandshakeReply> readReply(kj::AsyncInputStream& stream) {
  return readReplyLine(stream).then([](std::string line) {
    if (line.empty()) {
      HandshakeReply r;
      r.code = MQD_PROXY_ERR_SESSION_REFUSED;
      r.reason = "the server closed the connection during the handshake";
      r.closed = true;
      return r;
    }
    return parseReply(line);
  });
}

kj::Promise<HandshakeReply> clientHandshake(kj::AsyncIoStream& stream, const std::string& token) {
  return sendHello(stream, token).then([&stream]() { return readReply(stream); });
}

kj::Promise<Hello> readHello(kj::AsyncInputStream& stream) {
  auto header = kj::heapArray<kj::byte>(kHelloHeaderBytes);
  auto read = stream.read(header.begin(), header.size());
  return read.then([&stream, header = kj::mv(header)]() mutable -> kj::Promise<Hello> {
    Hello h;
    if (std::memcmp(header.begin(), kHandshakeMagic, sizeof kHandshakeMagic) != 0) {
      h.code = header[0] == kTlsHandshakeRecord ? MQD_PROXY_ERR_TLS : MQD_PROXY_ERR_PROTOCOL;
      h.problem = header[0] == kTlsHandshakeRecord
                      ? "the client speaks TLS but this server does not use TLS on this "
                        "listener (use tcp:, not tls:)"
                      : "the client did not start with the mqd-proxy handshake (an older "
                        "mqd-proxy, or not mqd-proxy at all)";
      return kj::mv(h);
    }
    if (header[4] != kHandshakeVersion) {
      h.code = MQD_PROXY_ERR_SESSION_REFUSED;
      h.problem = "handshake version " + std::to_string(header[4]) + ", this server speaks " +
                  std::to_string(kHandshakeVersion) + " (use the same mqd-proxy release)";
      return kj::mv(h);
    }
    size_t length = (size_t(header[6]) << 8) | header[7];
    if (length > kMaxTokenBytes) {
      h.code = MQD_PROXY_ERR_PROTOCOL;
      h.problem = "a token of " + std::to_string(length) + " bytes (at most " +
                  std::to_string(kMaxTokenBytes) + ")";
      return kj::mv(h);
    }
    if (length == 0) {
      h.valid = true;  // no token (and no zero-byte read: through TLS one would wait for data)
      return kj::mv(h);
    }
    auto token = kj::heapArray<kj::byte>(length);
    auto body = stream.read(token.begin(), length);
    return body.then([token = kj::mv(token)]() {
      Hello done;
      done.valid = true;
      done.token.assign(reinterpret_cast<const char*>(token.begin()), token.size());
      return done;
    });
  });
}

}  // namespace mqd
