// Aligned text tables and number formatting for the readers' text output.
#ifndef LIBREYOLO_COMMON_RENDER_TEXT_TABLE_H_
#define LIBREYOLO_COMMON_RENDER_TEXT_TABLE_H_

#include <optional>
#include <string>
#include <vector>

namespace libreyolo {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = Align::kRight;
    size_t max_width = 0;  // 0 = unlimited; longer cells are cut with "..."
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  size_t rows() const { return rows_.size(); }
  // Header, a rule, the rows; each line indented by `indent` spaces.
  std::string Render(size_t indent = 2) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "12.35", or "n/a" for an empty value.
std::string Fmt(std::optional<double> v, int precision = 2);
// Fixed precision with a unit: "12.35 ms", "n/a".
std::string FmtUnit(std::optional<double> v, const std::string& unit, int precision = 2);
// Percent of a 0..1 fraction: 0.4448 -> "44.5 %".
std::string FmtPct(std::optional<double> fraction, int precision = 1);
// Bytes with a binary unit: "1.50 MiB".
std::string FmtBytes(std::optional<double> bytes);
// FLOP counts: "7.79 GFLOP".
std::string FmtFlops(std::optional<double> flops);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_RENDER_TEXT_TABLE_H_
