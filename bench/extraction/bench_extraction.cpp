// How much of what detection returns is a story, and how many of a page's main headlines it
// finds, on the saved front pages, against labels written by hand (labels.txt, see its header).
// For each labelled page: links returned, story links among them, the share that is not a story
// link (furniture %), recall of the labelled main headlines, and titles that still begin with a
// number or end with "By Name" (to be read: "10 things to know" is a title, "1 UK economy" from a
// most-read list is not).
//
// Usage: bench_extraction [--show] [--labels FILE] [--pages DIR]
//   --show  also lists each page's returned links that are not story links, the labelled
//           headlines it missed, and the suspect titles.
// Exit status 1 when a page misses a goal (recall >= 90%, furniture <= 5%), 2 on bad input.
#include "bench_support.hpp"
#include "scrapers/detect.hpp"
#include "scrapers/dom.hpp"

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace scrapers = newsdesk::scrapers;

struct labelled_page {
  std::string file;
  std::string url;
  std::string set; // "dev" or "held-out": how the page was used while writing the rules
  std::vector<std::regex> story;
  std::vector<std::string> story_sources;
  std::set<std::string> headlines;
};

// labels.txt: "page FILE URL SET", then "story REGEX" and "headline URL" lines for that page.
// '#' starts a comment line.
std::vector<labelled_page> read_labels(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(path + ": cannot read the labels");
  std::vector<labelled_page> pages;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line.front() == '#')
      continue;
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    auto fail = [&](const std::string& what) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": " + what);
    };
    if (kind == "page") {
      labelled_page p;
      words >> p.file >> p.url >> p.set;
      if (p.set.empty())
        fail("expected page FILE URL SET");
      pages.push_back(std::move(p));
    } else if (pages.empty()) {
      fail("a " + kind + " line before any page line");
    } else if (kind == "story") {
      std::string source;
      words >> source;
      pages.back().story.emplace_back(source);
      pages.back().story_sources.push_back(source);
    } else if (kind == "headline") {
      std::string url;
      words >> url;
      pages.back().headlines.insert(url);
    } else {
      fail("unknown line kind '" + kind + "'");
    }
  }
  return pages;
}

bool rank_like(const std::string& title) {
  static const std::regex rank(R"(^\d{1,3}([.):]\s|\s+[A-Z"'‘“]|[A-Z][a-z]))");
  return std::regex_search(title, rank);
}

bool byline_like(const std::string& title) {
  // "By Name" at the end, or "- by Name": a lowercase "by" inside a sentence ("Created by
  // Technology") is the sentence's.
  static const std::regex byline(
      R"((\s(By|BY)|[|\-–—·]\s*by)\s+[A-Z][\w'.-]*(\s+[A-Z][\w'.-]*){0,3}$)");
  return std::regex_search(title, byline);
}

} // namespace

int main(int argc, char** argv) {
  bool show = false;
  std::string labels_path = NEWSDESK_EXTRACTION_LABELS;
  std::string pages_dir = NEWSDESK_SHARED_PAGES;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--show")
      show = true;
    else if (arg == "--labels" && i + 1 < argc)
      labels_path = argv[++i];
    else if (arg == "--pages" && i + 1 < argc)
      pages_dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_extraction [--show] [--labels FILE] [--pages DIR]\n");
      return 2;
    }
  }
  std::vector<labelled_page> pages;
  try {
    pages = read_labels(labels_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }

  std::printf("%-34s %-8s %8s %7s %10s %8s %6s %7s\n", "page", "set", "returned", "story",
              "furniture", "recall", "rank?", "byline?");
  bool goals_met = true;
  for (const auto& p : pages) {
    auto html = newsdesk::bench::read_file(pages_dir + "/" + p.file);
    if (!html) {
      std::printf("%-34s missing from %s\n", p.file.c_str(), pages_dir.c_str());
      goals_met = false;
      continue;
    }
    auto found = scrapers::detect_headlines(scrapers::dom::document::parse(*html), p.url, "bench");
    std::vector<const scrapers::headline*> furniture, ranks, bylines;
    std::set<std::string> returned;
    std::size_t stories = 0;
    for (const auto& h : found) {
      returned.insert(h.url);
      bool story = p.headlines.count(h.url) > 0;
      for (const auto& re : p.story)
        story = story || std::regex_search(h.url, re);
      stories += story;
      if (!story)
        furniture.push_back(&h);
      if (rank_like(h.title))
        ranks.push_back(&h);
      if (byline_like(h.title))
        bylines.push_back(&h);
    }
    std::size_t hits = 0;
    std::vector<std::string> missed;
    for (const auto& u : p.headlines) {
      if (returned.count(u))
        ++hits;
      else
        missed.push_back(u);
    }
    const double furniture_share =
        found.empty() ? 0 : 100.0 * static_cast<double>(furniture.size()) / found.size();
    const double recall =
        p.headlines.empty() ? 100 : 100.0 * static_cast<double>(hits) / p.headlines.size();
    std::printf("%-34s %-8s %8zu %7zu %9.1f%% %4zu/%-3zu %6zu %7zu\n", p.file.c_str(),
                p.set.c_str(), found.size(), stories, furniture_share, hits, p.headlines.size(),
                ranks.size(), bylines.size());
    if (!p.headlines.empty() && (recall < 90 || furniture_share > 5))
      goals_met = false;
    if (show) {
      for (const auto* h : furniture)
        std::printf("    not a story: %s  <%s>\n", h->title.c_str(), h->url.c_str());
      for (const auto& u : missed)
        std::printf("    missed: %s\n", u.c_str());
      for (const auto* h : ranks)
        std::printf("    begins with a number: %s\n", h->title.c_str());
      for (const auto* h : bylines)
        std::printf("    ends like a byline: %s\n", h->title.c_str());
    }
  }
  std::printf("goals (recall >= 90%%, furniture <= 5%% on every labelled page): %s\n",
              goals_met ? "met" : "NOT met");
  return goals_met ? 0 : 1;
}
