// The shell of a self-contained report page (inline CSS, a content security policy that allows
// no network at all, a few lines of inline JS that sort tables) and a table builder whose cells
// are escaped on the way in.
#ifndef LIBREYOLO_COMMON_REPORT_HTML_PAGE_H_
#define LIBREYOLO_COMMON_REPORT_HTML_PAGE_H_

#include <optional>
#include <string>
#include <vector>

namespace libreyolo {

// <!DOCTYPE html> ... <body>, with `title` escaped.
std::string PageStart(const std::string& title);
// The sorting script and </body></html>.
std::string PageEnd();

// <section id="id"><h2>heading</h2> ... </section>; `body` is HTML already.
std::string Section(const std::string& id, const std::string& heading, const std::string& body);

// "%.17g" of the value (the exact double, as `--json` parses back), "" when absent: the
// data-value attribute of every number the page shows.
std::string ExactValue(std::optional<double> v);

class HtmlTable {
 public:
  struct Cell {
    std::string text;            // plain text, escaped by Render
    std::optional<double> sort;  // numeric sort key (data-v); none: sort by text
    std::string title;           // tooltip (plain text), e.g. the full name
    bool numeric = true;
  };
  // A sortable table (click a header) with the given column headers (plain text).
  explicit HtmlTable(std::vector<std::string> headers, std::string css_class = "");
  void AddRow(std::vector<Cell> cells) { rows_.push_back(std::move(cells)); }
  size_t rows() const { return rows_.size(); }
  std::string Render() const;

  static Cell Num(std::optional<double> v, const std::string& text);
  static Cell Text(const std::string& text, const std::string& title = "");

 private:
  std::vector<std::string> headers_;
  std::string css_class_;
  std::vector<std::vector<Cell>> rows_;
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_HTML_PAGE_H_
