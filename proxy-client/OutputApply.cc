#include "OutputApply.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "ProxyErrors.h"
#include "WriteTracking.h"

namespace mqd::client {

template <typename Address>
Address narrowAddressAs(uint64_t value, const char* what) {
  if (value > std::numeric_limits<Address>::max()) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(value));
    throw ProxyError(MQD_PROXY_ERR_ADDRESS_WIDTH,
                     std::string(what) + " " + hex + " does not fit in this debugger's " +
                         std::to_string(sizeof(Address) * 8) +
                         "-bit mqs_taddr_t; use a shim built with MQD_TADDR64=ON");
  }
  return static_cast<Address>(value);
}

template <typename Word>
Word narrowWordAs(int64_t value) {
  // Two's-complement wrap-around, spelled out so it is defined behaviour everywhere.
  using Unsigned = std::make_unsigned_t<Word>;
  Unsigned bits = static_cast<Unsigned>(static_cast<uint64_t>(value));
  Word out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

template uint32_t narrowAddressAs<uint32_t>(uint64_t, const char*);
template unsigned long narrowAddressAs<unsigned long>(uint64_t, const char*);
template unsigned long long narrowAddressAs<unsigned long long>(uint64_t, const char*);
template int32_t narrowWordAs<int32_t>(int64_t);
template long narrowWordAs<long>(int64_t);
template long long narrowWordAs<long long>(int64_t);

std::string safePrintfFormat(const std::string& text) {
  std::string out;
  bool usedString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '%') {
      out += c;
      continue;
    }
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (next == '%') {
      out += "%%";
      ++i;
    } else if (next == 's' && !usedString) {
      out += "%s";
      usedString = true;
      ++i;
    } else {
      out += "%%";
    }
  }
  return out;
}

void apply(wire::Communicator::Reader in, mqs_communicator& out) {
  // Every check that can refuse the reply first, as for an operation (below).
  using C = wire::Communicator;
  uint8_t w = in.getWritten();
  mqs_taddr_t id =
      (w & C::WRITTEN_UNIQUE_ID) ? narrowAddress(in.getUniqueId(), "communicator id") : 0;
  checkChars(in.getName(), sizeof out.name);

  if (w & C::WRITTEN_UNIQUE_ID) out.unique_id = id;
  if (w & C::WRITTEN_LOCAL_RANK) out.local_rank = narrowWord(in.getLocalRank());
  if (w & C::WRITTEN_SIZE) out.size = narrowWord(in.getSize());
  applyChars(in.getName(), out.name, sizeof out.name);
}

void apply(wire::PendingOperation::Reader in, mqs_pending_operation& out) {
  // Every check that can refuse the reply comes first, so that a refused reply leaves the
  // debugger's struct as it was; then the fields are written in place.
  using P = wire::PendingOperation;
  uint16_t w = in.getWritten();
  auto has = [w](uint16_t bit) { return (w & bit) != 0; };
  mqs_taddr_t buffer =
      has(P::WRITTEN_BUFFER) ? narrowAddress(in.getBuffer(), "buffer address") : 0;
  auto lines = in.getExtraText();
  if (lines.size() > 5) throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "more than 5 extra_text lines");
  for (unsigned i = 0; i < lines.size(); ++i) checkChars(lines[i], sizeof out.extra_text[i]);

  if (has(P::WRITTEN_STATUS)) out.status = in.getStatus();
  if (has(P::WRITTEN_DESIRED_LOCAL_RANK))
    out.desired_local_rank = narrowWord(in.getDesiredLocalRank());
  if (has(P::WRITTEN_DESIRED_GLOBAL_RANK))
    out.desired_global_rank = narrowWord(in.getDesiredGlobalRank());
  if (has(P::WRITTEN_TAG_WILD)) out.tag_wild = in.getTagWild();
  if (has(P::WRITTEN_DESIRED_TAG)) out.desired_tag = narrowWord(in.getDesiredTag());
  if (has(P::WRITTEN_DESIRED_LENGTH)) out.desired_length = narrowWord(in.getDesiredLength());
  if (has(P::WRITTEN_SYSTEM_BUFFER)) out.system_buffer = in.getSystemBuffer();
  if (has(P::WRITTEN_BUFFER)) out.buffer = buffer;
  if (has(P::WRITTEN_ACTUAL_LOCAL_RANK))
    out.actual_local_rank = narrowWord(in.getActualLocalRank());
  if (has(P::WRITTEN_ACTUAL_GLOBAL_RANK))
    out.actual_global_rank = narrowWord(in.getActualGlobalRank());
  if (has(P::WRITTEN_ACTUAL_TAG)) out.actual_tag = narrowWord(in.getActualTag());
  if (has(P::WRITTEN_ACTUAL_LENGTH)) out.actual_length = narrowWord(in.getActualLength());
  for (unsigned i = 0; i < lines.size(); ++i) {
    applyChars(lines[i], out.extra_text[i], sizeof out.extra_text[i]);
  }
}

void apply(wire::ProcessLocation::Reader in, mqs_process_location& out) {
  // Every check that can refuse the reply first, as for an operation (above).
  checkChars(in.getImageName(), sizeof out.image_name);
  checkChars(in.getHostName(), sizeof out.host_name);

  if (in.getWritten() & wire::ProcessLocation::WRITTEN_PID) {
    out.pid = static_cast<long>(narrowWord(in.getPid()));
  }
  applyChars(in.getImageName(), out.image_name, sizeof out.image_name);
  applyChars(in.getHostName(), out.host_name, sizeof out.host_name);
}

void apply(wire::OutInt::Reader in, int* out) {
  if (out != nullptr && in.isValue()) *out = in.getValue();
}

void applyGroup(capnp::List<int32_t>::Reader ranks, capnp::Data::Reader written, int* out,
                size_t limit) {
  if (written.size() * 8 < ranks.size()) {
    throw ProxyError(MQD_PROXY_ERR_PROTOCOL, "comm group reply without written marks");
  }
  if (out == nullptr) return;
  size_t n = ranks.size() < limit ? ranks.size() : limit;
  for (size_t i = 0; i < n; ++i) {
    if ((written[i / 8] >> (i % 8)) & 1u) out[i] = ranks[static_cast<unsigned>(i)];
  }
}

void applyMessage(wire::OutString::Reader in, char** message, StringPool& strings) {
  if (message == nullptr || in.isUntouched()) return;
  if (in.isNull()) {
    *message = nullptr;
  } else {
    *message = strings.intern(safePrintfFormat(in.getText()));
  }
}

}  // namespace mqd::client
