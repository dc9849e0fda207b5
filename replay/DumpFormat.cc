#include "DumpFormat.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

namespace mqd::replay {
namespace {

// ---- strings as Python sees them ----

std::u32string decoded(const std::string& s) { return decodeLikePython(s.data(), s.size()); }

// A char array of the front end's ctypes structs: the bytes up to the first NUL.
std::u32string chars(const char* p, size_t n) {
  return decodeLikePython(p, strnlen(p, n));
}

std::string utf8(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// json.dumps's string, with ensure_ascii (the default).
std::string jsonString(const std::u32string& s) {
  std::string out = "\"";
  char buf[16];
  for (char32_t c : s) {
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c >= ' ' && c <= '~') {
      out += static_cast<char>(c);
    } else if (c < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      uint32_t v = static_cast<uint32_t>(c) - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      out += buf;
    }
  }
  return out + "\"";
}

// ---- a JSON value, written the way json.dumps(value, indent=1) writes it ----

class Json {
 public:
  static Json null() { return Json(Kind::Null); }
  static Json boolean(bool b) {
    Json j(Kind::Scalar);
    j.scalar_ = b ? "true" : "false";
    return j;
  }
  static Json integer(int64_t v) {
    Json j(Kind::Scalar);
    j.scalar_ = std::to_string(v);
    return j;
  }
  static Json unsignedInteger(uint64_t v) {
    Json j(Kind::Scalar);
    j.scalar_ = std::to_string(v);
    return j;
  }
  static Json string(const std::u32string& s) {
    Json j(Kind::Scalar);
    j.scalar_ = jsonString(s);
    return j;
  }
  static Json list() { return Json(Kind::List); }
  static Json object() { return Json(Kind::Object); }

  Json& add(Json value) {
    items_.emplace_back("", std::move(value));
    return *this;
  }
  Json& add(const char* key, Json value) {
    items_.emplace_back(key, std::move(value));
    return *this;
  }

  void write(std::string& out, int level) const {
    switch (kind_) {
      case Kind::Null: out += "null"; return;
      case Kind::Scalar: out += scalar_; return;
      case Kind::List:
      case Kind::Object: break;
    }
    bool object = kind_ == Kind::Object;
    if (items_.empty()) {
      out += object ? "{}" : "[]";
      return;
    }
    out += object ? "{" : "[";
    for (size_t i = 0; i < items_.size(); ++i) {
      out += i ? ",\n" : "\n";
      out.append(static_cast<size_t>(level + 1), ' ');
      if (object) out += jsonString(std::u32string(items_[i].first.begin(),
                                                   items_[i].first.end())) + ": ";
      items_[i].second.write(out, level + 1);
    }
    out += "\n";
    out.append(static_cast<size_t>(level), ' ');
    out += object ? "}" : "]";
  }

 private:
  enum class Kind { Null, Scalar, List, Object };
  explicit Json(Kind kind) : kind_(kind) {}

  Kind kind_;
  std::string scalar_;
  std::vector<std::pair<std::string, Json>> items_;
};

// The front end's STATUS names, else the number.
Json status(int s) {
  static const char32_t* names[] = {U"pending", U"matched", U"complete"};
  if (s >= 0 && s <= 2) return Json::string(names[s]);
  return Json::integer(s);
}

Json operationJson(const mqs_pending_operation& op) {
  Json extra = Json::list();
  for (const auto& line : op.extra_text) extra.add(Json::string(chars(line, sizeof line)));
  Json o = Json::object();
  o.add("status", status(op.status))
      .add("desired_local_rank", Json::integer(op.desired_local_rank))
      .add("desired_global_rank", Json::integer(op.desired_global_rank))
      .add("tag_wild", Json::boolean(op.tag_wild != 0))
      .add("desired_tag", Json::integer(op.desired_tag))
      .add("desired_length", Json::integer(op.desired_length))
      .add("system_buffer", Json::boolean(op.system_buffer != 0))
      .add("buffer", Json::unsignedInteger(op.buffer))
      .add("actual_local_rank", Json::integer(op.actual_local_rank))
      .add("actual_global_rank", Json::integer(op.actual_global_rank))
      .add("actual_tag", Json::integer(op.actual_tag))
      .add("actual_length", Json::integer(op.actual_length))
      .add("extra_text", std::move(extra));
  return o;
}

Json queueJson(const QueueView& q) {
  Json o = Json::object();
  Json ops = Json::list();
  for (const auto& op : q.operations) ops.add(operationJson(op));
  if (q.setupFailed) {
    o.add("rc", Json::integer(q.rc)).add("error", Json::string(decoded(q.error)));
    o.add("operations", std::move(ops));
    return o;
  }
  o.add("rc", Json::integer(q.rc)).add("operations", std::move(ops));
  if (q.rc != mqs_end_of_list) o.add("error", Json::string(decoded(q.error)));
  return o;
}

Json processJson(const ProcessView& p) {
  Json o = Json::object();
  o.add("inferior", Json::integer(p.inferior)).add("pid", Json::integer(p.pid));
  if (p.failed) {
    o.add("error", Json::string(decoded(p.error)));
    return o;
  }
  o.add("rank", Json::integer(p.rank));
  if (!p.host.empty()) o.add("host", Json::string(decoded(p.host)));
  o.add("dll", Json::string(decoded(p.dll)));
  Json communicators = Json::list();
  for (const CommunicatorView& c : p.communicators) {
    Json group = Json::null();
    if (c.group == CommunicatorView::Group::Ranks) {
      group = Json::list();
      for (int r : c.ranks) group.add(Json::integer(r));
    } else if (c.group == CommunicatorView::Group::Error) {
      group = Json::object();
      group.add("error", Json::string(decoded(c.groupError))).add("rc", Json::integer(c.groupRc));
    }
    Json queues = Json::object();
    queues.add("sends", queueJson(c.queues[0]))
        .add("receives", queueJson(c.queues[1]))
        .add("unexpected", queueJson(c.queues[2]));
    Json entry = Json::object();
    entry.add("unique_id", Json::unsignedInteger(c.communicator.unique_id))
        .add("name", Json::string(chars(c.communicator.name, sizeof c.communicator.name)))
        .add("local_rank", Json::integer(c.communicator.local_rank))
        .add("size", Json::integer(c.communicator.size))
        .add("group", std::move(group))
        .add("queues", std::move(queues));
    communicators.add(std::move(entry));
  }
  o.add("communicators", std::move(communicators));
  if (!p.error.empty()) o.add("error", Json::string(decoded(p.error)));
  return o;
}

// ---- text, as the front end's render() ----

std::string format(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* f, ...) {
  va_list args;
  va_start(args, f);
  va_list again;
  va_copy(again, args);
  int n = std::vsnprintf(nullptr, 0, f, args);
  va_end(args);
  std::string out(static_cast<size_t>(n > 0 ? n : 0), '\0');
  std::vsnprintf(out.data(), out.size() + 1, f, again);
  va_end(again);
  return out;
}

// The front end's rules (frontends/gdb/mqd_gdb/render.py): lengths as the DLL gives them, a
// global rank of -1 unknown.
std::string peer(int64_t local, int64_t world) {
  if (local == -1 || local == 4294967295LL) return format("any source (%" PRId64 ")", local);
  if (world == -1) return format("rank %" PRId64 " (world ?)", local);
  return format("rank %" PRId64 " (world %" PRId64 ")", local, world);
}

std::string statusText(int s) {
  static const char* names[] = {"pending", "matched", "complete"};
  return s >= 0 && s <= 2 ? names[s] : std::to_string(s);
}

std::string render(const ProcessView& p) {
  std::vector<std::string> lines;
  std::string on = p.host.empty() ? std::string() : " on " + utf8(decoded(p.host));
  lines.push_back(format("Inferior %d: process %" PRId64, p.inferior, p.pid) + on +
                  format(", MPI_COMM_WORLD rank %" PRId64, p.rank));
  lines.push_back("  DLL: " + utf8(decoded(p.dll)));
  static const char* titles[] = {"Pending sends", "Pending receives", "Unexpected messages"};
  for (const CommunicatorView& c : p.communicators) {
    lines.push_back("  Communicator \"" +
                    utf8(chars(c.communicator.name, sizeof c.communicator.name)) +
                    format("\" (id %" PRIu64 "): local rank %" PRId64 " of %" PRId64,
                           static_cast<uint64_t>(c.communicator.unique_id),
                           static_cast<int64_t>(c.communicator.local_rank),
                           static_cast<int64_t>(c.communicator.size)));
    if (c.group == CommunicatorView::Group::Ranks) {
      std::string line = "    group (local -> world):";
      for (size_t i = 0; i < c.ranks.size(); ++i) line += format(" %zu->%d", i, c.ranks[i]);
      if (c.ranks.empty()) line += " ";
      lines.push_back(line);
    } else if (c.group == CommunicatorView::Group::Error) {
      lines.push_back("    group: " + utf8(decoded(c.groupError)) + format(" (%d)", c.groupRc));
    }
    for (int opClass = 0; opClass < 3; ++opClass) {
      const QueueView& q = c.queues[opClass];
      const char* title = titles[opClass];
      std::string error = utf8(decoded(q.error));
      bool hasError = q.setupFailed || q.rc != mqs_end_of_list;
      if (q.rc == mqs_no_information && q.operations.empty()) {
        lines.push_back(format("    %s: no information from the DLL", title));
        continue;
      }
      if (hasError && !error.empty() && q.operations.empty()) {
        lines.push_back(format("    %s: ", title) + error + format(" (%d)", q.rc));
        continue;
      }
      lines.push_back(format("    %s: %zu", title, q.operations.size()));
      for (size_t i = 0; i < q.operations.size(); ++i) {
        const mqs_pending_operation& op = q.operations[i];
        std::string tag = op.tag_wild ? std::string("any tag")
                                      : format("tag %" PRId64, static_cast<int64_t>(op.desired_tag));
        lines.push_back(format("      #%zu [", i) + statusText(op.status) + "] " +
                        (opClass == 0 ? "to " : "from ") +
                        peer(op.desired_local_rank, op.desired_global_rank) + ", " + tag +
                        format(", length %" PRId64 ", buffer 0x%" PRIx64 "%s",
                               static_cast<int64_t>(op.desired_length),
                               static_cast<uint64_t>(op.buffer),
                               op.system_buffer ? ", system buffer" : ""));
        if (opClass == 0 || op.status != mqs_st_pending) {
          lines.push_back("         actual: " + peer(op.actual_local_rank, op.actual_global_rank) +
                          format(", tag %" PRId64 ", length %" PRId64,
                                 static_cast<int64_t>(op.actual_tag),
                                 static_cast<int64_t>(op.actual_length)));
        }
        for (const auto& line : op.extra_text) {
          std::string text = utf8(chars(line, sizeof line));
          if (!text.empty()) lines.push_back("         | " + text);
        }
      }
      if (hasError && !error.empty()) {
        lines.push_back("      (stopped: " + error + format(" (%d))", q.rc));
      }
    }
  }
  if (!p.error.empty()) lines.push_back("  (stopped: " + utf8(decoded(p.error)) + ")");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

}  // namespace

std::u32string decodeLikePython(const char* bytes, size_t size) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes);
  std::u32string out;
  size_t i = 0;
  while (i < size) {
    unsigned char b = s[i];
    if (b < 0x80) {
      out += static_cast<char32_t>(b);
      ++i;
      continue;
    }
    // The sequence's length and the range its second byte must fall in (Unicode table 3-7).
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    char32_t value;
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1;
      value = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2;
      value = b & 0x0F;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3;
      value = b & 0x07;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      out += U'\uFFFD';  // not a start byte
      ++i;
      continue;
    }
    size_t j = 1;
    for (; j <= need && i + j < size; ++j) {
      unsigned char c = s[i + j];
      unsigned char l = j == 1 ? lo : 0x80, h = j == 1 ? hi : 0xBF;
      if (c < l || c > h) break;
      value = (value << 6) | (c & 0x3F);
    }
    if (j == need + 1) {
      out += value;
      i += j;
    } else {
      out += U'\uFFFD';  // the maximal valid prefix is replaced as one
      i += j;
    }
  }
  return out;
}

std::string dumpJson(const std::vector<ProcessView>& processes) {
  Json all = Json::list();
  for (const ProcessView& p : processes) all.add(processJson(p));
  std::string out;
  all.write(out, 0);
  return out + "\n";
}

std::string dumpText(const std::vector<ProcessView>& processes) {
  std::string out;
  for (const ProcessView& p : processes) {
    if (p.failed) {
      out += format("Inferior %d: process %" PRId64 ": ", p.inferior, p.pid) +
             utf8(decoded(p.error)) + "\n";
    } else {
      out += render(p) + "\n";
    }
  }
  return out;
}

}  // namespace mqd::replay
