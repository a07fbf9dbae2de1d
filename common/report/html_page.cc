#include "common/report/html_page.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/render/html_escape.h"

namespace libreyolo {
namespace {

constexpr char kCss[] = R"css(
:root{--fg:#1d2330;--mut:#5f6b7a;--line:#d9dee5;--bg:#fff;--soft:#f4f6f9;--acc:#1b6ac9}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1100px;padding:18px 22px 60px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:0 0 10px}h3{font-size:14px;margin:14px 0 6px}
header .meta{color:var(--mut);font-size:13px;word-break:break-all}
section{border-top:1px solid var(--line);padding:16px 0 8px}
.verdict{background:var(--soft);border-left:5px solid var(--acc);padding:10px 14px;border-radius:4px}
.bound{font-size:20px;font-weight:700}.warn{color:#a11;font-weight:600}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:8px}
.metric{background:var(--soft);border-radius:4px;padding:6px 10px}
.metric .k{color:var(--mut);font-size:12px}.metric .v{font-size:16px;font-weight:600;word-break:break-word}
table{border-collapse:collapse;width:100%;font-size:12.5px;margin:6px 0 10px}
th,td{border-bottom:1px solid var(--line);padding:3px 6px;text-align:right;vertical-align:top}
th{background:var(--soft);cursor:pointer;user-select:none;white-space:nowrap}
th.asc:after{content:" \25B2"}th.desc:after{content:" \25BC"}
td.t,th.t{text-align:left}td.t{word-break:break-all;max-width:560px}
table.layers td.t{white-space:pre-wrap}
.na{color:var(--mut);background:var(--soft);padding:10px 14px;border-radius:4px;margin:6px 0}
svg.chart{width:100%;height:auto;display:block;margin:4px 0 8px}
svg .grid{stroke:#e6e9ee}svg .tick{stroke:#999}svg text{font:11px system-ui,sans-serif;fill:#444}
svg .busy{fill:none;stroke:#c21f3a;stroke-width:2}svg .idle{fill:#eef0f3}svg .on{fill:#2b8a3e}
svg .launch{fill:#1b6ac9}svg .alloc{fill:none;stroke:#1b6ac9;stroke-width:1.6}
svg .reserved{fill:none;stroke:#888;stroke-width:1.2;stroke-dasharray:5 3}
svg .peak circle{fill:#c21f3a}svg .hbar{fill:#1b6ac9}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:18px}.cols>div{min-width:0}
.better{color:#1a7f37;font-weight:600}.worse{color:#b42318;font-weight:600}
.sig{font-size:16px;font-weight:700}.foot{color:var(--mut);font-size:12px}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}
dl.kv dt{color:var(--mut)}dl.kv dd{margin:0;word-break:break-all}
)css";

// Sorts a table by the clicked column: numbers by data-v, the rest by text.
constexpr char kScript[] = R"js(
(function(){
  function key(td){var v=td.getAttribute('data-v');return v===null?null:parseFloat(v);}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th,col){
      th.addEventListener('click',function(){
        var num=th.getAttribute('data-num')==='1';
        var asc=th.classList.contains('desc')?true:th.classList.contains('asc')?false:!num;
        t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
        th.classList.add(asc?'asc':'desc');
        var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){
          var x=a.cells[col],y=b.cells[col];if(!x||!y)return 0;
          var kx=key(x),ky=key(y),r;
          if(kx!==null&&ky!==null&&!isNaN(kx)&&!isNaN(ky))r=kx-ky;
          else r=x.textContent.localeCompare(y.textContent);
          return asc?r:-r;});
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
})();
)js";

}  // namespace

std::string PageStart(const std::string& title) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
      HtmlEscape(title), "</title>\n<style>", kCss, "</style></head>\n<body>\n");
}

std::string PageEnd() { return absl::StrCat("<script>", kScript, "</script>\n</body></html>\n"); }

std::string Section(const std::string& id, const std::string& heading, const std::string& body) {
  return absl::StrCat("<section id=\"", HtmlEscape(id), "\"><h2>", HtmlEscape(heading), "</h2>\n",
                      body, "</section>\n");
}

std::string ExactValue(std::optional<double> v) {
  return v.has_value() ? absl::StrFormat("%.17g", *v) : "";
}

HtmlTable::HtmlTable(std::vector<std::string> headers, std::string css_class)
    : headers_(std::move(headers)), css_class_(std::move(css_class)) {}

HtmlTable::Cell HtmlTable::Num(std::optional<double> v, const std::string& text) {
  return Cell{text, v, "", true};
}

HtmlTable::Cell HtmlTable::Text(const std::string& text, const std::string& title) {
  return Cell{text, std::nullopt, title, false};
}

std::string HtmlTable::Render() const {
  std::string s = absl::StrCat("<table class=\"sortable", css_class_.empty() ? "" : " ",
                               HtmlEscape(css_class_), "\"><thead><tr>");
  for (size_t i = 0; i < headers_.size(); ++i) {
    const bool numeric = rows_.empty() || i >= rows_[0].size() || rows_[0][i].numeric;
    absl::StrAppend(&s, "<th", numeric ? " data-num=\"1\"" : " class=\"t\" data-num=\"0\"", ">",
                    HtmlEscape(headers_[i]), "</th>");
  }
  s += "</tr></thead><tbody>\n";
  for (const auto& row : rows_) {
    s += "<tr>";
    for (const Cell& c : row) {
      s += c.numeric ? "<td" : "<td class=\"t\"";
      if (c.sort.has_value()) absl::StrAppend(&s, " data-v=\"", ExactValue(c.sort), "\"");
      if (!c.title.empty()) absl::StrAppend(&s, " title=\"", HtmlEscapeCut(c.title, 2000), "\"");
      absl::StrAppend(&s, ">", HtmlEscape(c.text), "</td>");
    }
    s += "</tr>\n";
  }
  s += "</tbody></table>\n";
  return s;
}

}  // namespace libreyolo
