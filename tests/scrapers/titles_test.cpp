#include "scrapers/titles.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::scrapers;

TEST_CASE("titles: Unicode spaces collapse and invisible characters are dropped") {
  // NBSP, thin space, ideographic space, and ASCII whitespace: one space each run.
  CHECK(normalise_title_text("Storm\u00a0hits \u2009 the\u3000coast\n") == "Storm hits the coast");
  // Soft hyphen, zero-width space, word joiner, left-to-right mark: gone, joining their sides.
  CHECK(normalise_title_text("Ex\u00adtra\u200bordinary\u2060 vote\u200e count") ==
        "Extraordinary vote count");
  // The joiners that emoji and scripts need stay.
  CHECK(normalise_title_text("Family \U0001F468\u200d\U0001F469 trip") ==
        "Family \U0001F468\u200d\U0001F469 trip");
  CHECK(normalise_title_text("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 news") ==
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 news");
  CHECK(normalise_title_text("\u00a0\u2003 ") == "");
  // Bytes that are not UTF-8 are kept as they were (never a reason to lose a title).
  CHECK(normalise_title_text("caf\xe9  menu") == "caf\xe9 menu");
}

TEST_CASE("titles: a trailing byline comes off, a Title Case phrase does not") {
  CHECK(strip_byline("Asia's winners and losers in the trade war By Karishma Vaswani") ==
        "Asia's winners and losers in the trade war");
  CHECK(strip_byline("What the vote means for Europe By Jane Doe and John Smith") ==
        "What the vote means for Europe");
  CHECK(strip_byline("Ursula's plan explained By Ursula von der Leyen") ==
        "Ursula's plan explained");
  CHECK(strip_byline("Markets in turmoil | by Jane Q. Public") == "Markets in turmoil");
  CHECK(strip_byline("MARKETS FALL - By Jane Doe") == "MARKETS FALL");
  // Title Case: "By Falling Tree" could be the headline's own words.
  CHECK(strip_byline("Man Crushed By Falling Tree") == "Man Crushed By Falling Tree");
  // A lowercase "by" in the sentence is the sentence's.
  CHECK(strip_byline("Six killed by Storm Ciaran") == "Six killed by Storm Ciaran");
  // Not names: a sentence goes on after "By".
  CHECK(strip_byline("Council votes to expand By the river park") ==
        "Council votes to expand By the river park");
  // Nothing would be left but one word.
  CHECK(strip_byline("Opinion By Jane Doe") == "Opinion By Jane Doe");
  CHECK(is_byline("By Karishma Vaswani"));
  CHECK(is_byline("by Jane Doe, John Smith and Ann Lee"));
  CHECK_FALSE(is_byline("By the numbers: the budget"));
  CHECK_FALSE(is_byline("Byelection called"));
}

TEST_CASE("titles: leading numbers are found, glued or spaced, and nothing else is") {
  auto spaced = leading_number_of("1 UK economy 'resilient' despite hit");
  REQUIRE(spaced);
  CHECK(spaced->value == 1);
  CHECK(spaced->title_start == 2);
  CHECK_FALSE(spaced->glued);
  auto glued = leading_number_of("10Pope Francis' funeral Mass details");
  REQUIRE(glued);
  CHECK(glued->value == 10);
  CHECK(glued->title_start == 2);
  CHECK(glued->glued);
  CHECK_FALSE(leading_number_of("5G masts go up across the city"));
  CHECK_FALSE(leading_number_of("3D printed homes arrive"));
  CHECK_FALSE(leading_number_of("2026 budget passes"));
  CHECK_FALSE(leading_number_of("UK economy grows"));
  CHECK_FALSE(leading_number_of("7"));
}

TEST_CASE("titles: words are counted by spaces, or by characters where scripts use none") {
  CHECK(title_words("Storm hits the coast") == 4);
  CHECK(title_words("Video") == 1);
  CHECK(title_words("") == 0);
  CHECK(title_words("速報") == 1);             // "breaking news": a label
  CHECK(title_words("日本の首相が辞任") == 4); // "Japan's prime minister resigns"
  CHECK(title_words("ข่าวด่วนวันนี้") >= 2);
  CHECK(title_words("Tokyo: 首相辞任") == 3);
}

TEST_CASE("a summary is not a title: a paragraph of sentences, or longer than a title runs") {
  CHECK(looks_like_summary("China’s export restrictions on seven types of rare earth minerals is "
                           "bad news for America’s cutting edge industries. And Trump has little "
                           "room to retaliate in kind."));
  CHECK(looks_like_summary("Officials said on Monday. The plant closes."));
  CHECK(looks_like_summary(std::string(301, 'a')));
  // Titles: one sentence, a question, abbreviations, a title with a full stop but one sentence.
  CHECK_FALSE(looks_like_summary("Stocks fall. Here’s why"));
  CHECK_FALSE(looks_like_summary("U.S. President signs the bill"));
  CHECK_FALSE(looks_like_summary("No. 1 seed crashes out in Paris."));
  CHECK_FALSE(looks_like_summary("Ousted Russian general will return to duty - but with a role "
                                 "that is ‘effectively a death sentence,’ expert says"));
  CHECK_FALSE(looks_like_summary(std::string(300, 'a')));
  CHECK_FALSE(looks_like_summary("東京で震度5強の地震。けが人の情報なし。"));
}
