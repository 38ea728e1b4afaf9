#include "server/views/feeds.hpp"

#include "tests/support/harness.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>

using namespace newsdesk::server;
using newsdesk::testing::temp_dir;
using json = nlohmann::json;

namespace {

const std::string replacement = "\xEF\xBF\xBD"; // U+FFFD

feed_info info() {
  return {"newsdesk: CNN & BBC", "http://127.0.0.1:8080/news.atom?sites=cnn,bbc",
          "http://127.0.0.1:8080/news?sites=cnn,bbc", 1'700'000'100'000};
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

feed_entry entry(std::string title, std::string url, std::string site = "cnn") {
  return {"",    std::move(title),  std::move(url),   std::move(site),
          "CNN", 1'700'000'000'123, 1'700'000'050'000};
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE("feeds: entry ids are stable URNs, distinct per site and URL") {
  auto id = stable_entry_id("cnn", "https://edition.cnn.com/a.html");
  // Pinned: a change here would make every reader show every headline again.
  CHECK(id == stable_entry_id("cnn", "https://edition.cnn.com/a.html"));
  CHECK(std::regex_match(
      id,
      std::regex("urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  std::set<std::string> ids{id, stable_entry_id("bbc", "https://edition.cnn.com/a.html"),
                            stable_entry_id("cnn", "https://edition.cnn.com/b.html"),
                            stable_entry_id("cnn\nhttps:", "//edition.cnn.com/a.html"),
                            stable_entry_id("", "")};
  CHECK(ids.size() == 5);
}

TEST_CASE("feeds: stable ids do not change between builds") {
  // The same as Python's uuid.uuid5(UUID("5d0e8b4a-3f7c-4c1e-9a62-0b7e2f4d8c31"),
  // "entry\ncnn\nhttps://edition.cnn.com/a.html").
  CHECK(stable_entry_id("cnn", "https://edition.cnn.com/a.html") ==
        "urn:uuid:ecbc23e4-14bd-5014-82d8-fd53b92174d5");
}

TEST_CASE("feeds: clean_text replaces invalid UTF-8 and drops control characters") {
  CHECK(clean_text("plain") == "plain");
  CHECK(clean_text("Z\xC3\xBCrich \xE2\x80\x93 \xE6\x97\xA5 \xF0\x9F\x98\x80") ==
        "Z\xC3\xBCrich \xE2\x80\x93 \xE6\x97\xA5 \xF0\x9F\x98\x80");
  CHECK(clean_text(std::string("a\x01\x08\x1F\x7F") + '\0' + "b\tc\nd\re") == "ab\tc\nd\re");
  CHECK(clean_text("\xC2\x85x") == "x");                                        // C1 control NEL
  CHECK(clean_text("\xEF\xBF\xBEx\xEF\xBF\xBF") == "x");                        // U+FFFE, U+FFFF
  CHECK(clean_text("caf\xC3") == "caf" + replacement);                          // truncated
  CHECK(clean_text("\xFFx") == replacement + "x");                              // never valid
  CHECK(clean_text("\xC0\xAF") == replacement + replacement);                   // overlong '/'
  CHECK(clean_text("\xED\xA0\x80") == replacement + replacement + replacement); // surrogate
  CHECK(clean_text("\xF4\x90\x80\x80").find("\xF4") == std::string::npos);      // > U+10FFFF
  CHECK(clean_text("\xE6\x97x") == replacement + "x"); // cut 3-byte sequence
}

TEST_CASE("feeds: Atom escapes scraped text and links") {
  auto e = entry("<script>alert(\"x\") & 'y'</script>", "https://x.test/a?b=1&c=2");
  e.site_display_name = "\"C<N>N\" & 'co'";
  auto xml = atom_feed(info(), {e});
  CHECK_FALSE(contains(xml, "<script>"));
  CHECK(contains(xml, "<title type=\"text\">&lt;script&gt;alert(&quot;x&quot;) &amp; "
                      "&apos;y&apos;&lt;/script&gt;</title>"));
  CHECK(contains(xml, "href=\"https://x.test/a?b=1&amp;c=2\""));
  CHECK(contains(xml, "label=\"&quot;C&lt;N&gt;N&quot; &amp; &apos;co&apos;\""));
  CHECK(contains(xml, "<title type=\"text\">newsdesk: CNN &amp; BBC</title>"));
  CHECK(contains(xml, "href=\"http://127.0.0.1:8080/news.atom?sites=cnn,bbc\""));
}

TEST_CASE("feeds: Atom carries ids, dates and categories; control characters and bad UTF-8 go") {
  auto e = entry(std::string("Bad\x01 bytes \xFF here"), "https://x.test/1");
  auto xml = atom_feed(info(), {e});
  CHECK(contains(xml, "<title type=\"text\">Bad bytes " + replacement + " here</title>"));
  CHECK(contains(xml, "<id>" + stable_entry_id("cnn", "https://x.test/1") + "</id>"));
  CHECK(contains(xml, "<published>2023-11-14T22:13:20.123Z</published>"));
  CHECK(contains(xml, "<updated>2023-11-14T22:14:10.000Z</updated>"));
  CHECK(contains(xml, "<updated>2023-11-14T22:15:00.000Z</updated>")); // the feed's
  CHECK(contains(xml, "<category term=\"cnn\" label=\"CNN\"/>"));
  CHECK(contains(xml, "<link rel=\"self\" type=\"application/atom+xml\""));
  CHECK(contains(xml, "<link rel=\"alternate\" type=\"text/html\" "
                      "href=\"http://127.0.0.1:8080/news?sites=cnn,bbc\"/>"));
}

TEST_CASE("feeds: each query is its own feed with an id that survives restarts") {
  auto id_of = [](const std::string& xml) {
    auto start = xml.find("<id>") + 4;
    return xml.substr(start, xml.find("</id>") - start);
  };
  auto a = info();
  auto b = info();
  b.self_url = "http://127.0.0.1:8080/news.atom?sites=cnn";
  CHECK(id_of(atom_feed(a, {})) == id_of(atom_feed(info(), {})));
  CHECK(id_of(atom_feed(a, {})) != id_of(atom_feed(b, {})));
}

TEST_CASE("feeds: a given entry id is used as is; links that are not http(s) are left out") {
  auto e = entry("Given id", "https://x.test/1");
  e.id = "urn:uuid:00000000-0000-5000-8000-000000000000";
  auto bad = entry("Sneaky", "javascript:alert(1)");
  auto xml = atom_feed(info(), {e, bad});
  CHECK(contains(xml, "<id>urn:uuid:00000000-0000-5000-8000-000000000000</id>"));
  CHECK_FALSE(contains(xml, "Sneaky"));
  auto j = json::parse(json_feed(info(), {e, bad}));
  REQUIRE(j.at("items").size() == 1);
  CHECK(j.at("items")[0].at("id") == "urn:uuid:00000000-0000-5000-8000-000000000000");
}

TEST_CASE("feeds: empty feeds are complete documents") {
  auto xml = atom_feed(info(), {});
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed "
                  "xmlns=\"http://www.w3.org/2005/Atom\">",
                  0) == 0);
  CHECK(contains(xml, "<updated>2023-11-14T22:15:00.000Z</updated>"));
  CHECK(contains(xml, "<author><name>newsdesk</name></author>"));
  CHECK_FALSE(contains(xml, "<entry>"));
  CHECK(xml.ends_with("</feed>\n"));

  auto j = json::parse(json_feed(info(), {}));
  CHECK(j.at("version") == "https://jsonfeed.org/version/1.1");
  CHECK(j.at("items") == json::array());
}

TEST_CASE("feeds: JSON Feed 1.1 items carry every field; bad text is cleaned, not fatal") {
  auto e = entry(std::string("<b>\"Q&A\"</b>\x02 \xC3\x28"), "https://x.test/a?b=1&c=2");
  auto j = json::parse(json_feed(info(), {e}));
  CHECK(j.at("title") == "newsdesk: CNN & BBC");
  CHECK(j.at("home_page_url") == "http://127.0.0.1:8080/news?sites=cnn,bbc");
  CHECK(j.at("feed_url") == "http://127.0.0.1:8080/news.atom?sites=cnn,bbc");
  auto item = j.at("items").at(0);
  CHECK(item.at("id") == stable_entry_id("cnn", "https://x.test/a?b=1&c=2"));
  CHECK(item.at("url") == "https://x.test/a?b=1&c=2");
  CHECK(item.at("title") == "<b>\"Q&A\"</b> " + replacement + "(");
  CHECK(item.at("content_text") == item.at("title"));
  CHECK(item.at("date_published") == "2023-11-14T22:13:20.123Z");
  CHECK(item.at("date_modified") == "2023-11-14T22:14:10.000Z");
  CHECK(item.at("tags") == json::array({"cnn"}));
  CHECK(item.at("authors")[0].at("name") == "CNN");
}

TEST_CASE("feeds: a headline's summary is Atom's <summary> and JSON Feed's \"summary\", escaped") {
  auto with = entry("Dam bursts above Porto", "https://x.test/dam");
  with.summary = "Thousands leave <b>their</b> homes & the Douro rises.";
  auto without = entry("Bridge reopens", "https://x.test/bridge");
  const auto atom = atom_feed(info(), {with, without});
  CHECK(atom.find("<summary type=\"text\">Thousands leave &lt;b&gt;their&lt;/b&gt; homes &amp; "
                  "the Douro rises.</summary>") != std::string::npos);
  CHECK(count_of(atom, "<summary") == 1); // none for a headline without one
  auto items = json::parse(json_feed(info(), {with, without})).at("items");
  CHECK(items[0].at("summary") == with.summary);
  CHECK_FALSE(items[1].contains("summary"));
}

// ---- A real feed reader reads what we write ----------------------------------------------

namespace {

int run(const std::string& command) {
  int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A Python 3 that can import `module` ("" for any Python 3). Debian's python3-feedparser lives
// in /usr/bin/python3's path, which may not be the first python3 on PATH (pyenv, venvs).
std::optional<std::string> python_with(const std::string& module) {
  for (std::string py : {"python3", "/usr/bin/python3"}) {
    auto probe = module.empty() ? std::string("import json") : "import " + module;
    if (run(py + " -c '" + probe + "' >/dev/null 2>&1") == 0)
      return py;
  }
  return std::nullopt;
}

void write(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::vector<feed_entry> reader_entries() {
  std::vector<feed_entry> es = {
      entry(std::string("Q&A: \"quotes\", <b>tags</b> & \xC3\xBCnic\xC3\xB6"
                        "de \xF0\x9F\x98\x80"),
            "https://edition.cnn.com/2025/a.html?x=1&y=2"),
      entry(std::string("Control\x01\x1B chars and bad \xFF bytes"),
            "https://www.bbc.com/news/articles/c1", "bbc"),
      entry("Plain", "https://apnews.com/article/plain", "ap"),
  };
  es[1].site_display_name = "BBC News";
  es[1].first_seen_ms = 0;
  es[1].last_seen_ms = 1'000;
  es[2].site_display_name = "";
  es[2].first_seen_ms = 1'735'689'599'000; // 2024-12-31T23:59:59Z
  es[2].last_seen_ms = 1'735'689'600'000;
  return es;
}

json expected(const char* format, const feed_info& fi, const std::vector<feed_entry>& es) {
  json entries = json::array();
  for (const auto& e : es)
    entries.push_back({{"id", stable_entry_id(e.site, e.url)},
                       {"title", clean_text(e.title)},
                       {"link", e.url},
                       {"site", e.site},
                       {"published_ms", e.first_seen_ms},
                       {"updated_ms", e.last_seen_ms}});
  return {{"format", format}, {"title", clean_text(fi.title)}, {"entries", entries}};
}

const std::string script = std::string(NEWSDESK_SOURCE_DIR) + "/tests/feeds/check_feed.py";

} // namespace

TEST_CASE("feeds: feedparser reads our Atom feed cleanly (bozo 0), entries, links and dates") {
  auto py = python_with("feedparser");
  // A check that cannot run fails: scripts/setup installs python3-feedparser.
  REQUIRE_MESSAGE(py, "no python3 with feedparser (scripts/setup installs python3-feedparser)");
  temp_dir dir;
  auto fi = info();
  auto es = reader_entries();
  for (const auto& [name, list] :
       {std::pair<const char*, std::vector<feed_entry>>{"full", es}, {"empty", {}}}) {
    CAPTURE(name);
    write(dir.path / "feed.atom", atom_feed(fi, list));
    write(dir.path / "expected.json", expected("atom", fi, list).dump());
    CHECK(run(*py + " " + script + " " + (dir.path / "feed.atom").string() + " " +
              (dir.path / "expected.json").string()) == 0);
  }
}

TEST_CASE("feeds: our JSON Feed is valid UTF-8 JSON with the 1.1 required fields") {
  auto py = python_with("");
  REQUIRE_MESSAGE(py, "no python3 (scripts/setup installs it)");
  temp_dir dir;
  auto fi = info();
  auto es = reader_entries();
  for (const auto& [name, list] :
       {std::pair<const char*, std::vector<feed_entry>>{"full", es}, {"empty", {}}}) {
    CAPTURE(name);
    write(dir.path / "feed.json", json_feed(fi, list));
    write(dir.path / "expected.json", expected("json", fi, list).dump());
    CHECK(run(*py + " " + script + " " + (dir.path / "feed.json").string() + " " +
              (dir.path / "expected.json").string()) == 0);
  }
}
