#include "LookupKey.h"

namespace mqd {

void LookupKey::writeTo(wire::Lookup::Builder out) const {
  switch (kind) {
    case Symbol: out.setSymbol(name); break;
    case Function: {
      auto f = out.initFunction();
      f.setName(name);
      f.setLang(lang);
      break;
    }
    case Type: {
      auto t = out.initType();
      t.setName(name);
      t.setLang(lang);
      break;
    }
    case Field: {
      auto f = out.initField();
      f.initType().setName(name);
      f.getType().setLang(lang);
      f.setField(field);
      break;
    }
    case SizeOf: {
      auto t = out.initSizeOf();
      t.setName(name);
      t.setLang(lang);
      break;
    }
  }
}

std::optional<LookupKey> LookupKey::from(wire::Lookup::Reader in) {
  switch (in.which()) {
    case wire::Lookup::SYMBOL: return LookupKey{Symbol, in.getSymbol(), 0, ""};
    case wire::Lookup::FUNCTION:
      return LookupKey{Function, in.getFunction().getName(), in.getFunction().getLang(), ""};
    case wire::Lookup::TYPE:
      return LookupKey{Type, in.getType().getName(), in.getType().getLang(), ""};
    case wire::Lookup::FIELD:
      return LookupKey{Field, in.getField().getType().getName(),
                       in.getField().getType().getLang(), in.getField().getField()};
    case wire::Lookup::SIZE_OF:
      return LookupKey{SizeOf, in.getSizeOf().getName(), in.getSizeOf().getLang(), ""};
  }
  return std::nullopt;
}

}  // namespace mqd
