#include "server/stories/story_assigner.hpp"

#include "server/stories/headline_terms.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace newsdesk::server::stories {

namespace {

// Tuned on ../shared/stories (bench/stories prints what they give). Precision matters more than
// recall: a wrong merge misleads the reader, a missed one only repeats a headline.
// A headline joins the story it resembles most, when the cosine of the two is at least
// join_similarity and at least join_coherence times the story's coherence (the mean cosine of
// its own headlines to it): a tight story asks for a close resemblance, a broad one less.
constexpr double join_similarity = 0.1;
constexpr double join_coherence = 0.35;
// Two stories merge when the cosine of their centroids is at least merge_similarity, or
// small_merge_similarity when either has fewer than min_merge_size headlines: a small story's
// centroid is a headline or two, and two of those alike in a couple of broad words ("US",
// "president") are not one event; the pieces of a large story converge on its own words.
constexpr double merge_similarity = 0.2;
constexpr double small_merge_similarity = 0.35;
constexpr std::size_t min_merge_size = 3;
// Sharing one word is enough only with a story of at least min_named_story headlines, half of
// which have the word, when name_concentration of all headlines that have it are in the story.
constexpr std::size_t min_named_story = 3;
constexpr double name_concentration = 0.7;
// Words kept per story (its heaviest); the rest of its centroid is forgotten.
constexpr std::size_t max_story_terms = 64;
// Live stories listed per word (the newest); older ones are still found through their rarer
// words. Bounds the candidates scored per headline.
constexpr std::size_t max_postings = 24;
// Merges remembered for current() after they happened.
constexpr std::size_t max_remembered_merges = 100000;

struct story;

struct term_entry {
  double frequency = 0;         // headlines that had the word (halved when counts are)
  std::size_t references = 0;   // live stories whose centroid has it
  std::vector<story*> postings; // live stories with it, the newest last
};

// One word of a headline's or a story's vector.
struct weighted_term {
  term_entry* term = nullptr;
  float weight = 0;
  std::uint32_t headlines = 1; // in a story: how many of its headlines have the word
  std::uint8_t name = 0;       // in a headline: as headline_term::name (0 in a story)
};

using weighted = std::vector<weighted_term>; // sorted by term

bool by_term(const weighted_term& a, const weighted_term& b) {
  return a.term < b.term;
}

struct story {
  std::int64_t id = 0;
  weighted centroid; // the sum of its headlines' unit vectors, the heaviest words only
  double norm = 0;
  std::size_t size = 0;
  std::int64_t first_ms = 0; // its headlines' earliest and latest times
  std::int64_t last_ms = 0;
  std::uint64_t used = 0; // when it last gained a headline, in arrivals
};

// What `a` and `b` have in common: their dot product, how many pieces of evidence they share
// (words, the words of one name in `a` counting once), and (of `b`, the story) the last shared
// word.
struct overlap {
  double dot = 0;
  std::size_t shared = 0;
  const weighted_term* in_story = nullptr;
};

overlap common(const weighted& a, const weighted& b) {
  overlap o;
  std::uint32_t names_seen = 0;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (i->term < j->term) {
      ++i;
    } else if (j->term < i->term) {
      ++j;
    } else {
      o.dot += static_cast<double>(i->weight) * j->weight;
      if (i->name == 0 || (names_seen & (1U << i->name)) == 0)
        ++o.shared;
      names_seen |= i->name == 0 ? 0U : 1U << i->name;
      o.in_story = &*j;
      ++i;
      ++j;
    }
  }
  return o;
}

double length(const weighted& v) {
  double sum = 0;
  for (const auto& t : v)
    sum += static_cast<double>(t.weight) * t.weight;
  return std::sqrt(sum);
}

} // namespace

struct story_assigner::state {
  story_limits limits;
  std::unordered_map<std::string, term_entry> terms;
  double documents = 0;
  std::unordered_map<std::int64_t, story> live;
  std::set<std::pair<std::uint64_t, std::int64_t>> by_use; // (used, id) of live stories
  std::unordered_map<std::int64_t, std::int64_t> merged;   // from -> into
  std::deque<std::int64_t> merge_order;                    // `merged` keys, oldest first
  std::uint64_t arrivals = 0;
  std::int64_t last_id = 0;
  weighted scratch;

  // The headline's words, counted into the frequencies, as a unit vector of their weights.
  weighted vector_of(const story_headline& h) {
    // Before this headline's words are counted: forgetting must not drop one of them.
    if (terms.size() + max_terms_per_headline > limits.max_terms)
      forget_rare_terms();
    auto words = headline_terms(h.title, h.url);
    documents += 1;
    weighted v;
    v.reserve(words.size());
    for (auto& word : words) {
      auto& entry = terms[std::move(word.text)];
      entry.frequency += 1;
      const double rarity = std::log(1 + documents / entry.frequency);
      v.push_back({&entry, static_cast<float>(word.boost * rarity), 1, word.name});
    }
    std::sort(v.begin(), v.end(), by_term);
    const double n = length(v);
    for (auto& t : v)
      t.weight = static_cast<float>(t.weight / n);
    return v;
  }

  // Halves every count and drops the words no story uses whose count falls below one: the
  // vocabulary stays bounded while what is frequent now stays known as frequent.
  void forget_rare_terms() {
    documents /= 2;
    for (auto it = terms.begin(); it != terms.end();) {
      it->second.frequency /= 2;
      if (it->second.references == 0 && it->second.frequency < 1)
        it = terms.erase(it);
      else
        ++it;
    }
  }

  // Counts an arrival; past the limit, the stories that gained nothing for longest close.
  // (Not by the clock: a stream whose times jump, as a file of several years' headlines in a
  // random order does, would close every story at its first headline from a later year.)
  void advance(std::int64_t id) {
    last_id = std::max(last_id, id);
    ++arrivals;
    while (live.size() >= limits.max_live_stories && !by_use.empty())
      close(by_use.begin()->second);
  }

  // Whether stories spanning [first_a, last_a] and [first_b, last_b] are close enough in time
  // to be one: neither quiet for longer than the quiet period before the other began.
  bool near_in_time(std::int64_t first_a, std::int64_t last_a, std::int64_t first_b,
                    std::int64_t last_b) const {
    const auto quiet = limits.quiet_period.count();
    return first_a <= last_b + quiet && first_b <= last_a + quiet;
  }

  void close(std::int64_t id) {
    auto it = live.find(id);
    if (it == live.end())
      return;
    for (auto& t : it->second.centroid)
      release(t.term, &it->second);
    by_use.erase({it->second.used, id});
    live.erase(it);
  }

  static void release(term_entry* term, story* s) {
    --term->references;
    auto& p = term->postings;
    p.erase(std::remove(p.begin(), p.end(), s), p.end());
  }

  static void post(term_entry* term, story* s) {
    auto& p = term->postings;
    if (std::find(p.begin(), p.end(), s) != p.end())
      return;
    if (p.size() >= max_postings)
      p.erase(p.begin());
    p.push_back(s);
  }

  story& open(std::int64_t id, std::int64_t time_ms) {
    auto& s = live[id];
    s.id = id;
    s.first_ms = s.last_ms = time_ms;
    s.used = arrivals;
    by_use.insert({s.used, id});
    return s;
  }

  // Adds `v` (a headline, or another story's centroid: `size` headlines from `first_ms` to
  // `last_ms`) to story `s`.
  void join(story& s, const weighted& v, std::size_t size, std::int64_t first_ms,
            std::int64_t last_ms) {
    auto& sum = scratch; // reused: joins allocate only when a centroid outgrows it
    sum.clear();
    auto i = s.centroid.begin();
    auto j = v.begin();
    while (i != s.centroid.end() || j != v.end()) {
      if (j == v.end() || (i != s.centroid.end() && i->term < j->term)) {
        sum.push_back(*i++);
      } else if (i == s.centroid.end() || j->term < i->term) {
        sum.push_back({j->term, j->weight, j->headlines, 0});
        ++j->term->references;
        post(j->term, &s);
        ++j;
      } else {
        sum.push_back({i->term, i->weight + j->weight, i->headlines + j->headlines, 0});
        post(i->term, &s);
        ++i;
        ++j;
      }
    }
    if (sum.size() > max_story_terms) {
      std::nth_element(sum.begin(), sum.begin() + max_story_terms, sum.end(),
                       [](const auto& a, const auto& b) { return a.weight > b.weight; });
      for (auto k = sum.begin() + max_story_terms; k != sum.end(); ++k)
        release(k->term, &s);
      sum.resize(max_story_terms);
      std::sort(sum.begin(), sum.end(), by_term);
    }
    s.centroid.swap(sum);
    s.norm = length(s.centroid);
    s.size += size;
    s.first_ms = std::min(s.first_ms, first_ms);
    s.last_ms = std::max(s.last_ms, last_ms);
    by_use.erase({s.used, s.id});
    s.used = arrivals;
    by_use.insert({s.used, s.id});
  }

  // The cosine a headline needs to join story `s`: a story whose headlines are much alike
  // (the mean cosine of its headlines to its centroid is high) asks for a close resemblance, a
  // broad one accepts less.
  static double join_threshold(const story& s) {
    const double coherence = s.size > 0 ? s.norm / static_cast<double>(s.size) : 1;
    return std::max(join_similarity, join_coherence * coherence);
  }

  // Whether one word is enough to join story `s`: it is in most of the story's headlines and
  // most headlines that have it are in the story (a name the story is about, like "Titanfall";
  // not one that many stories share, like a head of state's).
  static bool names_story(const weighted_term& t, const story& s) {
    return s.size >= min_named_story && 2 * t.headlines >= s.size &&
           t.headlines >= name_concentration * t.term->frequency;
  }

  // Live stories sharing a word with `v`, except `except`, that could pass most_similar's
  // tests: those sharing two words or more, and (`joining` a headline) the stories large
  // enough to be named by one word. Most live stories are a single headline, so this spares
  // comparing whole vectors with most of them.
  static std::vector<const story*> candidates(const weighted& v, const story* except,
                                              bool joining) {
    std::vector<const story*> listed;
    for (const auto& t : v)
      listed.insert(listed.end(), t.term->postings.begin(), t.term->postings.end());
    std::sort(listed.begin(), listed.end());
    std::vector<const story*> found;
    for (auto i = listed.begin(); i != listed.end();) {
      auto run = std::find_if(i, listed.end(), [&](const story* s) { return s != *i; });
      if (*i != except && (run - i >= 2 || (joining && (*i)->size >= min_named_story)))
        found.push_back(*i);
      i = run;
    }
    return found;
  }

  // Of the stories found through the words of `probe`, the one most similar to `v` (`v_size`
  // headlines, length `v_norm`, spanning [first_ms, last_ms]) and its score (>= 1: similar
  // enough); ties go to the older story.
  std::pair<std::int64_t, double> most_similar(const weighted& probe, const weighted& v,
                                               double v_norm, std::size_t v_size,
                                               std::int64_t first_ms, std::int64_t last_ms,
                                               const story* except, bool joining) const {
    std::pair<std::int64_t, double> best{0, 0};
    if (v_norm <= 0)
      return best;
    for (const story* candidate : candidates(probe, except, joining)) {
      const auto& s = *candidate;
      if (!near_in_time(first_ms, last_ms, s.first_ms, s.last_ms))
        continue;
      const auto o = common(v, s.centroid);
      if (o.shared == 0 || (o.shared == 1 && !(joining && names_story(*o.in_story, s))))
        continue;
      const double cosine = s.norm > 0 ? o.dot / (v_norm * s.norm) : 0;
      const double needed = joining                                     ? join_threshold(s)
                            : std::min(s.size, v_size) < min_merge_size ? small_merge_similarity
                                                                        : merge_similarity;
      const double score = cosine / needed;
      if (score > best.second || (score == best.second && s.id < best.first))
        best = {s.id, score};
    }
    return best;
  }

  // Merges the live stories `a` and `b` into the older; returns the survivor.
  std::int64_t merge(std::int64_t a, std::int64_t b) {
    const auto into = std::min(a, b);
    const auto from = std::max(a, b);
    auto& absorbed = live.at(from);
    const auto centroid = absorbed.centroid;
    const auto size = absorbed.size;
    const auto first = absorbed.first_ms;
    const auto last = absorbed.last_ms;
    close(from);
    join(live.at(into), centroid, size, first, last);
    remember_merge(from, into);
    return into;
  }

  void remember_merge(std::int64_t from, std::int64_t into) {
    if (merged.emplace(from, into).second)
      merge_order.push_back(from);
    if (merge_order.size() > max_remembered_merges) {
      merged.erase(merge_order.front());
      merge_order.pop_front();
    }
  }

  // Merges story `id` with every live story that has come to resemble it; returns what `id`
  // is now.
  std::int64_t merge_resembling(std::int64_t id, const weighted& headline,
                                std::vector<story_merge>& merges) {
    for (;;) {
      const auto& s = live.at(id);
      // Only what shares words with the headline just joined can have come closer.
      auto [other, score] =
          most_similar(headline, s.centroid, s.norm, s.size, s.first_ms, s.last_ms, &s, false);
      if (other == 0 || score < 1)
        return id;
      auto into = merge(id, other);
      merges.push_back({std::max(id, other), into});
      id = into;
    }
  }

  std::int64_t resolve(std::int64_t story) const {
    for (std::size_t hops = 0; hops < max_remembered_merges; ++hops) {
      auto it = merged.find(story);
      if (it == merged.end())
        break;
      story = it->second;
    }
    return story;
  }
};

story_assigner::story_assigner(story_limits limits)
    : state_(std::make_unique<state>()) {
  state_->limits = limits;
}

story_assigner::~story_assigner() = default;

std::int64_t story_assigner::assign(const story_headline& headline,
                                    std::vector<story_merge>& merges) {
  auto& s = *state_;
  s.advance(headline.id);
  const auto v = s.vector_of(headline);
  const auto t = headline.time_ms;
  auto [best, score] = s.most_similar(v, v, v.empty() ? 0 : 1, 1, t, t, nullptr, true);
  if (best == 0 || score < 1) {
    // Nothing to compare on (a title of stop words) or nothing alike: a story of its own.
    auto& opened = s.open(headline.id, headline.time_ms);
    s.join(opened, v, 1, t, t);
    return headline.id;
  }
  s.join(s.live.at(best), v, 1, t, t);
  return s.merge_resembling(best, v, merges);
}

void story_assigner::observe(const story_headline& headline, std::int64_t story) {
  auto& s = *state_;
  s.advance(headline.id);
  const auto v = s.vector_of(headline);
  const auto t = headline.time_ms;
  story = s.resolve(story);
  auto it = s.live.find(story);
  auto& joined = it != s.live.end() ? it->second : s.open(story, headline.time_ms);
  s.join(joined, v, 1, t, t);
}

void story_assigner::observe(const story_merge& merge) {
  auto& s = *state_;
  const auto from = s.resolve(merge.from);
  const auto into = s.resolve(merge.into);
  if (from == into)
    return;
  if (s.live.count(from) != 0 && s.live.count(into) != 0)
    s.merge(from, into);
  else
    s.remember_merge(from, into);
}

std::int64_t story_assigner::current(std::int64_t story) const {
  return state_->resolve(story);
}

std::int64_t story_assigner::last_id() const {
  return state_->last_id;
}

std::size_t story_assigner::live_stories() const {
  return state_->live.size();
}

std::size_t story_assigner::counted_terms() const {
  return state_->terms.size();
}

} // namespace newsdesk::server::stories
