#include "common/render/text_table.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace libreyolo {
namespace {

std::string Cut(const std::string& s, size_t max_width) {
  if (max_width == 0 || s.size() <= max_width) return s;
  if (max_width <= 3) return s.substr(0, max_width);
  size_t cut = max_width - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

}  // namespace

std::string TextTable::Render(size_t indent) const {
  std::vector<size_t> width(columns_.size(), 0);
  std::vector<std::vector<std::string>> cells;
  cells.reserve(rows_.size());
  for (size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].header.size();
  for (const auto& row : rows_) {
    std::vector<std::string> cut(columns_.size());
    for (size_t c = 0; c < columns_.size() && c < row.size(); ++c) {
      cut[c] = Cut(row[c], columns_[c].max_width);
      width[c] = std::max(width[c], cut[c].size());
    }
    cells.push_back(std::move(cut));
  }
  const std::string pad(indent, ' ');
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = pad;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& s = row[c];
      const size_t fill = width[c] > s.size() ? width[c] - s.size() : 0;
      const bool last = c + 1 == columns_.size();
      if (columns_[c].align == Align::kRight) {
        out += std::string(fill, ' ') + s;
      } else {
        out += s;
        if (!last) out += std::string(fill, ' ');
      }
      if (!last) out += "  ";
    }
    return out + "\n";
  };
  std::vector<std::string> header;
  for (const auto& col : columns_) header.push_back(col.header);
  std::string out = line(header);
  size_t total = 0;
  for (size_t c = 0; c < width.size(); ++c) total += width[c] + (c + 1 < width.size() ? 2 : 0);
  out += pad + std::string(total, '-') + "\n";
  for (const auto& row : cells) out += line(row);
  return out;
}

std::string Fmt(std::optional<double> v, int precision) {
  if (!v.has_value() || !std::isfinite(*v)) return "n/a";
  return absl::StrFormat("%.*f", precision, *v);
}

std::string FmtUnit(std::optional<double> v, const std::string& unit, int precision) {
  if (!v.has_value() || !std::isfinite(*v)) return "n/a";
  return absl::StrFormat("%.*f %s", precision, *v, unit);
}

std::string FmtPct(std::optional<double> fraction, int precision) {
  if (!fraction.has_value() || !std::isfinite(*fraction)) return "n/a";
  return absl::StrFormat("%.*f %%", precision, 100.0 * *fraction);
}

std::string FmtBytes(std::optional<double> bytes) {
  if (!bytes.has_value() || !std::isfinite(*bytes)) return "n/a";
  const double b = *bytes;
  const double a = std::fabs(b);
  if (a >= 1024.0 * 1024 * 1024) return absl::StrFormat("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return absl::StrFormat("%.2f MiB", b / (1024.0 * 1024));
  if (a >= 1024.0) return absl::StrFormat("%.2f KiB", b / 1024.0);
  return absl::StrFormat("%.0f B", b);
}

std::string FmtFlops(std::optional<double> flops) {
  if (!flops.has_value() || !std::isfinite(*flops)) return "n/a";
  const double f = *flops;
  if (f >= 1e12) return absl::StrFormat("%.2f TFLOP", f / 1e12);
  if (f >= 1e9) return absl::StrFormat("%.2f GFLOP", f / 1e9);
  if (f >= 1e6) return absl::StrFormat("%.2f MFLOP", f / 1e6);
  return absl::StrFormat("%.0f FLOP", f);
}

}  // namespace libreyolo
