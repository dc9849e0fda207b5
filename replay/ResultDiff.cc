#include "ResultDiff.h"

#include <capnp/dynamic.h>

#include "Bulk.h"
#include "ProxyErrors.h"
#include "mqd.capnp.h"

namespace mqd::replay {
namespace {

constexpr size_t kShownChars = 80;

std::string clip(std::string text) {
  if (text.size() > kShownChars) text = text.substr(0, kShownChars) + "...";
  return text;
}

std::string show(capnp::DynamicValue::Reader v) {
  switch (v.getType()) {
    case capnp::DynamicValue::TEXT: {
      std::string text = v.as<capnp::Text>();
      return "\"" + clip(text) + "\"";
    }
    case capnp::DynamicValue::DATA:
      return std::to_string(v.as<capnp::Data>().size()) + " bytes";
    case capnp::DynamicValue::ENUM: {
      KJ_IF_MAYBE(e, v.as<capnp::DynamicEnum>().getEnumerant()) {
        return std::string(e->getProto().getName().cStr());
      }
      return std::to_string(v.as<capnp::DynamicEnum>().getRaw());
    }
    default:
      return clip(kj::str(v).cStr());
  }
}

std::string differ(const std::string& path, const std::string& recorded,
                   const std::string& replayed) {
  return (path.empty() ? std::string("results") : path) + ": recorded " + recorded +
         ", replayed " + replayed;
}

std::string join(const std::string& path, kj::StringPtr name) {
  return path.empty() ? std::string(name.cStr()) : path + "." + name.cStr();
}

std::string compareStructs(capnp::DynamicStruct::Reader a, capnp::DynamicStruct::Reader b,
                           const std::string& path);

// A field annotated $readAhead (schema/mqd.capnp).
bool readAhead(capnp::StructSchema::Field field) {
  for (auto a : field.getProto().getAnnotations()) {
    if (a.getId() == wire::READ_AHEAD_ANNOTATION_ID) return true;
  }
  return false;
}

// A Bulk compared by its payload; `walk` read as the CommunicatorWalk it carries.
std::string compareBulk(capnp::DynamicStruct::Reader a, capnp::DynamicStruct::Reader b,
                        const std::string& path, bool isWalk) {
  auto ra = a.as<wire::Bulk>();
  auto rb = b.as<wire::Bulk>();
  try {
    if (isWalk && ra.getSize() > 0 && rb.getSize() > 0) {
      BulkMessageReader ma(ra), mb(rb);
      capnp::DynamicStruct::Reader wa = capnp::toDynamic(ma.getRoot<wire::CommunicatorWalk>());
      capnp::DynamicStruct::Reader wb = capnp::toDynamic(mb.getRoot<wire::CommunicatorWalk>());
      return compareStructs(wa, wb, path);
    }
    kj::Array<kj::byte> pa = readBulk(ra);
    kj::Array<kj::byte> pb = readBulk(rb);
    if (pa.size() != pb.size()) {
      return differ(path, std::to_string(pa.size()) + " bytes", std::to_string(pb.size()) +
                    " bytes");
    }
    for (size_t i = 0; i < pa.size(); ++i) {
      if (pa[i] != pb[i]) return path + ": differs at byte " + std::to_string(i);
    }
    return "";
  } catch (const ProxyError& e) {
    return path + ": unreadable (" + e.what() + ")";
  }
}

std::string compareValues(capnp::DynamicValue::Reader a, capnp::DynamicValue::Reader b,
                          const std::string& path, bool isWalk) {
  if (a.getType() != b.getType()) return differ(path, show(a), show(b));
  switch (a.getType()) {
    case capnp::DynamicValue::BOOL:
      return a.as<bool>() == b.as<bool>() ? "" : differ(path, show(a), show(b));
    case capnp::DynamicValue::INT:
      return a.as<int64_t>() == b.as<int64_t>() ? "" : differ(path, show(a), show(b));
    case capnp::DynamicValue::UINT:
      return a.as<uint64_t>() == b.as<uint64_t>() ? "" : differ(path, show(a), show(b));
    case capnp::DynamicValue::FLOAT:
      return a.as<double>() == b.as<double>() ? "" : differ(path, show(a), show(b));
    case capnp::DynamicValue::TEXT:
      return a.as<capnp::Text>() == b.as<capnp::Text>() ? "" : differ(path, show(a), show(b));
    case capnp::DynamicValue::DATA: {
      auto da = a.as<capnp::Data>();
      auto db = b.as<capnp::Data>();
      if (da == db) return "";
      if (da.size() != db.size()) return differ(path, show(a), show(b));
      for (size_t i = 0; i < da.size(); ++i) {
        if (da[i] != db[i]) return path + ": differs at byte " + std::to_string(i);
      }
      return "";
    }
    case capnp::DynamicValue::ENUM:
      return a.as<capnp::DynamicEnum>().getRaw() == b.as<capnp::DynamicEnum>().getRaw()
                 ? ""
                 : differ(path, show(a), show(b));
    case capnp::DynamicValue::LIST: {
      auto la = a.as<capnp::DynamicList>();
      auto lb = b.as<capnp::DynamicList>();
      for (unsigned i = 0; i < la.size() && i < lb.size(); ++i) {
        std::string d = compareValues(la[i], lb[i], path + "[" + std::to_string(i) + "]", false);
        if (!d.empty()) return d;
      }
      if (la.size() != lb.size()) {
        return differ(path, std::to_string(la.size()) + " elements",
                      std::to_string(lb.size()) + " elements");
      }
      return "";
    }
    case capnp::DynamicValue::STRUCT: {
      auto sa = a.as<capnp::DynamicStruct>();
      auto sb = b.as<capnp::DynamicStruct>();
      if (sa.getSchema().getProto().getId() == capnp::typeId<wire::Bulk>()) {
        return compareBulk(sa, sb, path, isWalk);
      }
      return compareStructs(sa, sb, path);
    }
    default:
      return "";  // void, capabilities, AnyPointer
  }
}

std::string compareStructs(capnp::DynamicStruct::Reader a, capnp::DynamicStruct::Reader b,
                           const std::string& path) {
  KJ_IF_MAYBE(fa, a.which()) {
    KJ_IF_MAYBE(fb, b.which()) {
      if (fa->getIndex() != fb->getIndex()) {
        return differ(path, fa->getProto().getName().cStr(), fb->getProto().getName().cStr());
      }
      std::string d = compareValues(a.get(*fa), b.get(*fb), join(path, fa->getProto().getName()),
                                    fa->getProto().getName() == "walk");
      if (!d.empty()) return d;
    }
  }
  // Named, not a temporary: gcc 14 takes a temporary schema's fields for a dangling reference.
  capnp::StructSchema schema = a.getSchema();
  for (auto field : schema.getNonUnionFields()) {
    if (readAhead(field)) continue;
    std::string d = compareValues(a.get(field), b.get(field), join(path, field.getProto().getName()),
                                  field.getProto().getName() == "walk");
    if (!d.empty()) return d;
  }
  return "";
}

}  // namespace

std::string firstDifference(capnp::StructSchema type, capnp::AnyPointer::Reader recorded,
                            capnp::AnyPointer::Reader replayed) {
  return compareStructs(recorded.getAs<capnp::DynamicStruct>(type),
                        replayed.getAs<capnp::DynamicStruct>(type), "");
}

}  // namespace mqd::replay
