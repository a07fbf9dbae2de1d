// The report tests' page helpers, one copy each: how often a string occurs in a page (Count)
// and one <section id="..."> of it (SectionOf).
#ifndef LIBREYOLO_TESTS_SUPPORT_HTML_PAGE_H_
#define LIBREYOLO_TESTS_SUPPORT_HTML_PAGE_H_

#include <cstddef>
#include <string>

namespace libreyolo::test {

// How many times `what` occurs in `s`, overlapping occurrences included.
inline size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The body of <section id="id"> ... </section>; empty when the page has no such section.
inline std::string SectionOf(const std::string& html, const std::string& id) {
  const size_t a = html.find("<section id=\"" + id + "\">");
  if (a == std::string::npos) return "";
  return html.substr(a, html.find("</section>", a) - a);
}

}  // namespace libreyolo::test

#endif  // LIBREYOLO_TESTS_SUPPORT_HTML_PAGE_H_
