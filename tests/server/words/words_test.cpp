#include "server/words/fold.hpp"
#include "server/words/words.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace newsdesk::server::words;

namespace {

// The compared form (folded, stemmed) of each word of `text` in `language`, stop words too.
std::vector<std::string> texts(std::string_view text, std::string_view language) {
  std::vector<std::string> out;
  for (const auto& w : words_of(text, language))
    out.push_back(w.text);
  return out;
}

template <class List> bool has(const List& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The one word `word` is in `language`.
std::string one(std::string_view word, std::string_view language) {
  auto list = texts(word, language);
  REQUIRE(list.size() == 1);
  return list.front();
}

bool stop(std::string_view word, std::string_view language) {
  auto list = words_of(word, language);
  REQUIRE(list.size() == 1);
  return list.front().stop;
}

} // namespace

TEST_CASE("scripts without spaces are cut into words by ICU's dictionaries") {
  const auto ja = texts("東京で震度5強の地震　けが人の情報なし", "ja");
  CHECK(has(ja, "地震"));
  CHECK(has(ja, "東京"));
  CHECK(has(ja, "5"));
  CHECK_FALSE(has(ja, "東京で震度5強の地震")); // not one run, as before ICU
  const auto zh = texts("四川雅安发生5.2级地震", "zh");
  CHECK(has(zh, "地震"));
  CHECK(has(zh, "5.2"));
  CHECK(texts("ข่าวแผ่นดินไหว", "th").size() >= 2); // Thai, cut by ICU's Thai dictionary
  // Full-width letters and digits are their ordinary forms; a letter with digits stays a word.
  CHECK(has(texts("ＪＡＸＡ、Ｈ３の打ち上げ成功", "ja"), "jaxa"));
  CHECK(has(texts("H3ロケット打ち上げ成功", "ja"), "h3"));
}

TEST_CASE("kana keep their voicing marks when folded; Latin letters lose their accents") {
  CHECK(fold_text("が") != fold_text("か"));
  CHECK(fold_text("ＧＡＳ ガス") == "gas ガス");
  CHECK(fold_text("Élysée") == "elysee");
}

TEST_CASE("Snowball stems each language's inflections into one word") {
  CHECK(one("Erdbebens", "de") == one("Erdbeben", "de"));
  CHECK(one("Séismes", "fr") == one("séisme", "fr"));
  CHECK(one("seisme", "fr") == one("séisme", "fr")); // a title written without its accents
  CHECK(one("terremotos", "es") == one("terremoto", "es"));
  CHECK(one("землетрясения", "ru") == one("землетрясение", "ru"));
  CHECK(one("companies", "en") == one("company", "en"));
  // No stemmer for the language: the word as folded.
  CHECK(one("Erdbebens", "") == "erdbebens");
  CHECK(has(stemming_languages(), "de"));
  CHECK_FALSE(has(stemming_languages(), "ja"));
}

TEST_CASE("Slavic words are their first six letters: a root's forms Snowball leaves apart meet") {
  // Snowball gives "камчатк" and "камчатск", "оренбуржь" and "оренбургск".
  CHECK(one("Камчатке", "ru") == one("Камчатском", "ru"));
  CHECK(one("Оренбуржья", "ru") == one("Оренбургской", "ru"));
  CHECK(one("Камчатке", "ru") == "камчат");
  // Words that differ within six letters stay apart; short words are whole.
  CHECK(one("правительство", "ru") != one("правило", "ru"));
  CHECK(one("ЦСКА", "ru") == "цска");
  // Languages without the rule keep their stems whole.
  CHECK(one("government", "en") != one("governor", "en"));
  CHECK(one("Erdbebenopfer", "de").size() > 6);
}

TEST_CASE("each language's stop words, from its list") {
  CHECK(stop("der", "de"));
  CHECK_FALSE(stop("der", "en"));
  CHECK(stop("des", "fr"));
  CHECK(stop("the", "en"));
  CHECK(stop("says", "en")); // en-headlines.txt
  CHECK(stop("の", "ja"));
  CHECK(stop("في", "ar"));
  CHECK_FALSE(stop("erdbeben", "de"));
  CHECK(has_stop_words("ko"));
  CHECK_FALSE(has_stop_words(""));
}

TEST_CASE("numbers are one word, the same whichever marks group and divide them") {
  CHECK(one("7,1", "de") == "7.1");
  CHECK(one("7.1", "en") == "7.1");
  CHECK(one("1,000", "en") == "1000");
  CHECK(one("1.000", "de") == "1000");
  CHECK(one("1,234.5", "en") == "1234.5");
  CHECK(one("1.234,5", "de") == "1234.5");
  CHECK(one("٧٫١", "ar").substr(0, 1) == "7"); // Arabic-Indic digits read as their values
  const auto w = words_of("7,1", "de");
  REQUIRE(w.size() == 1);
  CHECK(w[0].number);
  CHECK(texts("Stärke 6,4.", "de").back() == "6.4"); // the full stop ends the sentence
  CHECK(texts("1,5km", "de") == std::vector<std::string>{"1.5", "km"});
}

TEST_CASE("Korean eojeol lose the particle they end with") {
  CHECK(one("지진이", "ko") == "지진");
  CHECK(one("지진으로", "ko") == "지진");
  CHECK(one("체코에", "ko") == "체코");
  CHECK(one("한국이", "ko") == one("한국", "ko"));
  CHECK(one("소", "ko") == "소"); // nothing left to take a particle from
}

TEST_CASE("capitals are told; invalid UTF-8 separates words and never throws") {
  const auto w = words_of("Fed official SAYS", "en");
  REQUIRE(w.size() == 3);
  CHECK(w[0].capitalised);
  CHECK_FALSE(w[1].capitalised);
  CHECK(w[2].all_capitals);
  CHECK(texts("bad\xff"
              "byte",
              "de")
            .size() == 2);
  CHECK_NOTHROW(words_of("\xe3\x81", "ja"));
  CHECK(texts(std::string(100, 'a'), "en").empty()); // longer than max_word_bytes
}
