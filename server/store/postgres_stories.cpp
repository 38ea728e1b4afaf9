// The shared store's stories: the catch-up of the story assignment on what every instance
// committed, the merge log and a story's rows (see "Stories" in server/news/headline_store.hpp).
#include "server/store/postgres_store_impl.hpp"

namespace newsdesk::server {

using namespace detail;

namespace {

const std::string replay_period_ms = std::to_string(story_keeper::replay_period.count());

std::vector<logged_merge> merges_of(const result& r) {
  std::vector<logged_merge> out;
  for (int i = 0; i < PQntuples(r.get()); ++i)
    out.push_back({int_at(r, i, 0), {int_at(r, i, 1), int_at(r, i, 2)}});
  return out;
}

} // namespace

void postgres_store::impl::catch_up_stories(PGconn* c) {
  // The newest rows first, so that LIMIT keeps the newest; observed in id order. A rebuild (at
  // open, or after a write that failed) reads up to max_replay_rows: the server's statement
  // timeout bounds it; a catch-up reads what a few writes committed.
  const auto within = keeper.seen_id() == 0 ? long_timeout : timeout;
  auto rows = headlines_of(
      run(c,
          (std::string("SELECT ") + row_columns +
           " FROM headlines WHERE id > $1 AND first_seen_ms >= (SELECT max(first_seen_ms) FROM "
           "headlines) - $2::bigint ORDER BY id DESC LIMIT $3")
              .c_str(),
          {std::to_string(keeper.seen_id()), replay_period_ms,
           std::to_string(store_limits::max_replay_rows)},
          "cannot read headlines for the stories", within));
  std::reverse(rows.begin(), rows.end());
  auto merges = merges_of(run(c,
                              "SELECT seq, from_story, into_story FROM story_merges WHERE seq > $1 "
                              "AND made_ms >= (SELECT max(first_seen_ms) FROM headlines) - "
                              "$2::bigint ORDER BY seq LIMIT $3",
                              {std::to_string(keeper.seen_merge()), replay_period_ms,
                               std::to_string(store_limits::max_replay_rows)},
                              "cannot read the story merges", within));
  keeper.observe(rows, merges);
}

void postgres_store::impl::log_merges(PGconn* c, const std::vector<stories::story_merge>& merges,
                                      std::int64_t now_ms) {
  for (const auto& m : merges) {
    const auto from = std::to_string(m.from), into = std::to_string(m.into);
    run(c, "UPDATE headlines SET story = $2 WHERE story = $1", {from, into},
        "cannot merge stories");
    auto seq = int_at(run(c,
                          "UPDATE newsdesk_meta SET last_merge = last_merge + 1 RETURNING "
                          "last_merge",
                          "cannot advance the merge counter"),
                      0, 0);
    run(c,
        "INSERT INTO story_merges (seq, from_story, into_story, made_ms) VALUES ($1, $2, $3, $4)",
        {std::to_string(seq), from, into, std::to_string(now_ms)}, "cannot log a story merge");
    keeper.logged(seq);
  }
}

std::vector<stored_headline> postgres_store::story_headlines(std::int64_t story,
                                                             std::size_t limit) const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    return headlines_of(d.run(
        c,
        (std::string("SELECT ") + row_columns +
         " FROM headlines WHERE story = $1 ORDER BY first_seen_ms DESC, id "
         "LIMIT $2")
            .c_str(),
        {std::to_string(story), std::to_string(std::min(limit, store_limits::max_story_rows))},
        "cannot read a story"));
  });
}

std::vector<logged_merge> postgres_store::merges_after(std::int64_t after_seq,
                                                       std::size_t limit) const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    return merges_of(d.run(c,
                           "SELECT seq, from_story, into_story FROM story_merges WHERE seq > $1 "
                           "ORDER BY seq LIMIT $2",
                           {std::to_string(after_seq), std::to_string(limit)},
                           "cannot read the story merges"));
  });
}

std::int64_t postgres_store::last_merge_seq() const {
  auto& d = *impl_;
  return d.with_connection([&](PGconn* c) {
    return int_at(d.run(c, "SELECT last_merge FROM newsdesk_meta", "cannot read the last merge"), 0,
                  0);
  });
}

} // namespace newsdesk::server
