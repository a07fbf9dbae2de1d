// A small JSON writer (RapidJSON underneath, kept out of this header) for profiles and --json.
#ifndef LIBREYOLO_COMMON_JSON_JSON_WRITER_H_
#define LIBREYOLO_COMMON_JSON_JSON_WRITER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace libreyolo {

class JsonWriter {
 public:
  explicit JsonWriter(bool pretty = true);
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view v);
  JsonWriter& Double(double v);  // NaN and infinities become null
  JsonWriter& Int(int64_t v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  JsonWriter& Raw(std::string_view json);  // a complete, valid JSON value

  // Key + value, with null for an empty optional.
  JsonWriter& Field(std::string_view key, std::string_view v) { return Key(key).String(v); }
  JsonWriter& Field(std::string_view key, const char* v) { return Key(key).String(v); }
  JsonWriter& Field(std::string_view key, const std::string& v) { return Key(key).String(v); }
  JsonWriter& Field(std::string_view key, double v) { return Key(key).Double(v); }
  JsonWriter& Field(std::string_view key, int64_t v) { return Key(key).Int(v); }
  JsonWriter& Field(std::string_view key, bool v) { return Key(key).Bool(v); }
  JsonWriter& Field(std::string_view key, const std::optional<double>& v);
  JsonWriter& Field(std::string_view key, const std::optional<int64_t>& v);
  JsonWriter& Field(std::string_view key, const std::optional<bool>& v);
  JsonWriter& Field(std::string_view key, const std::optional<std::string>& v);

  // The document so far (complete once every object/array is closed), with a final newline.
  std::string Take();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_JSON_JSON_WRITER_H_
