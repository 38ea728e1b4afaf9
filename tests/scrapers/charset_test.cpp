#include "scrapers/charset.hpp"

#include "scrapers/dom.hpp"
#include "scrapers/headlines.hpp"
#include "scrapers/scraper.hpp"
#include "tests/scrapers/test_files.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

using namespace newsdesk::scrapers;
using namespace newsdesk::scrapers::testing;

namespace {

// Every link is a headline: the page's titles as the real parse path reads them.
class every_link final : public scraper {
 public:
  const site_info& site() const override { return info_; }
  std::vector<headline> extract(const dom::document& page,
                                std::string_view page_url) const override {
    headline_collector c(info_.name, page_url, page);
    for (dom::node n : page.root().descendant_elements())
      if (n.has_tag("a") && n.attr("href"))
        c.add(n.text(), *n.attr("href"));
    return c.take();
  }

 private:
  site_info info_{.name = "links",
                  .display_name = "Links",
                  .url = "https://links.test/",
                  .colour = "#000",
                  .wait_seconds = {},
                  .timeout_seconds = {},
                  .renderer = {}};
};

std::vector<std::string> titles(const std::string& bytes, const std::string& content_type) {
  std::vector<std::string> out;
  for (const auto& h : every_link().parse(bytes, "https://links.test/", nullptr, content_type))
    out.push_back(h.title);
  return out;
}

// The pages make_charset_pages.py writes, made once per run with Python's codecs.
const std::filesystem::path& pages() {
  static const std::filesystem::path dir = [] {
    char tmpl[] = "/tmp/newsdesk-charsets-XXXXXX";
    std::filesystem::path d = ::mkdtemp(tmpl);
    const auto command = "python3 " + std::string(NEWSDESK_SOURCE_DIR) +
                         "/tests/scrapers/make_charset_pages.py " + d.string();
    REQUIRE_MESSAGE(std::system(command.c_str()) == 0, command);
    return d;
  }();
  return dir;
}

std::string page(const std::string& name) {
  auto bytes = read_file(pages() / name);
  REQUIRE_MESSAGE(bytes, name);
  return *bytes;
}

} // namespace

TEST_CASE("pages in Shift_JIS, EUC-KR, GB18030, windows-1251 and ISO-8859-1 give the UTF-8 "
          "page's titles: declared in the header only, in a meta tag only, and not at all") {
  for (const std::string charset :
       {"Shift_JIS", "EUC-KR", "GB18030", "windows-1251", "ISO-8859-1"}) {
    CAPTURE(charset);
    const auto expected = titles(page(charset + ".utf8.html"), "text/html");
    REQUIRE(expected.size() == 5);
    const auto bare = page(charset + ".bare.html");
    REQUIRE(bare != page(charset + ".utf8.html")); // really another encoding
    CHECK(titles(bare, "text/html; charset=" + charset) == expected);
    CHECK(titles(bare, "text/html; charset=\"" + charset + "\"") == expected);
    CHECK(titles(page(charset + ".meta.html"), "text/html") == expected);
    CHECK(titles(page(charset + ".meta.html"), "") == expected);
    CHECK(titles(bare, "text/html") == expected); // detected
    CHECK(titles(bare, "") == expected);
  }
}

TEST_CASE("the charset's order: BOM, then the HTTP header, then the meta prescan, then detection") {
  const std::string utf8_title = "Caf\xC3\xA9 cr\xC3\xA8me";
  const std::string latin1 = "<a href=/a>Caf\xE9 cr\xE8me</a>";
  // The header beats a meta that says otherwise.
  CHECK(find_page_charset("<meta charset=windows-1251>" + latin1, "text/html; charset=iso-8859-1")
            .source == charset_source::http);
  CHECK(titles("<meta charset=windows-1251>" + latin1, "text/html; charset=iso-8859-1") ==
        std::vector<std::string>{utf8_title});
  // A byte order mark beats the header, as in the HTML standard and every browser.
  const auto with_bom = "\xEF\xBB\xBF<a href=/a>" + utf8_title + "</a>";
  CHECK(find_page_charset(with_bom, "text/html; charset=iso-8859-1").source == charset_source::bom);
  CHECK(titles(with_bom, "text/html; charset=iso-8859-1") == std::vector<std::string>{utf8_title});
  // A meta past the first 1,024 bytes is not read; a label naming no encoding is passed over.
  const std::string late = "<!--" + std::string(1100, ' ') + "--><meta charset=windows-1251>";
  CHECK(prescan_meta_charset(late).empty());
  CHECK(prescan_meta_charset("<meta charset=utf-7>").empty());
  CHECK(prescan_meta_charset("<!-- <meta charset=koi8-r> --><meta charset=sjis>") == "Shift_JIS");
  CHECK(find_page_charset(latin1, "text/html; charset=made-up").source == charset_source::detected);
  // A UTF-8 page without a BOM is read as it is: nothing is copied.
  CHECK_FALSE(page_as_utf8("<a href=/a>" + utf8_title + "</a>", "text/html").has_value());
}
