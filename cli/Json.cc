#include "Json.h"

#include <capnp/compat/json.h>
#include <capnp/message.h>

namespace mqd::client::cli {

// Writes a Json tree into a capnp::JsonValue.
struct JsonWriter {
  static void write(const Json& in, capnp::JsonValue::Builder out) {
    switch (in.kind_) {
      case Json::Kind::String: out.setString(in.text_); break;
      case Json::Kind::Boolean: out.setBoolean(in.boolean_); break;
      case Json::Kind::Number: out.setNumber(in.number_); break;
      case Json::Kind::Object: {
        auto fields = out.initObject(static_cast<unsigned>(in.members_.size()));
        for (unsigned i = 0; i < fields.size(); ++i) {
          fields[i].setName(in.members_[i].first);
          write(in.members_[i].second, fields[i].initValue());
        }
        break;
      }
      case Json::Kind::Array: {
        auto elements = out.initArray(static_cast<unsigned>(in.elements_.size()));
        for (unsigned i = 0; i < elements.size(); ++i) write(in.elements_[i], elements[i]);
        break;
      }
    }
  }
};

Json& Json::set(const std::string& key, Json value) {
  members_.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  elements_.push_back(std::move(value));
  return *this;
}

std::string Json::encode() const {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<capnp::JsonValue>();
  JsonWriter::write(*this, root);
  capnp::JsonCodec codec;
  return std::string(codec.encodeRaw(root.asReader()).cStr()) + "\n";
}

}  // namespace mqd::client::cli
