#include "common/json/json_writer.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>

namespace libreyolo {

// Both writer kinds share one buffer; `pretty` picks which one receives the calls.
struct JsonWriter::Impl {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> pretty{buffer};
  rapidjson::Writer<rapidjson::StringBuffer> compact{buffer};
  bool use_pretty = true;

  template <typename F>
  void Do(F&& f) {
    if (use_pretty) {
      f(pretty);
    } else {
      f(compact);
    }
  }
};

JsonWriter::JsonWriter(bool pretty) : impl_(std::make_unique<Impl>()) {
  impl_->use_pretty = pretty;
  impl_->pretty.SetIndent(' ', 2);
  impl_->pretty.SetFormatOptions(rapidjson::kFormatSingleLineArray);
}
JsonWriter::~JsonWriter() = default;

JsonWriter& JsonWriter::BeginObject() {
  impl_->Do([](auto& w) { w.StartObject(); });
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  impl_->Do([](auto& w) { w.EndObject(); });
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  impl_->Do([](auto& w) { w.StartArray(); });
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  impl_->Do([](auto& w) { w.EndArray(); });
  return *this;
}
JsonWriter& JsonWriter::Key(std::string_view key) {
  impl_->Do([&](auto& w) { w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size())); });
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view v) {
  impl_->Do([&](auto& w) { w.String(v.data(), static_cast<rapidjson::SizeType>(v.size())); });
  return *this;
}
JsonWriter& JsonWriter::Double(double v) {
  if (!std::isfinite(v)) return Null();
  impl_->Do([&](auto& w) { w.Double(v); });
  return *this;
}
JsonWriter& JsonWriter::Int(int64_t v) {
  impl_->Do([&](auto& w) { w.Int64(v); });
  return *this;
}
JsonWriter& JsonWriter::Bool(bool v) {
  impl_->Do([&](auto& w) { w.Bool(v); });
  return *this;
}
JsonWriter& JsonWriter::Null() {
  impl_->Do([](auto& w) { w.Null(); });
  return *this;
}
JsonWriter& JsonWriter::Raw(std::string_view json) {
  impl_->Do([&](auto& w) {
    w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
  });
  return *this;
}

JsonWriter& JsonWriter::Field(std::string_view key, const std::optional<double>& v) {
  Key(key);
  return v.has_value() ? Double(*v) : Null();
}
JsonWriter& JsonWriter::Field(std::string_view key, const std::optional<int64_t>& v) {
  Key(key);
  return v.has_value() ? Int(*v) : Null();
}
JsonWriter& JsonWriter::Field(std::string_view key, const std::optional<bool>& v) {
  Key(key);
  return v.has_value() ? Bool(*v) : Null();
}
JsonWriter& JsonWriter::Field(std::string_view key, const std::optional<std::string>& v) {
  Key(key);
  return v.has_value() ? String(*v) : Null();
}

std::string JsonWriter::Take() {
  std::string out(impl_->buffer.GetString(), impl_->buffer.GetSize());
  out += '\n';
  return out;
}

}  // namespace libreyolo
