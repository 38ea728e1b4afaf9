#include "server/words/language.hpp"

#include <doctest/doctest.h>

using namespace newsdesk::server::words;

TEST_CASE("a declared language tag is read as its primary language") {
  CHECK(language_tag("de") == "de");
  CHECK(language_tag("en-GB") == "en");
  CHECK(language_tag("pt_BR") == "pt");
  CHECK(language_tag(" DE ") == "de");
  CHECK(language_tag("zh-Hant-TW") == "zh");
  CHECK(language_tag("iw") == "he");
  CHECK(language_tag("nb-NO") == "no");
  CHECK(language_tag("").empty());
  CHECK(language_tag("x-klingon").empty());
  CHECK(language_tag("und").empty());
  CHECK(language_tag("*").empty());
  CHECK(language_tag("english").empty());
}

TEST_CASE("a title's language is detected by CLD2 and checked against its script") {
  CHECK(detect_language("東京で震度5強の地震　けが人の情報なし") == "ja");
  CHECK(detect_language("中超第二轮：上海海港胜山东泰山") == "zh");
  CHECK(detect_language("한국 야구, 체코 꺾고 WBC 첫 승") == "ko");
  CHECK(detect_language("الهلال يتعادل مع النصر في ديربي الرياض") == "ar");
  CHECK(detect_language("Сильное землетрясение произошло в Японии") == "ru");
  CHECK(detect_language("Erdbeben der Stärke 6,4 erschüttert die Osttürkei") == "de");
  CHECK(detect_language("Le gouvernement présente son budget pour l'année prochaine aux députés") ==
        "fr");
  // A title of a few words may be taken for another language: a declared one is better.
  CHECK(headline_language("fr", "Tokyo : un séisme de magnitude 5 secoue la capitale japonaise") ==
        "fr");
  CHECK(detect_language("Apple unveils a new iPhone with a faster chip and longer battery") ==
        "en");
  CHECK(detect_language("2026 - 3:1").empty()); // no letters
}

TEST_CASE("a headline is read in its declared language unless its script says otherwise") {
  CHECK(headline_language("de-DE", "Merz stellt Rente mit 63 infrage") == "de");
  CHECK(headline_language("pt-BR", "Lula volta a criticar os juros altos do Banco Central") ==
        "pt");
  // A Japanese site whose template says lang="en": the title is Japanese.
  CHECK(headline_language("en", "東京で震度5強の地震") == "ja");
  CHECK(headline_language("zh", "東京で震度5強の地震") == "ja"); // kana: not Chinese
  CHECK(headline_language("ja", "東京都知事選") == "ja");        // kanji only: as declared
  CHECK(headline_language("ru", "Tesla opens a factory") != "ru");
  CHECK(headline_language("sr", "Vučić najavio izbore") == "sr"); // Serbian in Latin letters
  CHECK(headline_language("", "Erdbeben der Stärke 6,4 erschüttert die Osttürkei") == "de");
  CHECK(headline_language("nonsense!", "Erdbeben der Stärke 6,4 erschüttert die Osttürkei") ==
        "de");
  CHECK(headline_language("fr", "2026").size() == 2); // no letters: as declared
}
