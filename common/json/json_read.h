// Reading JSON: the one conversion of a number's text, and the one way a RapidJSON document is
// parsed from our files and the user's (profile.json, its config and profiler objects, a ranks
// object, an export's metadata).
//
// RapidJSON's own number conversion is an ulp off for some long fractions and integers beyond 64
// bits in its default mode, and in its full-precision mode it is undefined behaviour (diyfp.h: clz
// of zero for a significand that rounds up past 2^64, 18446744073709551615666: UBSan, and the
// value read as garbage); the fuzz targets found both. So numbers reach the parser as their text
// (kParseNumbersAsStringsFlag) and ConvertNumber makes them the nearest double (from_chars), as
// the trace reader's are.
#ifndef LIBREYOLO_COMMON_JSON_JSON_READ_H_
#define LIBREYOLO_COMMON_JSON_JSON_READ_H_

#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace libreyolo {

// A JSON number's text (a number RapidJSON or a scanner accepted, or NaN, Infinity, -Infinity)
// converted: an integer is an int64, a uint64 beyond it, else (beyond 64 bits) a double as every
// other number, the nearest double. false: beyond a double's range, with *beyond set to what IEEE
// rounding gives (+-inf above, +-0 below).
enum class NumberKind { kInt64, kUint64, kDouble };
bool ConvertNumber(std::string_view text, NumberKind* kind, int64_t* i, uint64_t* u, double* d,
                   double* beyond);

// ConvertNumber's result handed to a RapidJSON SAX handler, as RapidJSON's own parse would hand
// it: Int64, Uint64 or Double; beyond a double's range, Double of the IEEE-rounded value.
template <typename Handler>
bool HandNumber(std::string_view text, Handler& handler) {
  NumberKind kind;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0, beyond = 0;
  if (!ConvertNumber(text, &kind, &i, &u, &d, &beyond)) return handler.Double(beyond);
  switch (kind) {
    case NumberKind::kInt64: return handler.Int64(i);
    case NumberKind::kUint64: return handler.Uint64(u);
    case NumberKind::kDouble: return handler.Double(d);
  }
  return false;
}

// Parses `text` into *doc (replacing what it held), numbers by ConvertNumber, NaN and Infinity
// accepted, iteratively (hostile nesting cannot exhaust the stack). On a parse error *doc is
// null and the result says where and what (rapidjson::GetParseError_En).
rapidjson::ParseResult ParseJson(std::string_view text, rapidjson::Document* doc);

// "<what>: not valid JSON at byte N: <RapidJSON's reason>", the reason without its full stop, so
// that every reader can go on with its own sentence (the readers printed "empty.." before).
std::string NotJsonAt(std::string_view what, const rapidjson::ParseResult& result);

// The document ParseJson makes, null where `text` is not JSON: for a reader that treats both
// alike. Held const, its iterators compare without C++20's reversed-operator ambiguity.
rapidjson::Document JsonOrNull(std::string_view text);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_JSON_JSON_READ_H_
