#include "common/json/json_read.h"

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

namespace libreyolo {
namespace {

// A number beyond a double's range as IEEE rounding gives it: +-inf above, +-0 below. from_chars
// fails only beyond 1.8e308 or below 2.5e-324, so the decimal exponent of the first significant
// digit says which.
double BeyondADouble(std::string_view t) {
  const bool minus = !t.empty() && t[0] == '-';
  size_t i = minus ? 1 : 0;
  int64_t magnitude = -1;  // of the first significant digit
  bool found = false;
  int64_t integer_digits = 0;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
    if (!found && t[i] != '0') found = true;
    if (found) ++integer_digits;
  }
  if (found) magnitude = integer_digits - 1;
  if (i < t.size() && t[i] == '.') {
    for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
      if (!found) {
        --magnitude;
        if (t[i] != '0') found = true;
      }
    }
  }
  int64_t exponent = 0;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    const bool negative = i < t.size() && t[i] == '-';
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
      exponent = std::min<int64_t>(exponent * 10 + (t[i] - '0'), int64_t{1} << 40);
    }
    if (negative) exponent = -exponent;
  }
  const double v = magnitude + exponent >= 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return minus ? -v : v;
}

// The SAX events of a parse, forwarded to a document's own handler, numbers by ConvertNumber.
class ExactNumbers {
 public:
  explicit ExactNumbers(rapidjson::Document* doc) : doc_(doc) {}

  bool Null() { return doc_->Null(); }
  bool Bool(bool b) { return doc_->Bool(b); }
  bool Int(int v) { return doc_->Int(v); }
  bool Uint(unsigned v) { return doc_->Uint(v); }
  bool Int64(int64_t v) { return doc_->Int64(v); }
  bool Uint64(uint64_t v) { return doc_->Uint64(v); }
  bool Double(double v) { return doc_->Double(v); }
  bool RawNumber(const char* s, rapidjson::SizeType len, bool) {
    return HandNumber(std::string_view(s, len), *doc_);
  }
  bool String(const char* s, rapidjson::SizeType len, bool copy) {
    return doc_->String(s, len, copy);
  }
  bool StartObject() { return doc_->StartObject(); }
  bool Key(const char* s, rapidjson::SizeType len, bool copy) { return doc_->Key(s, len, copy); }
  bool EndObject(rapidjson::SizeType members) { return doc_->EndObject(members); }
  bool StartArray() { return doc_->StartArray(); }
  bool EndArray(rapidjson::SizeType elements) { return doc_->EndArray(elements); }

 private:
  rapidjson::Document* doc_;
};

constexpr unsigned kParseFlags = rapidjson::kParseNanAndInfFlag | rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseNumbersAsStringsFlag;

}  // namespace

bool ConvertNumber(std::string_view t, NumberKind* kind, int64_t* i, uint64_t* u, double* d,
                   double* beyond) {
  const char* b = t.data();
  const char* e = b + t.size();
  const bool integer =
      !t.empty() && std::all_of(b + (*b == '-' ? 1 : 0), e, [](char c) { return c >= '0' && c <= '9'; });
  if (integer) {
    if (std::from_chars(b, e, *i).ec == std::errc()) {
      *kind = NumberKind::kInt64;
      return true;
    }
    if (*b != '-' && std::from_chars(b, e, *u).ec == std::errc()) {
      *kind = NumberKind::kUint64;
      return true;
    }
  }
  *kind = NumberKind::kDouble;
  const auto r = std::from_chars(b, e, *d);
  if (r.ec == std::errc() && r.ptr == e) return true;
  *beyond = BeyondADouble(t);
  return false;
}

rapidjson::ParseResult ParseJson(std::string_view text, rapidjson::Document* doc) {
  rapidjson::ParseResult result;
  auto parse = [&](rapidjson::Document& d) {
    ExactNumbers handler(&d);
    rapidjson::MemoryStream memory(text.data(), text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> in(memory);
    rapidjson::Reader reader;
    result = reader.Parse<kParseFlags>(in, handler);
    return !result.IsError();
  };
  doc->SetNull();
  doc->Populate(parse);
  return result;
}

rapidjson::Document JsonOrNull(std::string_view text) {
  rapidjson::Document doc;
  ParseJson(text, &doc);
  return doc;
}

std::string NotJsonAt(std::string_view what, const rapidjson::ParseResult& result) {
  std::string_view reason = rapidjson::GetParseError_En(result.Code());
  if (!reason.empty() && reason.back() == '.') reason.remove_suffix(1);
  std::string out(what);
  out += ": not valid JSON at byte ";
  out += std::to_string(result.Offset());
  out += ": ";
  out += reason;
  return out;
}

}  // namespace libreyolo
