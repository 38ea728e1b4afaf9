#include "server/stories/bcubed.hpp"
#include "server/stories/headline_terms.hpp"
#include "server/stories/story_assigner.hpp"
#include "server/stories/story_file.hpp"
#include "tests/support/test_paths.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

using namespace newsdesk::server::stories;

namespace {

constexpr std::int64_t hour_ms = 3600 * 1000;

// Assigns titles in order (ids 1, 2, ...; an hour apart unless given) and returns each one's
// story after every merge.
struct stream {
  story_assigner assigner;
  std::int64_t next_id = 1;
  std::int64_t time_ms = 1'700'000'000'000;
  std::vector<story_merge> merges;

  explicit stream(story_limits limits = {})
      : assigner(limits) {}

  std::int64_t add(std::string_view title, std::string_view url = "",
                   std::string_view site = "a.example", std::string_view language = "en") {
    time_ms += hour_ms / 60;
    return assigner.assign({next_id++, title, url, site, time_ms, language}, merges);
  }
};

bool has_term(const std::vector<headline_term>& terms, std::string_view text, float boost = 0) {
  return std::any_of(terms.begin(), terms.end(), [&](const headline_term& t) {
    return t.text == text && (boost == 0 || t.boost == boost);
  });
}

// The rows of a labelled file of ../shared/stories: its title, URL, host and story, and (when
// the file has those columns) its language and time.
struct labelled_row {
  std::string title, url, host, story, language;
  std::int64_t time_ms = 0;
};

std::vector<labelled_row> read_labelled(const std::string& name) {
  const std::filesystem::path path = std::string(NEWSDESK_SHARED_STORIES) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "the labelled headlines are missing: " << path.string());
  csv_reader reader(in);
  std::vector<std::string> fields;
  std::string error;
  REQUIRE(reader.next(fields, error));
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < fields.size(); ++i)
    column[fields[i]] = i;
  std::vector<labelled_row> rows;
  while (reader.next(fields, error)) {
    REQUIRE(error.empty());
    labelled_row r{fields[column.at("TITLE")], fields[column.at("URL")],
                   fields[column.at("HOSTNAME")], fields[column.at("STORY")]};
    if (column.count("LANG") != 0)
      r.language = fields[column["LANG"]];
    if (column.count("TIMESTAMP") != 0)
      r.time_ms = std::stoll(fields[column["TIMESTAMP"]]);
    rows.push_back(std::move(r));
  }
  return rows;
}

} // namespace

TEST_CASE("a headline's terms: folded, stemmed, without stop words, names weighted up") {
  auto terms =
      headline_terms("Fed's Charles Plosser sees high bar for change in tapering",
                     "https://example.com/business/plosser-warns-on-taper-pace.html", "en");
  CHECK(has_term(terms, "plosser", 1.5F)); // a name in a sentence-case title
  CHECK(has_term(terms, "charl", 1.5F));   // Snowball's English stem
  CHECK(has_term(terms, "fed", 1.0F));     // the first word is capitalised anyway
  CHECK(has_term(terms, "see", 1.0F));
  CHECK_FALSE(has_term(terms, "for"));
  CHECK_FALSE(has_term(terms, "s"));
  CHECK(has_term(terms, "warn", 0.5F));  // from the slug only
  CHECK(has_term(terms, "taper", 1.0F)); // "tapering": in the title too
  CHECK_FALSE(has_term(terms, "html"));

  // Title case marks nothing: no word is weighted up.
  auto title_case = headline_terms("Fed Official Says Weak Data Caused By Weather", "", "en");
  CHECK(std::all_of(title_case.begin(), title_case.end(),
                    [](const headline_term& t) { return t.boost == 1.0F; }));
  // Accents and case are folded as search folds them.
  CHECK(headline_terms("Élysée talks", "", "en").at(0).text ==
        headline_terms("ELYSEE talks", "", "en").at(0).text);
  // A slug made of ids gives nothing.
  CHECK(headline_terms("x", "https://example.com/a/12345/67890", "en").empty());
}

TEST_CASE("a headline's terms are its language's words") {
  // Snowball's stems, the language's stop words; numbers whichever the decimal mark.
  auto de = headline_terms("Schweres Erdbeben der Stärke 6,4 erschüttert die Türkei", "", "de");
  CHECK(has_term(de, "erdbeb"));
  CHECK(has_term(de, "6.4"));
  CHECK_FALSE(has_term(de, "der"));
  CHECK(has_term(headline_terms("Zahl der Toten nach dem Erdbebens steigt", "", "de"), "erdbeb"));
  // Japanese cut into words by ICU, its particles left out.
  auto ja = headline_terms("東京で震度5強の地震　けが人の情報なし", "", "ja");
  CHECK(has_term(ja, "地震"));
  CHECK(has_term(ja, "東京"));
  CHECK_FALSE(has_term(ja, "の"));
  CHECK(ja.size() >= 5);
}

// The titles of the issue (and a Chinese and a Korean pair): two outlets' headlines on one
// event are one story, among the same language's other headlines of the day.
TEST_CASE("one event told by two outlets is one story in Japanese, French, German, Chinese and "
          "Korean") {
  struct pair_case {
    std::string_view language;
    std::vector<std::string_view> others; // the day's other headlines in that language
    std::string_view first, second;
  };
  const std::vector<pair_case> cases{
      {"ja",
       {"日経平均、一時500円安　米金利上昇を嫌気", "大谷翔平が今季10号ホームラン",
        "政府、少子化対策の新たな財源案を提示", "東京都で大雨　交通に乱れ"},
       "東京で震度5強の地震　けが人の情報なし",
       "東京都で震度5強の地震、けが人の情報なし 気象庁"},
      {"fr",
       {"Le gouvernement présente son budget pour 2027", "Ligue 1 : le PSG s'impose à Marseille",
        "Grève à la SNCF : le trafic perturbé ce week-end", "Tokyo : la Bourse recule de 2 %"},
       "Séisme de magnitude 5 à Tokyo : aucun blessé signalé",
       "Tokyo : un séisme de magnitude 5 secoue la capitale japonaise"},
      {"de",
       {"Bundestag beschließt neues Heizungsgesetz", "Bayern gewinnt in Dortmund mit 3:1",
        "Warnstreik legt Flughäfen in Frankfurt und München lahm",
        "Japan: Börse in Tokio im Minus"},
       "Erdbeben der Stärke 5 erschüttert Tokio – keine Verletzten",
       "Tokio: Schweres Erdbeben der Stärke 5, keine Berichte über Verletzte"},
      {"zh",
       {"国务院常务会议部署稳就业措施", "中超：上海海港主场击败山东泰山", "北京今日最高气温19度",
        "央行宣布下调存款准备金率"},
       "四川雅安发生5.2级地震 暂无人员伤亡报告",
       "雅安5.2级地震：目前暂无人员伤亡"},
      {"ko",
       {"한국 야구, 체코 꺾고 WBC 첫 승", "정부, 내년 예산안 국회 제출",
        "서울 아파트값 3주 연속 상승", "삼성전자 1분기 영업이익 발표"},
       "일본 도쿄서 규모 5.3 지진 발생…인명 피해 없어",
       "도쿄 규모 5.3 지진, 인명 피해 보고 없어"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.language);
    stream s;
    std::vector<std::int64_t> others;
    int site = 0;
    for (auto title : c.others)
      others.push_back(s.add(title, "", "site" + std::to_string(site++), c.language));
    const auto first = s.add(c.first, "", "one.example", c.language);
    const auto second = s.add(c.second, "", "two.example", c.language);
    CHECK(first == second);
    for (auto o : others)
      CHECK(s.assigner.current(o) != s.assigner.current(first));
  }
}

TEST_CASE("no story mixes languages, even on the same words") {
  stream s;
  const auto en = s.add("Real Madrid 3-1 Barcelona: Mbappe double", "", "one.example", "en");
  const auto es = s.add("Real Madrid 3-1 Barcelona: Mbappe double", "", "two.example", "es");
  CHECK(en != es);
  CHECK(s.add("Real Madrid 3-1 Barcelona as Mbappe scores a double", "", "three.example", "en") ==
        en);
  CHECK(s.add("Real Madrid 3-1 Barcelona: doblete de Mbappe", "", "four.example", "es") == es);
}

TEST_CASE("the same event from two sites is one story; another event is another") {
  stream s;
  auto a = s.add("Malaysia Airlines flight MH370 vanishes over the South China Sea", "", "cnn.com");
  auto other = s.add("Apple releases iOS 7.1 with CarPlay support", "", "bbc.co.uk");
  auto b = s.add("Search for missing Malaysia Airlines flight MH370 widens", "", "bbc.co.uk");
  CHECK(a == 1);
  CHECK(other == 2);
  CHECK(b == a);
  // Two headlines of the same site can belong to one story.
  CHECK(s.add("Malaysia Airlines MH370: search widens again", "", "cnn.com") == a);
  CHECK(s.add("Bundesliga: Bayern beat Hertha to clinch title", "", "cnn.com") == 5);
}

TEST_CASE("one site's headlines on one subject need a closer resemblance than another site's") {
  // The same two headlines: from two sites they are one event; from one site, a front page's
  // several headlines on one subject (a war, a president), which are more often a topic.
  for (const bool same_site : {false, true}) {
    stream s;
    auto a = s.add("Iran war: US strikes hit Tehran overnight", "", "one.example");
    auto b = s.add("Oil jumps as Iran war strikes hit supplies", "",
                   same_site ? "one.example" : "two.example");
    CAPTURE(same_site);
    CHECK((a == b) == !same_site);
  }
}

TEST_CASE("two titles that share a couple of words but tell different events stay apart") {
  stream s;
  auto a = s.add("US judge arrested for allowing undocumented man to escape immigration agents", "",
                 "one.example");
  auto b = s.add("Federal agents break undocumented man's car window", "", "two.example");
  CHECK(a != b);
  // A second title of the first event, from a third site, is close enough.
  CHECK(s.add("Judge arrested, accused of helping undocumented man escape agents", "",
              "three.example") == a);
}

TEST_CASE("in a thin stream, titles hours apart sharing one name are one story; farther apart, or "
          "in a dense stream, they are not") {
  constexpr std::int64_t t0 = 1'700'000'000'000;
  // Two outlets' titles of one event whose only common word is "Lula" (Portuguese's stemmer
  // makes "candidato" and "candidatura" two words), `gap` apart, among `others` headlines of
  // the language within the hour around them.
  auto one_story = [&](std::int64_t gap, int others, int old_items = 0) {
    story_assigner assigner;
    std::vector<story_merge> merges;
    std::int64_t id = 1;
    auto add = [&](std::string title, std::string_view site, std::int64_t time_ms) {
      return assigner.assign({id++, title, "", site, time_ms, "pt"}, merges);
    };
    // The language's headlines span a day: a stream is judged thin or dense only then.
    add("Governo aprova novo regime de arrendamento para estudantes", "p.example", t0);
    add("Câmara de Lisboa aprova novas ciclovias", "p.example", t0 + 24 * hour_ms);
    for (int i = 0; i < others; ++i) {
      add("palavra" + std::to_string(i) + "a outra" + std::to_string(i) + "b", "o.example",
          t0 + 12 * hour_ms + i * 60'000);
      // A feed's old items, dated when they were published, arriving among today's.
      for (int k = 0; k < old_items; ++k)
        add("antiga" + std::to_string(i) + "x" + std::to_string(k) + " notícia", "f.example",
            t0 - (400 + 7 * i + k) * 24 * hour_ms);
    }
    const auto a = add("Lula confirma que será candidato à reeleição em outubro", "folha.example",
                       t0 + 12 * hour_ms);
    const auto b = add("Lula oficializa pré-candidatura e provoca oposição", "estadao.example",
                       t0 + 12 * hour_ms + gap);
    return assigner.current(a) == assigner.current(b);
  };
  CHECK(one_story(2 * hour_ms, 0));
  CHECK_FALSE(one_story(8 * hour_ms, 0));  // not close in time: one word is not enough
  CHECK_FALSE(one_story(2 * hour_ms, 30)); // a dense stream: one word is not enough
  // Old items arriving among today's leave today's stream as dense as it is.
  CHECK_FALSE(one_story(2 * hour_ms, 30, 3));
}

TEST_CASE("a headline that came before its story grew is taken in once the story is large") {
  stream s;
  // Alone, one shared word ("Titanfall") is not enough to join a story of one.
  auto early = s.add("Titanfall wallpapers for your phone", "", "w.example");
  auto story = s.add("Titanfall review roundup", "", "r1.example");
  CHECK(story != early);
  CHECK(s.add("Titanfall review: the verdicts are in", "", "r2.example") == story);
  CHECK(s.merges.empty());
  // Three headlines, all with the word and nearly every headline with it: it names the story,
  // and the early headline, judged as if it joined now, would be taken in; it is once a second
  // site's headline says so too (into the older id).
  CHECK(s.add("Titanfall review: critics agree on the shooter", "", "r3.example") == story);
  CHECK(s.merges.empty());
  auto fourth = s.add("Titanfall review: a shooter critics agree on", "", "r4.example");
  CHECK(fourth == early);
  REQUIRE(s.merges.size() == 1);
  CHECK(s.merges[0] == story_merge{story, early});
  CHECK(s.assigner.current(story) == early);
}

TEST_CASE("the words of one name are one piece of evidence, not two") {
  auto terms =
      headline_terms("Messi's visit to the White House ends his silence on politics", "", "en");
  auto white = std::find_if(terms.begin(), terms.end(),
                            [](const headline_term& t) { return t.text == "white"; });
  auto house = std::find_if(terms.begin(), terms.end(),
                            [](const headline_term& t) { return t.text == "hous"; });
  REQUIRE(white != terms.end());
  REQUIRE(house != terms.end());
  CHECK(white->name != 0);
  CHECK(white->name == house->name);
  CHECK(has_term(terms, "silenc")); // a word on its own
  CHECK(std::find_if(terms.begin(), terms.end(), [](const headline_term& t) {
          return t.text == "silenc";
        })->name == 0);

  // Two headlines that share only "White House" are two stories.
  stream s;
  auto a = s.add("What to know about Abrego Garcia's deportation case as White House digs in");
  auto b = s.add("Messi's visit to the White House ends his silence on politics");
  CHECK(a != b);
}

TEST_CASE("assignment is deterministic for an arrival order") {
  const std::vector<std::string> titles = {"GM recall probe widens",
                                           "Stocks slip on China data",
                                           "GM faces criminal probe over recall",
                                           "Oil dips on China data",
                                           "GM CEO Barra apologises for recall",
                                           "Titanfall review roundup"};
  std::vector<std::int64_t> first;
  std::vector<std::int64_t> second;
  stream one;
  stream two;
  for (const auto& t : titles) {
    first.push_back(one.add(t));
    second.push_back(two.add(t));
  }
  CHECK(first == second);
}

TEST_CASE("two stories that come to resemble each other merge into the older, once headlines of "
          "two sites bridge them") {
  stream s;
  auto a = s.add("alpha bravo echo", "", "one.example");
  auto b = s.add("charlie delta echo", "", "two.example");
  REQUIRE(a != b);
  // One site's headline bridging the two joins the one it resembles most; the stories wait.
  CHECK(s.add("alpha bravo charlie echo", "", "three.example") == a);
  CHECK(s.merges.empty());
  // Another headline of the same site is not a second witness.
  CHECK(s.add("alpha bravo charlie echo golf", "", "three.example") == a);
  CHECK(s.merges.empty());
  // Another site's is.
  auto joined = s.add("alpha bravo charlie delta echo foxtrot", "", "four.example");
  CHECK(joined == a);
  REQUIRE(s.merges.size() == 1);
  CHECK(s.merges[0] == story_merge{b, a});
  CHECK(s.assigner.current(b) == a);
  CHECK(s.assigner.current(a) == a);
  CHECK(s.assigner.live_stories() == 1);
}

TEST_CASE("a headline joining the titles of two unrelated stories joins neither, from any site") {
  stream s;
  auto a = s.add("Doge cuts hit veterans' hospital spending", "", "one.example");
  auto b = s.add("Panama ports deal signed with BlackRock consortium", "", "two.example");
  REQUIRE(a != b);
  for (const auto* site : {"three.example", "four.example", "five.example"}) {
    auto bridge = s.add("Doge cuts hit veterans' hospital spending Panama ports deal signed with "
                        "BlackRock consortium",
                        "", site);
    CHECK(bridge != a);
    CHECK(bridge != b);
  }
  // The two stories stay two (the bridges may tell a story of their own).
  CHECK(s.merges.empty());
  CHECK(s.assigner.current(a) == a);
  CHECK(s.assigner.current(b) == b);
}

TEST_CASE("a story stops accepting headlines after its quiet period") {
  stream s(story_limits{std::chrono::hours(2)});
  auto a = s.add("Pizza maker Sbarro files for Chapter 11 bankruptcy", "", "one.example");
  s.time_ms += 3 * hour_ms;
  auto later = s.add("Pizza maker Sbarro files for Chapter 11 bankruptcy", "", "one.example");
  CHECK(later != a);
  CHECK(s.add("Sbarro files for Chapter 11 bankruptcy protection", "", "two.example") == later);
}

TEST_CASE("a story spans no longer than an event: an ongoing subject starts a new story") {
  stream s(
      story_limits{.quiet_period = std::chrono::hours(36), .max_span = std::chrono::hours(48)});
  const char* titles[] = {"Floods in Valencia: rescue teams reach cut-off villages",
                          "Valencia floods: rescue teams search cut-off villages",
                          "Rescue teams in Valencia floods reach more villages",
                          "Valencia floods rescue teams reach the last villages"};
  // A headline every 20 hours keeps the story from going quiet, but not open for ever.
  std::vector<std::int64_t> stories;
  for (int i = 0; i < 4; ++i) {
    stories.push_back(s.add(titles[i], "", i % 2 == 0 ? "one.example" : "two.example"));
    s.time_ms += 20 * hour_ms;
  }
  CHECK(stories[1] == stories[0]);
  CHECK(stories[2] == stories[0]); // 40 hours after it began
  CHECK(stories[3] != stories[0]); // 60 hours after: a new story, which the next days join
  CHECK(s.add(titles[0], "", "three.example") == stories[3]);
}

TEST_CASE("observing what was decided rebuilds the same state") {
  const std::vector<std::string> titles = {
      "Netflix raises prices for new subscribers", "Comcast and Time Warner Cable agree to merge",
      "Netflix price rise for new members", "Regulators question the Comcast Time Warner deal",
      "Netflix to raise subscription prices"};
  const std::vector<std::string> sites = {"a.example", "b.example", "c.example", "d.example",
                                          "e.example"};
  stream original;
  std::vector<std::int64_t> stories;
  for (std::size_t i = 0; i < titles.size(); ++i)
    stories.push_back(original.add(titles[i], "", sites[i]));
  story_assigner replayed;
  std::int64_t time_ms = 1'700'000'000'000;
  for (std::size_t i = 0; i < titles.size(); ++i) {
    time_ms += hour_ms / 60;
    replayed.observe({static_cast<std::int64_t>(i) + 1, titles[i], "", sites[i], time_ms},
                     original.assigner.current(stories[i]));
  }
  CHECK(replayed.last_id() == original.assigner.last_id());
  CHECK(replayed.live_stories() == original.assigner.live_stories());
  std::vector<story_merge> merges;
  const std::string next = "Comcast Time Warner Cable merger faces regulators";
  auto by_original = original.add(next, "", "f.example");
  auto by_replayed = replayed.assign({6, next, "", "f.example", original.time_ms}, merges);
  CHECK(by_original == by_replayed);
  CHECK(by_original == stories[1]);
}

TEST_CASE("live stories and counted words stay within their limits") {
  story_limits limits;
  limits.max_live_stories = 50;
  limits.max_terms = 500;
  stream s(limits);
  for (int i = 0; i < 5000; ++i)
    s.add("w" + std::to_string(i) + " x" + std::to_string(i * 7) + " y" + std::to_string(i * 13));
  CHECK(s.assigner.live_stories() <= 50);
  CHECK(s.assigner.counted_terms() <= 500);
  CHECK(s.assigner.last_id() == 5000);
}

TEST_CASE("titles of nothing but stop words, punctuation or invalid UTF-8 start stories of "
          "their own") {
  stream s;
  CHECK(s.add("") == 1);
  CHECK(s.add("The and of") == 2);
  CHECK(s.add("\xff\xfe\x80 !!!") == 3);
  CHECK(s.add("") == 4);
}

// A floor under the score on the labelled development file, in random arrival orders with the
// times spread, so a change that makes grouping worse fails here (bench/stories measures it).
TEST_CASE("stories on the labelled development headlines keep B-cubed precision >= 0.85 and F1 >= "
          "0.83") {
  auto rows = read_labelled("uci-news-dev.csv");
  REQUIRE(rows.size() > 2000);
  for (unsigned seed : {1U, 2U, 3U}) {
    std::mt19937_64 random(seed);
    std::shuffle(rows.begin(), rows.end(), random);
    story_assigner assigner;
    std::vector<story_merge> merges;
    std::vector<std::int64_t> stories;
    std::vector<std::string> labels;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto time_ms = 1'394'470'000'000 + static_cast<std::int64_t>(i) * 40'000;
      stories.push_back(assigner.assign({static_cast<std::int64_t>(i) + 1, rows[i].title,
                                         rows[i].url, rows[i].host, time_ms, "en"},
                                        merges));
      labels.push_back(rows[i].story);
    }
    for (auto& s : stories)
      s = assigner.current(s);
    const auto score = bcubed(labels, stories);
    INFO("seed " << seed << ": P " << score.precision << " R " << score.recall);
    CHECK(score.precision >= 0.85);
    CHECK(score.f1() >= 0.83);
  }
}

// A floor under the scores on the hand-written headlines in 11 languages, scored per language as
// bench/stories does (there: the figures, the goal of F1 >= 0.75 in every language not yet met),
// in random arrival orders with their own times: precision in every language, F1 over all.
TEST_CASE("stories on the multilingual development headlines keep B-cubed precision >= 0.8 in "
          "every language and F1 >= 0.72 over all") {
  auto rows = read_labelled("multilingual-dev.csv");
  REQUIRE(rows.size() > 400);
  for (unsigned seed : {1U, 2U, 3U}) {
    std::shuffle(rows.begin(), rows.end(), std::mt19937_64(seed));
    story_assigner assigner;
    std::vector<story_merge> merges;
    std::vector<std::int64_t> stories;
    for (std::size_t i = 0; i < rows.size(); ++i)
      stories.push_back(
          assigner.assign({static_cast<std::int64_t>(i) + 1, rows[i].title, rows[i].url,
                           rows[i].host, rows[i].time_ms, rows[i].language},
                          merges));
    std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::int64_t>>> parts;
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (const auto& key : {rows[i].language, std::string("all")}) {
        parts[key].first.push_back(rows[i].story);
        parts[key].second.push_back(assigner.current(stories[i]));
      }
    for (const auto& [language, part] : parts) {
      const auto score = bcubed(part.first, part.second);
      INFO("seed " << seed << ", " << language << ": P " << score.precision << " R "
                   << score.recall);
      CHECK(score.precision >= 0.8);
      if (language == "all")
        CHECK(score.f1() >= 0.72);
    }
  }
}
