// The embedded headline store: one SQLite file, for one newsdesk instance (the default; nothing
// else to install or run). See server/news/headline_store.hpp for what a store keeps.
//
// One connection behind one mutex: calls are serialised and block on disk I/O (and on another
// process holding the file's write lock, up to the busy timeout). The file is in WAL mode with
// synchronous=NORMAL: a power cut may lose the last refresh, never corrupt the file. Ids are the
// last one + 1 under the write lock (AUTOINCREMENT's counter, so never reused), and SQLite has one
// writer at a time, so they follow commit order. The story assignment runs under the same mutex.
#pragma once

#include "server/news/headline_store.hpp"

#include <filesystem>
#include <memory>

namespace newsdesk::server {

class sqlite_store final : public headline_store {
 public:
  // The schema this program writes (PRAGMA user_version). Files at a lower version are
  // migrated on open; files at a higher one are refused.
  static constexpr int schema_version = 9;

  // Opens or creates the store at `file` (":memory:" for a private in-memory store), brings its
  // schema to schema_version in one transaction and rebuilds the story assignment. Throws
  // store_error naming the file when it cannot be opened or created, is not an SQLite database,
  // holds tables this program did not create, or has a newer schema version.
  static std::unique_ptr<sqlite_store> open(const std::filesystem::path& file,
                                            store_options options = {});

  ~sqlite_store() override;

  refresh_written record_refresh(std::string_view site,
                                 const std::vector<scrapers::headline>& found,
                                 const refresh_record& record) override;
  void record_failure(std::string_view site, std::string_view error,
                      const refresh_record& record) override;
  std::vector<stored_headline> current(std::string_view site) const override;
  std::vector<site_state> sites() const override;
  std::vector<stored_headline> since(std::int64_t after_id, std::size_t limit) const override;
  std::int64_t last_id() const override;
  std::vector<stored_headline> story_headlines(std::int64_t story,
                                               std::size_t limit) const override;
  std::vector<logged_merge> merges_after(std::int64_t after_seq, std::size_t limit) const override;
  std::int64_t last_merge_seq() const override;
  std::size_t prune(std::int64_t older_than_ms) override;
  std::int64_t pruned_through() const override;
  const std::string& epoch() const override;
  std::string identity_problem() const override;
  // Whether open() made a new file (none was there).
  bool created() const;
  const std::string& location() const override;
  void record_icon(const site_icon& icon) override;
  std::optional<site_icon> icon(std::string_view site) const override;
  std::vector<site_icon> icons() const override;
  std::vector<std::string> record_picture(const stored_picture& picture,
                                          std::size_t site_bytes) override;
  std::optional<stored_picture> picture(std::string_view name) const override;
  std::vector<stored_picture> pictures() const override;

 private:
  struct impl; // sqlite_store_impl.hpp
  explicit sqlite_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace newsdesk::server
