#include "server/news/news_query.hpp"
#include "server/news/search.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::server;

namespace {
// Whether q= finds `title`, a headline in `language` ("": read without a language's rules).
bool finds(std::string_view q, std::string_view title, std::string_view language = "") {
  return search_query(q).matches(title, language);
}
} // namespace

TEST_CASE("a query word matches the beginning of a title word, not its middle") {
  CHECK(finds("ai", "AI rules agreed in Brussels"));
  CHECK(finds("ai", "Aiding the flood victims"));
  CHECK_FALSE(finds("ai", "Sailing round the world"));
  CHECK(finds("war", "War in the north"));
  CHECK(finds("war", "New warships launched"));
  CHECK_FALSE(finds("war", "Steps towards peace"));
}

TEST_CASE("every query word must match") {
  CHECK(finds("apple harvest", "Record apple harvest"));
  CHECK(finds("harv app", "Record apple harvest"));
  CHECK_FALSE(finds("apple pears", "Record apple harvest"));
  CHECK(finds("", "anything"));
  CHECK(finds("  ", "anything"));
}

TEST_CASE("case and accents are folded on both sides, beyond ASCII") {
  for (auto q : {"elysee", "ÉLYSÉE", "Élysée", "élysée", "ELYSEE"})
    CHECK_MESSAGE(finds(q, "Talks at the Élysée Palace"), q);
  CHECK(finds("munchen", "München wins"));
  CHECK(finds("STRASSE", "Neue Straße eröffnet")); // full case folding: ß is ss
  CHECK(finds("σοφια", "ΣΟΦΊΑ"));                  // Greek final sigma and tonos
  CHECK(finds("istanbul", "İstanbul"));
  CHECK(finds("office", "The oﬃce ligature")); // compatibility forms: "ﬃ" is "ffi"
  CHECK_FALSE(finds("elyseee", "Élysée"));
}

TEST_CASE("punctuation separates words") {
  CHECK(finds("trump", "\"Trump's\" speech"));
  CHECK(finds("covid", "Post-COVID rules"));
  CHECK(finds("19", "Post-COVID-19 rules"));
  CHECK(finds("u s", "U.S. markets"));
  CHECK(search_query("Hello, world! 2026").words() ==
        std::vector<std::string>{"hello", "world", "2026"});
}

TEST_CASE("scripts without spaces match by word, as ICU's word breaker cuts them") {
  CHECK(finds("北京", "我们在北京开会", "zh"));
  CHECK_FALSE(finds("上海", "我们在北京开会", "zh"));
  CHECK(finds("الحرب", "نهاية الحرب في الشمال", "ar"));
  // q=地震 finds the Japanese quake titles by their word, and 京都 (Kyoto) is not inside 東京都.
  for (auto title : {"東京で震度5強の地震　けが人の情報なし",
                     "東京都で震度5強の地震、けが人の情報なし 気象庁"}) {
    CHECK_MESSAGE(finds("地震", title, "ja"), title);
    CHECK_MESSAGE(finds("地震", title, ""), title);
    CHECK_MESSAGE(finds("東京", title, "ja"), title);
  }
  CHECK_FALSE(finds("京都", "東京都で震度5強の地震", "ja"));
  CHECK_FALSE(finds("地震", "東京都で大雨　交通に乱れ", "ja"));
}

TEST_CASE("a query word finds the other forms of its word in the title's language") {
  CHECK(finds("erdbeben", "Erdbebens in der Osttürkei: Zahl der Toten steigt", "de"));
  CHECK(finds("Erdbebens", "Schweres Erdbeben erschüttert die Türkei", "de"));
  CHECK(finds("seismes", "Séisme de magnitude 5 à Tokyo", "fr"));
  CHECK(finds("землетрясения", "Сильное землетрясение в Японии", "ru"));
  CHECK(finds("companies", "Company shares fall", "en"));
  // Prefixes as typed still find the word as written ("runn" is not a prefix of the stem "run").
  CHECK(finds("runn", "Running out of time", "en"));
  // Without the language's rules, only prefixes of the word as written.
  CHECK(finds("erdbeben", "Erdbebens in der Osttürkei", ""));
  CHECK_FALSE(finds("Erdbebens", "Schweres Erdbeben", ""));
}

TEST_CASE("numbers are one word whichever decimal mark they are written with") {
  CHECK(finds("7,1", "Earthquake of magnitude 7.1 hits", "en"));
  CHECK(finds("7.1", "Erdbeben der Stärke 7,1", "de"));
  CHECK(finds("1000", "Mehr als 1.000 Tote", "de"));
  CHECK(finds("1.000", "More than 1,000 dead", "en"));
  CHECK_FALSE(finds("7.1", "Magnitude 7.2 quake", "en"));
}

TEST_CASE("invalid UTF-8 in a title or a query never matches across it and never throws") {
  CHECK(finds("bad", "bad \xff byte"));
  CHECK(finds("byte", "bad \xff byte"));
  CHECK(search_query("a\xff"
                     "b")
            .words() == std::vector<std::string>{"a", "b"});
  CHECK_NOTHROW(finds("\xc3", "\xc3\x28"));
}

TEST_CASE("q= parses into folded words; the filter combines it with site=") {
  std::vector<site_report> sites{{"bbc", "BBC"}, {"cnn", "CNN"}};
  auto parsed = parse_news_query("site=bbc&q=%C3%89lys%C3%A9e+TALKS", sites);
  REQUIRE(std::holds_alternative<news_query>(parsed));
  auto query = std::get<news_query>(parsed);
  CHECK(query.words.words() == std::vector<std::string>{"elysee", "talks"});
  CHECK(query.q == "Élysée TALKS");
  news_item bbc{{"Talks at the Élysée", "https://bbc.test/1", "bbc"}};
  news_item cnn{{"Talks at the Élysée", "https://cnn.test/1", "cnn"}};
  news_item other{{"Talks elsewhere", "https://bbc.test/2", "bbc"}};
  CHECK(query.matches(bbc));
  CHECK_FALSE(query.matches(cnn));
  CHECK_FALSE(query.matches(other));
  CHECK(std::get<std::string>(parse_news_query("site=fox", sites)) == "site: no site named 'fox'");
}

TEST_CASE("a view of several sites is newest first; a view of one site keeps the site's order") {
  news_snapshot snapshot;
  snapshot.sites = {{"a", "A"}, {"b", "B"}};
  // As the service sorts them: newest first, then id.
  // {headline, id, first_seen_ms, is_new, rank}
  snapshot.headlines = {{{"B new", "https://b/2", "b"}, 4, 3000, true, 1},
                        {{"A two", "https://a/2", "a"}, 2, 2000, false, 0},
                        {{"A one", "https://a/1", "a"}, 3, 2000, false, 2},
                        {{"B old", "https://b/1", "b"}, 1, 1000, false, 0}};
  auto titles = [](const news_snapshot& s) {
    std::vector<std::string> out;
    for (const auto& h : s.headlines)
      out.push_back(h.headline.title);
    return out;
  };
  news_query all;
  CHECK(titles(apply_query(snapshot, all)) ==
        std::vector<std::string>{"B new", "A two", "A one", "B old"});
  news_query b;
  b.sites = {"b"};
  CHECK(titles(apply_query(snapshot, b)) == std::vector<std::string>{"B old", "B new"});
  news_query a_and_b;
  a_and_b.sites = {"a", "b"};
  a_and_b.limit = 2;
  CHECK(titles(apply_query(snapshot, a_and_b)) == std::vector<std::string>{"B new", "A two"});
}
