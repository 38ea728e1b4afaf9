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
constexpr double join_coherence = 0.3;
// Two headlines make a story when their cosine is at least pair_similarity: what a story of
// one shows of its event is one title, and two titles sharing a couple of rare words
// ("undocumented man") are often two events.
constexpr double pair_similarity = 0.4;
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
// A headline joining a story that has one of its site's headlines already needs
// same_site_factor times the resemblance: one site's several headlines on one subject (a front
// page's live coverage of a war) are more often a topic than one event.
constexpr double same_site_factor = 2.0;
// A headline that resembles two stories, the second at least ambiguous_fraction of the first's
// score, while the two have less than unrelated_similarity in common, bridges two events
// (often a site joining two other sites' titles to steer their stories): it joins neither.
constexpr double ambiguous_fraction = 0.7;
constexpr double unrelated_similarity = 0.1;
// Bridges awaiting a second site (see confirmed()), the oldest forgotten past this many.
constexpr std::size_t max_pending_bridges = 4096;
// Sites listed per story; a story with more has many sources and is not one site's topic.
constexpr std::size_t max_story_sites = 16;
// Words kept per story (its heaviest); the rest of its centroid is forgotten.
constexpr std::size_t max_story_terms = 64;
// Live stories listed per word (the newest); older ones are still found through their rarer
// words. Bounds the candidates scored per headline.
constexpr std::size_t max_postings = 24;
// Merges remembered for current() after they happened.
constexpr std::size_t max_remembered_merges = 100000;
// The rules above ask for evidence against chance resemblance, whose odds grow with the number of
// stories near in time that a headline could resemble: in a dense stream (an English wire feed,
// eighty headlines an hour) two titles sharing one word are often two events. In a thin stream
// (a few sites of one language, a few headlines an hour) the stories near in time are few, while
// one event's headlines, worded freely by its outlets, often share a single name ("Malatya",
// "Petrobras") and little else. So where a language's stream is thin around a headline (fewer
// than thin_stream_headlines of its headlines within close_in_time either side), a headline and
// a story no more than close_in_time apart need thin_stream_factor times the resemblance, and
// one shared word is evidence enough; farther apart, or in a dense stream, the rules above hold
// as they are. An event's headlines come within hours of each other; close_in_time is the span
// of a day's news cycle in one place, well inside the quiet period. A stream is judged thin only
// once its language has headlines farther than close_in_time from the headline (and within the
// quiet period): at its start every stream looks thin.
// The ambiguity and two-site rules below still hold in a thin stream.
constexpr std::int64_t close_in_time_ms = 6 * 3600 * 1000;
constexpr std::size_t thin_stream_headlines = 20;
constexpr double thin_stream_factor = 0.3;

struct story;

struct term_entry {
  // When the word was first counted (1, 2, ...): vectors are sorted by it, so that the order of
  // sums and which of equal weights a story keeps never depend on where the heap put a word, and
  // the same arrival order always gives the same stories.
  std::uint64_t order = 0;
  double frequency = 0;         // headlines that had the word (halved when counts are)
  std::size_t references = 0;   // live stories whose centroid has it
  std::vector<story*> postings; // live stories with it, the newest last
};

// One word of a headline's or a story's vector.
struct weighted_term {
  term_entry* term = nullptr;
  std::uint64_t order = 0; // term->order, kept beside it: sorting reads no term
  float weight = 0;
  std::uint32_t headlines = 1; // in a story: how many of its headlines have the word
  std::uint8_t name = 0;       // in a headline: as headline_term::name (0 in a story)
};

using weighted = std::vector<weighted_term>; // sorted by term order

bool by_term(const weighted_term& a, const weighted_term& b) {
  return a.order < b.order;
}

struct story {
  std::int64_t id = 0;
  std::string language; // its headlines' (a story has one)
  weighted centroid;    // the sum of its headlines' unit vectors, the heaviest words only
  double norm = 0;
  std::size_t size = 0;
  std::int64_t first_ms = 0; // its headlines' earliest and latest times
  std::int64_t last_ms = 0;
  std::uint64_t used = 0; // when it last gained a headline, in arrivals
  // Hashes of its headlines' sites, the first max_story_sites of them.
  std::vector<std::uint32_t> sites;
};

// Whether every site of `small` has a headline in `large` already (as far as `large` lists).
bool same_sites(const story& small, const story& large) {
  return large.sites.size() < max_story_sites &&
         std::all_of(small.sites.begin(), small.sites.end(), [&](std::uint32_t site) {
           return std::find(large.sites.begin(), large.sites.end(), site) != large.sites.end();
         });
}

// How many of a language's headlines came when, to judge whether its stream is thin: counts
// per quarter of an hour of their times, the latest max_time_slots quarters kept. Counted by
// time, not by arrival: a stream whose times jump (a feed's old items, dated when published;
// a file of several years in a random order) leaves the present's density as it is.
struct language_times {
  static constexpr std::int64_t slot_ms = 15 * 60 * 1000;
  static constexpr std::size_t max_time_slots = 4096; // six weeks of a stream with no gap
  std::map<std::int64_t, std::uint32_t> per_slot;

  // Counts a headline of time `t`; returns whether the stream is thin around it: fewer than
  // thin_stream_headlines within close_in_time either side, once the language has headlines
  // more than close_in_time away from it (within the quiet period): at its start every stream
  // looks thin.
  bool thin_at(std::int64_t t, std::int64_t quiet_ms) {
    const auto slot = t >= 0 ? t / slot_ms : (t - slot_ms + 1) / slot_ms;
    ++per_slot[slot];
    if (per_slot.size() > max_time_slots)
      per_slot.erase(per_slot.begin());
    const auto close = close_in_time_ms / slot_ms;
    const auto quiet = std::max(quiet_ms / slot_ms, close + 1);
    std::size_t near = 0;
    for (auto it = per_slot.lower_bound(slot - close);
         it != per_slot.end() && it->first <= slot + close; ++it)
      near += it->second;
    if (near >= thin_stream_headlines)
      return false;
    const auto before = per_slot.lower_bound(slot - quiet);
    const bool earlier = before != per_slot.end() && before->first < slot - close;
    const auto after = per_slot.upper_bound(slot + close);
    const bool later = after != per_slot.end() && after->first <= slot + quiet;
    return earlier || later;
  }
};

std::uint32_t site_hash(std::string_view site) {
  return static_cast<std::uint32_t>(std::hash<std::string_view>{}(site));
}

// What `a` and `b` have in common: their dot product, how many pieces of evidence they share
// (words, the words of one name in `a` counting once), and (of `b`, the story) the last shared
// word.
struct overlap {
  double dot = 0;
  std::size_t shared = 0;
  const weighted_term* in_a = nullptr;
  const weighted_term* in_b = nullptr;
};

overlap common(const weighted& a, const weighted& b) {
  overlap o;
  std::uint32_t names_seen = 0;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (i->order < j->order) {
      ++i;
    } else if (j->order < i->order) {
      ++j;
    } else {
      o.dot += static_cast<double>(i->weight) * j->weight;
      if (i->name == 0 || (names_seen & (1U << i->name)) == 0)
        ++o.shared;
      names_seen |= i->name == 0 ? 0U : 1U << i->name;
      o.in_a = &*i;
      o.in_b = &*j;
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
  // Keyed by language and word ("de\x1f" "erdbeb"): a word of one language is not another's.
  std::unordered_map<std::string, term_entry> terms;
  // Headlines counted per language (halved with the words' counts): a word's rarity is among
  // the headlines of its own language.
  std::unordered_map<std::string, double> documents;
  // Per language, whether its stream is thin (see close_in_time_ms).
  std::unordered_map<std::string, language_times> recent;
  std::string key;                 // scratch for a term's key
  std::uint64_t terms_counted = 0; // the last term_entry::order given
  std::unordered_map<std::int64_t, story> live;
  std::set<std::pair<std::uint64_t, std::int64_t>> by_use; // (used, id) of live stories
  std::unordered_map<std::int64_t, std::int64_t> merged;   // from -> into
  std::deque<std::int64_t> merge_order;                    // `merged` keys, oldest first
  // Pairs of stories one site's headline bridged -> that site (confirmed()).
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> pending_bridges;
  std::deque<std::pair<std::int64_t, std::int64_t>> bridge_order; // its keys, oldest first
  std::uint64_t arrivals = 0;
  std::int64_t last_id = 0;
  weighted scratch;

  // The headline's words, counted into the frequencies, as a unit vector of their weights.
  weighted vector_of(const story_headline& h) {
    // Before this headline's words are counted: forgetting must not drop one of them.
    if (terms.size() + max_terms_per_headline > limits.max_terms)
      forget_rare_terms();
    auto words = headline_terms(h.title, h.url, h.language);
    auto& seen = documents[std::string(h.language)];
    seen += 1;
    weighted v;
    v.reserve(words.size());
    for (auto& word : words) {
      key.assign(h.language).append(1, '\x1f').append(word.text);
      auto& entry = terms[key];
      if (entry.order == 0)
        entry.order = ++terms_counted;
      entry.frequency += 1;
      const double rarity = std::log(1 + seen / entry.frequency);
      v.push_back({&entry, entry.order, static_cast<float>(word.boost * rarity), 1, word.name});
    }
    std::sort(v.begin(), v.end(), by_term);
    const double n = length(v);
    for (auto& t : v)
      t.weight = static_cast<float>(t.weight / n);
    return v;
  }

  // The headline as a story of one (not live: in no posting list).
  story story_of(const story_headline& h) {
    story one;
    one.id = h.id;
    one.language = h.language;
    one.centroid = vector_of(h);
    one.norm = one.centroid.empty() ? 0 : 1;
    one.size = 1;
    one.first_ms = one.last_ms = h.time_ms;
    one.sites = {site_hash(h.site)};
    return one;
  }

  // Halves every count and drops the words no story uses whose count falls below one: the
  // vocabulary stays bounded while what is frequent now stays known as frequent.
  void forget_rare_terms() {
    for (auto& [language, count] : documents)
      count /= 2;
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
  // to be one: neither quiet for longer than the quiet period before the other began, and
  // together no longer than an event's span.
  bool near_in_time(std::int64_t first_a, std::int64_t last_a, std::int64_t first_b,
                    std::int64_t last_b) const {
    const auto quiet = limits.quiet_period.count();
    return first_a <= last_b + quiet && first_b <= last_a + quiet &&
           std::max(last_a, last_b) - std::min(first_a, first_b) <= limits.max_span.count();
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

  story& open(std::int64_t id, std::int64_t time_ms, std::string_view language) {
    auto& s = live[id];
    s.id = id;
    s.language = language;
    s.first_ms = s.last_ms = time_ms;
    s.used = arrivals;
    by_use.insert({s.used, id});
    return s;
  }

  // Adds `other` (a headline as a story of one, or a story absorbed) to story `s`.
  void join(story& s, const story& other) {
    const auto& v = other.centroid;
    auto& sum = scratch; // reused: joins allocate only when a centroid outgrows it
    sum.clear();
    auto i = s.centroid.begin();
    auto j = v.begin();
    while (i != s.centroid.end() || j != v.end()) {
      if (j == v.end() || (i != s.centroid.end() && i->order < j->order)) {
        sum.push_back(*i++);
      } else if (i == s.centroid.end() || j->order < i->order) {
        sum.push_back({j->term, j->order, j->weight, j->headlines, 0});
        ++j->term->references;
        post(j->term, &s);
        ++j;
      } else {
        sum.push_back({i->term, i->order, i->weight + j->weight, i->headlines + j->headlines, 0});
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
    s.size += other.size;
    s.first_ms = std::min(s.first_ms, other.first_ms);
    s.last_ms = std::max(s.last_ms, other.last_ms);
    for (auto site : other.sites)
      if (s.sites.size() < max_story_sites &&
          std::find(s.sites.begin(), s.sites.end(), site) == s.sites.end())
        s.sites.push_back(site);
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

  // Live stories sharing a word of `probe` with `v` (what is compared, never listed) that could
  // pass similar()'s tests: those sharing two words or more, those large enough to be named
  // by one word, and (when `v` is a large story, not a headline `joining`) small ones sharing a
  // word that names `v`; in a `thin` stream, any sharing a word. Most live stories are a single
  // headline, so this spares comparing whole vectors with most of them.
  static std::vector<const story*> candidates(const weighted& probe, const story& v, bool joining,
                                              bool thin) {
    std::vector<std::pair<const story*, bool>> listed; // (story, found through a name of v)
    std::size_t postings = 0;
    for (const auto& t : probe)
      postings += t.term->postings.size();
    listed.reserve(postings); // once: grown by doubling, it was most of a headline's allocations
    for (const auto& t : probe) {
      bool names_v = false;
      if (!joining && v.size >= min_named_story) {
        auto in_v = std::lower_bound(v.centroid.begin(), v.centroid.end(), t, by_term);
        names_v = in_v != v.centroid.end() && in_v->term == t.term && names_story(*in_v, v);
      }
      for (const story* s : t.term->postings)
        listed.emplace_back(s, names_v);
    }
    std::sort(listed.begin(), listed.end());
    std::vector<const story*> found;
    found.reserve(listed.size());
    for (auto i = listed.begin(); i != listed.end();) {
      auto run = std::find_if(i, listed.end(), [&](const auto& s) { return s.first != i->first; });
      const bool one_word = thin || i->first->size >= min_named_story || (run - 1)->second;
      if (i->first != &v && (run - i >= 2 || one_word))
        found.push_back(i->first);
      i = run;
    }
    return found;
  }

  // A live story and how close it is to `v`: `score` >= 1 is similar enough.
  struct match {
    std::int64_t id = 0;
    double score = 0;
  };

  // The live stories found through the words of `probe` that pass similar()'s tests, with
  // their scores against `v` (a headline `joining`, as a story of one, or a live story after it
  // grew), the most similar first; ties go to the older story.
  // `thin`: the language's stream is thin around the headline that led here.
  std::vector<match> similar(const weighted& probe, const story& v, bool joining, bool thin) const {
    std::vector<match> found;
    if (v.norm <= 0)
      return found;
    const auto v_size = v.size;
    for (const story* candidate : candidates(probe, v, joining, thin)) {
      const auto& s = *candidate;
      if (s.language != v.language || !near_in_time(v.first_ms, v.last_ms, s.first_ms, s.last_ms))
        continue;
      const auto o = common(v.centroid, s.centroid);
      if (o.shared == 0)
        continue;
      const bool close =
          thin && std::max(v.first_ms - s.last_ms, s.first_ms - v.last_ms) <= close_in_time_ms;
      // A small story meeting a large one is judged as its headlines would be joining it: a
      // headline that came before the story grew could not have joined it then.
      const story* large = nullptr;
      const story* small = nullptr;
      const weighted_term* in_large = nullptr;
      if (joining || (v_size < min_merge_size && s.size >= min_merge_size)) {
        large = &s;
        small = &v;
        in_large = o.in_b;
      } else if (s.size < min_merge_size && v_size >= min_merge_size) {
        large = &v;
        small = &s;
        in_large = o.in_a;
      }
      if (o.shared == 1 && !close && !(large != nullptr && names_story(*in_large, *large)))
        continue;
      const double cosine = s.norm > 0 ? o.dot / (v.norm * s.norm) : 0;
      double needed = large != nullptr                            ? join_threshold(*large)
                      : std::min(s.size, v_size) < min_merge_size ? small_merge_similarity
                                                                  : merge_similarity;
      if (large != nullptr && large->size == 1)
        needed = std::max(needed, pair_similarity);
      if (large != nullptr && same_sites(*small, *large))
        needed *= same_site_factor;
      if (close)
        needed *= thin_stream_factor;
      found.push_back({s.id, cosine / needed});
    }
    std::sort(found.begin(), found.end(), [](const match& a, const match& b) {
      return a.score > b.score || (a.score == b.score && a.id < b.id);
    });
    return found;
  }

  // Whether live stories `a` and `b` have almost nothing in common: two events.
  bool unrelated(std::int64_t a, std::int64_t b) const {
    const auto& x = live.at(a);
    const auto& y = live.at(b);
    if (x.norm <= 0 || y.norm <= 0)
      return true;
    return common(x.centroid, y.centroid).dot / (x.norm * y.norm) < unrelated_similarity;
  }

  // The story a headline with `found` (similar()'s answer) joins: the most similar, unless it
  // is not similar enough or the headline bridges it and an unrelated story (0: none).
  std::int64_t story_to_join(const std::vector<match>& found) const {
    if (found.empty() || found[0].score < 1)
      return 0;
    for (std::size_t k = 1; k < found.size(); ++k)
      if (found[k].score >= ambiguous_fraction * found[0].score &&
          unrelated(found[0].id, found[k].id))
        return 0;
    return found[0].id;
  }

  // Merges the live stories `a` and `b` into the older; returns the survivor.
  std::int64_t merge(std::int64_t a, std::int64_t b) {
    const auto into = std::min(a, b);
    const auto from = std::max(a, b);
    const auto absorbed = live.at(from);
    close(from);
    join(live.at(into), absorbed);
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

  // Whether a second site confirms the bridge between stories `a` and `b` that a headline of
  // `site` makes: two stories of one event are bridged by the headlines of more than one site,
  // while one site alone could steer every other site's stories (joining titles of unrelated
  // events). The first site's bridge is remembered; a later one from another site merges.
  bool confirmed(std::int64_t a, std::int64_t b, std::uint32_t site) {
    const std::pair bridge{std::min(a, b), std::max(a, b)};
    auto [it, first] = pending_bridges.emplace(bridge, site);
    if (first) {
      bridge_order.push_back(bridge);
      if (bridge_order.size() > max_pending_bridges) {
        pending_bridges.erase(bridge_order.front());
        bridge_order.pop_front();
      }
      return false;
    }
    return it->second != site;
  }

  // Merges story `id` with every live story that has come to resemble it (since `headline` of
  // `site` joined it); returns what `id` is now.
  std::int64_t merge_resembling(std::int64_t id, const weighted& headline, std::uint32_t site,
                                bool thin, std::vector<story_merge>& merges) {
    for (;;) {
      // Only what shares words with the headline just joined can have come closer. A story
      // now like two unrelated ones merges with neither, as such a headline joins neither.
      const auto found = similar(headline, live.at(id), false, thin);
      if (story_to_join(found) == 0)
        return id;
      std::int64_t other = 0;
      for (const auto& m : found) {
        if (m.score < 1)
          break;
        if (confirmed(id, m.id, site)) {
          other = m.id;
          break;
        }
      }
      if (other == 0)
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
  const bool thin = s.recent[std::string(headline.language)].thin_at(headline.time_ms,
                                                                     s.limits.quiet_period.count());
  const auto one = s.story_of(headline);
  const auto best = s.story_to_join(s.similar(one.centroid, one, true, thin));
  if (best == 0) {
    // Nothing to compare on (a title of stop words), nothing alike, or two unrelated stories
    // alike: a story of its own.
    s.join(s.open(headline.id, headline.time_ms, headline.language), one);
    return headline.id;
  }
  s.join(s.live.at(best), one);
  return s.merge_resembling(best, one.centroid, site_hash(headline.site), thin, merges);
}

void story_assigner::observe(const story_headline& headline, std::int64_t story) {
  auto& s = *state_;
  s.advance(headline.id);
  s.recent[std::string(headline.language)].thin_at(headline.time_ms, s.limits.quiet_period.count());
  const auto one = s.story_of(headline);
  story = s.resolve(story);
  auto it = s.live.find(story);
  s.join(it != s.live.end() ? it->second : s.open(story, headline.time_ms, headline.language), one);
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
