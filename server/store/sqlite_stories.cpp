// The SQLite store's stories: the catch-up of the story assignment, the merge log and a story's
// rows (see "Stories" in server/news/headline_store.hpp).
#include "server/store/sqlite_store_impl.hpp"

#include <algorithm>

namespace newsdesk::server {

namespace {

constexpr auto replay_period_ms = static_cast<std::int64_t>(story_keeper::replay_period.count());

} // namespace

void sqlite_store::impl::prepare_stories() {
  // The newest rows first, so that LIMIT keeps the newest; the caller puts them back in id order.
  prepare(select_replay, std::string("SELECT ") + row_columns +
                             " FROM headlines WHERE id > ?1 AND first_seen_ms >= (SELECT "
                             "max(first_seen_ms) FROM headlines) - ?2 ORDER BY id DESC LIMIT ?3");
  prepare(select_replay_merges,
          "SELECT seq, from_story, into_story FROM story_merges WHERE seq > ?1 AND made_ms >= "
          "(SELECT max(first_seen_ms) FROM headlines) - ?2 ORDER BY seq LIMIT ?3");
  prepare(move_story, "UPDATE headlines SET story = ?2 WHERE story = ?1");
  prepare(insert_merge,
          "INSERT INTO story_merges (from_story, into_story, made_ms) VALUES (?1, ?2, ?3)");
  prepare(select_story, std::string("SELECT ") + row_columns +
                            " FROM headlines WHERE story = ?1 ORDER BY first_seen_ms DESC, id "
                            "LIMIT ?2");
  prepare(select_merges_after, "SELECT seq, from_story, into_story FROM story_merges WHERE seq > "
                               "?1 ORDER BY seq LIMIT ?2");
  prepare(select_last_merge, "SELECT seq FROM sqlite_sequence WHERE name = 'story_merges'");
  prepare(delete_old_merges, "DELETE FROM story_merges WHERE made_ms < (SELECT "
                             "max(first_seen_ms) FROM headlines) - ?1");
}

std::vector<logged_merge> sqlite_store::impl::logged_merges(use& u) {
  std::vector<logged_merge> out;
  while (step(u.stmt, "cannot read the story merges"))
    out.push_back({sqlite3_column_int64(u.stmt, 0),
                   {sqlite3_column_int64(u.stmt, 1), sqlite3_column_int64(u.stmt, 2)}});
  return out;
}

void sqlite_store::impl::catch_up_stories() {
  std::vector<stored_headline> fresh;
  {
    use u(select_replay);
    bind(u.stmt, 1, keeper.seen_id());
    bind(u.stmt, 2, replay_period_ms);
    bind(u.stmt, 3, static_cast<std::int64_t>(store_limits::max_replay_rows));
    fresh = rows(u, "cannot read headlines for the stories");
  }
  std::reverse(fresh.begin(), fresh.end());
  use u(select_replay_merges);
  bind(u.stmt, 1, keeper.seen_merge());
  bind(u.stmt, 2, replay_period_ms);
  bind(u.stmt, 3, static_cast<std::int64_t>(store_limits::max_replay_rows));
  keeper.observe(fresh, logged_merges(u));
}

void sqlite_store::impl::log_merges(const std::vector<stories::story_merge>& merges,
                                    std::int64_t now_ms) {
  for (const auto& m : merges) {
    {
      use u(move_story);
      bind(u.stmt, 1, m.from);
      bind(u.stmt, 2, m.into);
      step(u.stmt, "cannot merge stories");
    }
    use u(insert_merge);
    bind(u.stmt, 1, m.from);
    bind(u.stmt, 2, m.into);
    bind(u.stmt, 3, now_ms);
    step(u.stmt, "cannot log a story merge");
    keeper.logged(sqlite3_last_insert_rowid(db));
  }
}

std::vector<stored_headline> sqlite_store::story_headlines(std::int64_t story,
                                                           std::size_t limit) const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::use u(d.select_story);
  d.bind(u.stmt, 1, story);
  d.bind(u.stmt, 2, static_cast<std::int64_t>(std::min(limit, store_limits::max_story_rows)));
  return d.rows(u, "cannot read a story");
}

std::vector<logged_merge> sqlite_store::merges_after(std::int64_t after_seq,
                                                     std::size_t limit) const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::use u(d.select_merges_after);
  d.bind(u.stmt, 1, after_seq);
  d.bind(u.stmt, 2, static_cast<std::int64_t>(limit));
  return d.logged_merges(u);
}

std::int64_t sqlite_store::last_merge_seq() const {
  auto& d = *impl_;
  std::lock_guard lock(d.mutex);
  impl::use u(d.select_last_merge);
  return d.step(u.stmt, "cannot read the last merge") ? sqlite3_column_int64(u.stmt, 0) : 0;
}

} // namespace newsdesk::server
