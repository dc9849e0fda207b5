// Json: what a command prints with --json, built as a tree of values and written by Cap'n
// Proto's JsonCodec (through capnp::JsonValue): quoting, escaping and numbers are the library's.
// The keys and the shape are the ones docs/configuration.md documents for each command; keys
// keep the order they were set in.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mqd::client::cli {

class Json {
 public:
  static Json object() { return Json(Kind::Object); }
  static Json array() { return Json(Kind::Array); }
  Json(const std::string& text) : kind_(Kind::String), text_(text) {}  // NOLINT: a value
  Json(const char* text) : kind_(Kind::String), text_(text) {}         // NOLINT
  Json(bool value) : kind_(Kind::Boolean), boolean_(value) {}          // NOLINT
  // Every number is a JSON number (a double: exact up to 2^53, which no count reaches).
  Json(double value) : kind_(Kind::Number), number_(value) {}  // NOLINT
  Json(int value) : Json(static_cast<double>(value)) {}        // NOLINT
  Json(unsigned value) : Json(static_cast<double>(value)) {}   // NOLINT
  Json(int64_t value) : Json(static_cast<double>(value)) {}    // NOLINT
  Json(uint64_t value) : Json(static_cast<double>(value)) {}   // NOLINT

  // An object's member (set in order); an array's next element.
  Json& set(const std::string& key, Json value);
  Json& push(Json value);

  // The document, on one line, with a newline after it.
  std::string encode() const;

 private:
  enum class Kind { String, Boolean, Number, Object, Array };
  explicit Json(Kind kind) : kind_(kind) {}
  friend struct JsonWriter;

  Kind kind_;
  std::string text_;
  bool boolean_ = false;
  double number_ = 0;
  std::vector<std::pair<std::string, Json>> members_;  // Object
  std::vector<Json> elements_;                         // Array
};

}  // namespace mqd::client::cli
