// Story assignment against the anchors' duplicate rules, on headlines labelled with their Google
// News story (../shared/stories/uci-news-dev.csv), with unrelated headlines mixed in.
//
// The labelled file was crawled story by story, so its own order and timestamps give the answer
// away: every run shuffles the arrival order (seeded, so runs repeat) and spreads the times
// evenly over the file's span in that order. Scores are B-cubed precision, recall and F1
// averaged over the labelled headlines.
//
//   bench_stories LABELLED.csv UNRELATED.csv
//
// UNRELATED.csv has the columns ID,TITLE,URL,HOSTNAME and TIMESTAMP (bench/stories/run.sh makes
// it from the saved front pages of other years). Prints: the anchors' rules and ours on the
// labelled headlines alone (mean of several orders), ours with the unrelated mixed in (how many of
// them end up in a story of 3 or more, and in a labelled story), microseconds per headline, the
// labelled titles shown by 600 sites at once as bench/scale serves them (the largest story, and
// the stories holding more than one event; SHOW_MIXED=1 lists those with a title per event), and
// memory and live state at 10k, 100k and 1M headlines of a synthetic stream whose vocabulary never
// stops growing.
#include "server/stories/bcubed.hpp"
#include "server/stories/story_assigner.hpp"
#include "server/stories/story_file.hpp"
#include "server/words/language.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace stories = newsdesk::server::stories;
namespace words = newsdesk::server::words;

namespace {

struct row {
  std::string title;
  std::string url;
  std::string host;
  std::string label; // "" for an unrelated headline
  std::int64_t time_ms = 0;
  std::string language; // as labelled (the LANG column), "" when the file has none
};

std::vector<row> read_rows(const char* path, bool labelled) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "bench_stories: cannot read %s\n", path);
    std::exit(2);
  }
  stories::csv_reader reader(in);
  std::vector<std::string> fields;
  std::string error;
  reader.next(fields, error);
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < fields.size(); ++i)
    at[fields[i]] = i;
  for (const char* name : {"TITLE", "URL", "HOSTNAME"})
    if (at.count(name) == 0 ||
        (labelled && (at.count("STORY") == 0 || at.count("TIMESTAMP") == 0))) {
      std::fprintf(stderr, "bench_stories: %s lacks a column it needs\n", path);
      std::exit(2);
    }
  std::vector<row> rows;
  while (reader.next(fields, error)) {
    if (!error.empty() || fields.size() < at.size())
      continue;
    row r{fields[at["TITLE"]], fields[at["URL"]], fields[at["HOSTNAME"]], "", 0};
    if (labelled)
      r.label = fields[at["STORY"]];
    if (at.count("TIMESTAMP") != 0)
      r.time_ms = std::stoll(fields[at["TIMESTAMP"]]);
    if (at.count("LANG") != 0)
      r.language = fields[at["LANG"]];
    rows.push_back(std::move(r));
  }
  return rows;
}

using scores = stories::bcubed_scores;

// B-cubed over the rows with a label: `cluster[i]` is row i's predicted cluster.
scores bcubed(const std::vector<row>& rows, const std::vector<std::int64_t>& cluster) {
  std::vector<std::string> labels;
  labels.reserve(rows.size());
  for (const auto& r : rows)
    labels.push_back(r.label);
  return stories::bcubed(labels, cluster);
}

// --- the anchors: single link over every earlier headline, as their rules group duplicates ----

std::vector<std::string> lower_words(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (unsigned char c : text + " ") {
    if (std::isalnum(c) || c >= 0x80) {
      w += static_cast<char>(std::tolower(c));
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  return words;
}

// pg_trgm's trigrams: each word padded with two spaces before and one after.
std::vector<std::string> trigrams(const std::string& text) {
  std::set<std::string> set;
  for (const auto& w : lower_words(text)) {
    const auto padded = "  " + w + " ";
    for (std::size_t i = 0; i + 3 <= padded.size(); ++i)
      set.insert(padded.substr(i, 3));
  }
  return {set.begin(), set.end()};
}

double jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t both = 0;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i < *j)
      ++i;
    else if (*j < *i)
      ++j;
    else
      ++both, ++i, ++j;
  }
  const auto either = a.size() + b.size() - both;
  return either == 0 ? 0 : static_cast<double>(both) / static_cast<double>(either);
}

std::vector<std::int64_t> single_link(const std::vector<std::vector<std::string>>& sets,
                                      double threshold) {
  std::vector<std::int64_t> parent(sets.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](std::int64_t x) {
    while (parent[static_cast<std::size_t>(x)] != x)
      x = parent[static_cast<std::size_t>(x)] =
          parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  };
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (jaccard(sets[i], sets[j]) >= threshold)
        parent[static_cast<std::size_t>(find(static_cast<std::int64_t>(i)))] =
            find(static_cast<std::int64_t>(j));
  std::vector<std::int64_t> cluster(sets.size());
  for (std::size_t i = 0; i < sets.size(); ++i)
    cluster[i] = find(static_cast<std::int64_t>(i));
  return cluster;
}

// --- ours --------------------------------------------------------------------------------------

struct run_result {
  std::vector<std::int64_t> cluster;
  double microseconds_per_headline = 0;
};

// Each headline's language as the service finds it (words::headline_language): the labelled
// one taken as the site's declared language, unless `detect`, when only the title tells.
bool detect_languages = false;

run_result assign_all(const std::vector<row>& rows) {
  stories::story_assigner assigner;
  std::vector<std::int64_t> story(rows.size());
  std::unordered_map<std::int64_t, std::int64_t> merged;
  std::vector<stories::story_merge> merges;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    merges.clear();
    const auto language = words::headline_language(detect_languages ? "" : rows[i].language,
                                                   rows[i].title, rows[i].url);
    story[i] = assigner.assign({static_cast<std::int64_t>(i) + 1, rows[i].title, rows[i].url,
                                rows[i].host, rows[i].time_ms, language},
                               merges);
    for (const auto& m : merges)
      merged[m.from] = m.into;
  }
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  for (auto& s : story)
    for (auto it = merged.find(s); it != merged.end(); it = merged.find(s))
      s = it->second;
  return {story, took.count() / static_cast<double>(rows.size())};
}

// `labelled` in a random order (and `unrelated` at random places), times spread evenly over
// the labelled file's span in arrival order; with `own_times`, unrelated headlines keep theirs
// (other years).
std::vector<row> arrival(const std::vector<row>& labelled, const std::vector<row>& unrelated,
                         unsigned seed, bool own_times = false) {
  std::vector<row> rows = labelled;
  rows.insert(rows.end(), unrelated.begin(), unrelated.end());
  std::mt19937_64 random(seed);
  std::shuffle(rows.begin(), rows.end(), random);
  std::int64_t first = labelled.front().time_ms;
  std::int64_t last = first;
  for (const auto& r : labelled) {
    first = std::min(first, r.time_ms);
    last = std::max(last, r.time_ms);
  }
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!own_times || !rows[i].label.empty() || rows[i].time_ms == 0)
      rows[i].time_ms = first + static_cast<std::int64_t>(static_cast<double>(last - first) *
                                                          static_cast<double>(i) /
                                                          static_cast<double>(rows.size()));
  return rows;
}

constexpr unsigned orders = 10;

struct mixed_result {
  scores labelled;        // over the labelled headlines, mean of the orders
  double in_3 = 0;        // share of the unrelated headlines in a story of 3 or more
  double in_labelled = 0; // share of them in a story with a labelled headline
  // Share of them in a story of 3 or more made of unrelated headlines only: the saved pages'
  // own events (several headlines of one page about one event), not headlines pulled into a
  // labelled story.
  double in_3_own = 0;
};

// The labelled headlines with the unrelated ones mixed in, in `orders` random orders.
mixed_result mix(const std::vector<row>& labelled, const std::vector<row>& unrelated,
                 bool own_times) {
  mixed_result result;
  if (unrelated.empty())
    return result;
  const double n = static_cast<double>(unrelated.size());
  for (unsigned seed = 1; seed <= orders; ++seed) {
    const auto rows = arrival(labelled, unrelated, seed, own_times);
    const auto ours = assign_all(rows);
    const auto s = bcubed(rows, ours.cluster);
    result.labelled.precision += s.precision / orders;
    result.labelled.recall += s.recall / orders;
    std::map<std::int64_t, std::size_t> size;
    std::set<std::int64_t> with_label;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      ++size[ours.cluster[i]];
      if (!rows[i].label.empty())
        with_label.insert(ours.cluster[i]);
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].label.empty())
        continue;
      const bool big = size[ours.cluster[i]] >= 3;
      result.in_3 += (big ? 1 : 0) / n / orders;
      result.in_3_own += (big && !with_label.count(ours.cluster[i]) ? 1 : 0) / n / orders;
      result.in_labelled += static_cast<double>(with_label.count(ours.cluster[i])) / n / orders;
    }
  }
  return result;
}

// --- other languages ----------------------------------------------------------------------------

// Which part of a labelled file a story is in: by a hash of its label (FNV-1a), a third held out
// while developing ("held-out"), the rest to develop on ("dev").
bool held_out(const std::string& label) {
  std::uint32_t hash = 2166136261u;
  for (char c : label)
    hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return hash % 3 == 0;
}

// B-cubed of each language's headlines (scored apart; assigned in one stream), and of all.
std::map<std::string, scores> per_language(const std::vector<row>& rows,
                                           const std::vector<std::int64_t>& cluster) {
  std::map<std::string, std::vector<std::string>> labels;
  std::map<std::string, std::vector<std::int64_t>> groups;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (const auto& key : {rows[i].language, std::string("all")}) {
      labels[key].push_back(rows[i].label);
      groups[key].push_back(cluster[i]);
    }
  std::map<std::string, scores> out;
  for (const auto& [key, l] : labels)
    out[key] = stories::bcubed(l, groups[key]);
  return out;
}

// The rows in the order of their times (as they arrived), or shuffled by `seed` (times kept).
std::vector<row> ordered(std::vector<row> rows, unsigned seed) {
  if (seed == 0)
    std::stable_sort(rows.begin(), rows.end(),
                     [](const row& a, const row& b) { return a.time_ms < b.time_ms; });
  else
    std::shuffle(rows.begin(), rows.end(), std::mt19937_64(seed));
  return rows;
}

// Scores per language of a file with a LANG column, in time order and as the mean of random
// orders, with each headline's language declared (the LANG column, as a site declares it) or
// detected from its title; the dev and held-out parts alone, then the whole file.
void languages_report(const std::vector<row>& all) {
  std::printf("\nper language (B-cubed; each part's stream assigned alone; P R F1):\n");
  std::printf("%-34s", "");
  std::set<std::string> languages;
  for (const auto& r : all)
    languages.insert(r.language);
  for (const auto& l : languages)
    std::printf(" %-17s", l.c_str());
  std::printf(" %-17s\n", "all");
  for (const char* part : {"dev", "held-out", "whole"}) {
    std::vector<row> rows;
    for (const auto& r : all)
      if (std::string(part) == "whole" || held_out(r.label) == (std::string(part) == "held-out"))
        rows.push_back(r);
    for (bool detect : {false, true}) {
      detect_languages = detect;
      for (unsigned runs : {1U, orders}) {
        std::map<std::string, scores> mean;
        for (unsigned seed = 0; seed < runs; ++seed) {
          const auto order = ordered(rows, runs == 1 ? 0 : seed + 1);
          for (const auto& [key, sc] : per_language(order, assign_all(order).cluster)) {
            mean[key].precision += sc.precision / runs;
            mean[key].recall += sc.recall / runs;
          }
        }
        const std::string name = std::string(part) + (detect ? ", detected" : ", declared") +
                                 (runs == 1 ? ", time order" : ", 10 orders");
        std::printf("%-34s", name.c_str());
        for (const auto& l : languages)
          std::printf(" %.2f %.2f %.3f", mean[l].precision, mean[l].recall, mean[l].f1());
        std::printf(" %.2f %.2f %.3f\n", mean["all"].precision, mean["all"].recall,
                    mean["all"].f1());
      }
    }
  }
  detect_languages = false;
}

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return 0;
}

// A stream that never ends and whose words never stop coming: real titles with a third of
// their words replaced by words drawn from an ever-growing made-up vocabulary, 20 a minute.
void stream_memory(const std::vector<row>& titles) {
  stories::story_assigner assigner;
  std::mt19937_64 random(7);
  std::vector<stories::story_merge> merges;
  const long before = rss_kib();
  std::int64_t time_ms = 1'700'000'000'000;
  const auto start = std::chrono::steady_clock::now();
  std::size_t report = 10'000;
  for (std::size_t i = 1; i <= 1'000'000; ++i) {
    const auto& base = titles[random() % titles.size()];
    std::string title;
    for (const auto& w : lower_words(base.title)) {
      if (random() % 3 == 0)
        title += "w" + std::to_string(random() % (50 + i)) + " ";
      else
        title += w + " ";
    }
    time_ms += 3000;
    merges.clear();
    assigner.assign({static_cast<std::int64_t>(i), title, base.url, base.host, time_ms}, merges);
    if (i == report) {
      const std::chrono::duration<double, std::micro> took =
          std::chrono::steady_clock::now() - start;
      std::printf("  %9zu headlines: RSS +%6.1f MB, %6zu live stories, %7zu counted words, "
                  "%.1f us per headline so far\n",
                  i, static_cast<double>(rss_kib() - before) / 1024, assigner.live_stories(),
                  assigner.counted_terms(), took.count() / static_cast<double>(i));
      report *= 10;
    }
  }
}

// --- many sites showing the labelled headlines at once --------------------------------------

// What bench/scale serves at `sites` sites: each site's front page shows `per_site` labelled
// titles (drawn as its siteserver draws them, so one title is on several sites, each with its
// own link), every site read within one refresh round of `round_ms`. Prints the scores, the
// largest story against the largest true event among what was shown, and the stories that
// hold more than one event: those whose most common label is under 90% of their headlines.
void many_sites(const std::vector<row>& labelled, std::size_t sites, std::size_t per_site) {
  constexpr std::int64_t round_ms = 5 * 60 * 1000;
  std::vector<row> rows;
  const std::int64_t start = labelled.front().time_ms;
  for (std::size_t i = 0; i < sites; ++i)
    for (std::size_t k = 0; k < per_site; ++k) {
      auto r = labelled[(i * 7919 + k * 104729) % labelled.size()];
      r.url += "?site=" + std::to_string(i);
      r.host = "site" + std::to_string(i) + ".example";
      r.time_ms =
          start + static_cast<std::int64_t>(i) * round_ms / static_cast<std::int64_t>(sites);
      rows.push_back(std::move(r));
    }
  std::map<std::string, std::size_t> event_size;
  for (const auto& r : rows)
    ++event_size[r.label];
  std::size_t largest_event = 0;
  for (const auto& [label, n] : event_size)
    largest_event = std::max(largest_event, n);
  scores mean;
  std::size_t largest = 0;
  double mixed_stories = 0;
  double mixed_share = 0;
  for (unsigned seed = 1; seed <= 3; ++seed) {
    auto order = rows;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    std::stable_sort(order.begin(), order.end(),
                     [](const row& a, const row& b) { return a.time_ms < b.time_ms; });
    const auto ours = assign_all(order);
    const auto s = bcubed(order, ours.cluster);
    mean.precision += s.precision / 3;
    mean.recall += s.recall / 3;
    std::map<std::int64_t, std::map<std::string, std::size_t>> labels_of;
    for (std::size_t i = 0; i < order.size(); ++i)
      ++labels_of[ours.cluster[i]][order[i].label];
    for (const auto& [story, labels] : labels_of) {
      std::size_t size = 0;
      std::size_t top = 0;
      for (const auto& [label, n] : labels) {
        size += n;
        top = std::max(top, n);
      }
      largest = std::max(largest, size);
      if (10 * top < 9 * size) {
        if (std::getenv("SHOW_MIXED") && seed == 1) {
          std::printf("  mixed story of %zu:", size);
          for (const auto& [label, n] : labels)
            if (n * 50 >= size)
              std::printf(" %s=%zu", label.c_str(), n);
          std::printf("\n");
          std::set<std::string> shown_labels;
          for (std::size_t i = 0; i < order.size(); ++i)
            if (ours.cluster[i] == story && labels.at(order[i].label) * 50 >= size &&
                shown_labels.insert(order[i].label).second)
              std::printf("      %s: %s\n", order[i].label.c_str(), order[i].title.c_str());
        }
        mixed_stories += 1.0 / 3;
        mixed_share += static_cast<double>(size) / static_cast<double>(order.size()) / 3;
      }
    }
  }
  std::printf("%zu sites showing %zu labelled titles each (%zu headlines, one round; 3 orders):\n"
              "  P %.3f R %.3f F1 %.3f; largest story %zu (largest event shown %zu); "
              "stories of more than one event: %.1f holding %.1f%% of the headlines\n",
              sites, per_site, rows.size(), mean.precision, mean.recall, mean.f1(), largest,
              largest_event, mixed_stories, 100 * mixed_share);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: bench_stories LABELLED.csv UNRELATED.csv [LANGUAGES.csv]\n");
    return 2;
  }
  if (argc == 4) { // LANGUAGES.csv: labelled headlines with a LANG column
    const auto rows = read_rows(argv[3], true);
    if (rows.empty() || rows.front().language.empty()) {
      std::fprintf(stderr, "bench_stories: %s has no rows with a LANG column\n", argv[3]);
      return 2;
    }
    languages_report(rows);
    if (std::getenv("LANGUAGES_ONLY"))
      return 0;
  }
  const auto labelled = read_rows(argv[1], true);
  const auto unrelated = read_rows(argv[2], false);
  if (labelled.empty()) {
    std::fprintf(stderr, "bench_stories: no labelled rows in %s\n", argv[1]);
    return 2;
  }
  std::set<std::string> labels;
  for (const auto& r : labelled)
    labels.insert(r.label);
  std::printf("%zu labelled headlines in %zu stories; %zu unrelated headlines\n\n", labelled.size(),
              labels.size(), unrelated.size());

  // QUICK=1: our scores only (for tuning), without the anchors and the long stream.
  const bool quick = std::getenv("QUICK") != nullptr;
  std::printf("%-52s %6s %6s %6s\n", "method (B-cubed over the labelled headlines)", "P", "R",
              "F1");
  auto print = [](const char* name, scores s) {
    std::printf("%-52s %6.3f %6.3f %6.3f\n", name, s.precision, s.recall, s.f1());
  };
  if (!quick) {
    std::vector<std::vector<std::string>> titles;
    std::vector<std::vector<std::string>> grams;
    std::vector<std::vector<std::string>> words;
    for (const auto& r : labelled) {
      auto w = lower_words(r.title);
      std::string joined;
      for (const auto& x : w)
        joined += x + " ";
      titles.push_back({joined});
      grams.push_back(trigrams(r.title));
      std::sort(w.begin(), w.end());
      w.erase(std::unique(w.begin(), w.end()), w.end());
      words.push_back(w);
    }
    print("same normalised title (FreshRSS)", bcubed(labelled, single_link(titles, 1.0)));
    print("trigram similarity >= 0.75 (Tiny Tiny RSS)", bcubed(labelled, single_link(grams, 0.75)));
    print("trigram similarity >= 0.30", bcubed(labelled, single_link(grams, 0.30)));
    print("word Jaccard >= 0.25 (NewsBlur-like)", bcubed(labelled, single_link(words, 0.25)));
  }

  std::vector<double> speed;
  scores alone;
  for (unsigned seed = 1; seed <= orders; ++seed) {
    auto rows = arrival(labelled, {}, seed);
    auto ours = assign_all(rows);
    speed.push_back(ours.microseconds_per_headline);
    auto s = bcubed(rows, ours.cluster);
    alone.precision += s.precision / orders;
    alone.recall += s.recall / orders;
  }
  print("newsdesk stories (mean of 10 random orders)", alone);
  const auto spread = mix(labelled, unrelated, false);
  print("  unrelated mixed in, their times spread among these", spread.labelled);
  const auto own = mix(labelled, unrelated, true);
  print("  unrelated mixed in at their own times (other years)", own.labelled);
  std::printf(
      "\nunrelated headlines (%zu) in a story of 3 or more (of them, in one of unrelated headlines "
      "only) / in a labelled story:\n"
      "  times spread among the labelled: %5.1f%% (%4.1f%%) / %4.1f%%\n"
      "  at their own times:              %5.1f%% (%4.1f%%) / %4.1f%%   (goal: <= 5%% in a story "
      "of 3+)\n",
      unrelated.size(), 100 * spread.in_3, 100 * spread.in_3_own, 100 * spread.in_labelled,
      100 * own.in_3, 100 * own.in_3_own, 100 * own.in_labelled);
  std::sort(speed.begin(), speed.end());
  std::printf("assignment: %.2f us per headline (median of %u runs of %zu headlines)\n\n",
              speed[speed.size() / 2], orders, labelled.size());

  many_sites(labelled, 600, 30);
  if (quick)
    return 0;
  std::printf("a stream with an ever-growing vocabulary, 20 headlines a minute:\n");
  auto titles = labelled;
  titles.insert(titles.end(), unrelated.begin(), unrelated.end());
  stream_memory(titles);
  return 0;
}
